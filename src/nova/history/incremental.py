"""Building blocks for per-call work that follows what changed in history, not how long it is.

History is append-only between compactions: each call sends what the previous call sent plus a few new
messages. Two things change that: a snip replaces an old message with a new version under the same id
(messages are frozen, so the list gets a new object), and a compaction replaces the head of history. So
every incremental consumer (pairing check, cache plan, cache-break diagnosis, token totals, the context
compiler) keeps what it last saw (`LastSeen`, or a mirror list and `follow`), finds where the new
sequence departs from it, and redoes only the part after that point: the new messages of a turn, the
messages after a snip, the whole (short) history after a compaction.

Finding the point must not cost a Python step per message, and not even touch every message: history
objects lie scattered in memory, and copying a 100,000-message list (which increments every object's
reference count) takes about 0.5 ms, while comparing two lists of the same length that hold the same
objects only compares pointers (about 0.06 ms). So `follow` finds where the two lists differ in their
last stretch (an appended turn, a view whose last few messages moved), makes the mirror hold the new
list from there and compares whole lists once to confirm the rest is shared; only a departure deep
inside (a snip, a compaction) falls back to `common_prefix`, which compares slices block by block.

A view sent to the model is a new sequence every call, and building it as a list would itself be a pass
over the whole history. So the context compiler builds views as `MessageBlocks`: full blocks of
`BLOCK_SIZE` messages, immutable tuples shared from one view to the next, plus a short tail. Making a
view costs its tail; `LastSeen` tells how far a new view repeats the last one by comparing blocks (the
same tuple is the same messages) and then the tails.

What a consumer works out per message (a token count, a digest) goes in a `MessageMemo`: keyed by the
message id and checked against the message itself, so a snipped version with the same id is worked out
again and a message moved by a compaction is not. Every memo here is bounded by `GenerationalMemo`,
which never empties itself all at once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from itertools import chain
from typing import Any, Generic, TypeVar, overload

from nova.messages import Message

__all__ = ["BLOCK_SIZE", "GenerationalMemo", "LastSeen", "MessageBlocks", "MessageMemo", "common_prefix", "follow"]

K = TypeVar("K")
V = TypeVar("V")

# Where the full comparison fails, the first difference is searched block by block: each block is one
# C-level comparison, so finding it costs len/_BLOCK Python steps.
_BLOCK = 2048


def _same(before: Sequence[Any], after: Sequence[Any], start: int, end: int) -> bool:
    a, b = before[start:end], after[start:end]
    if type(a) is not type(b):  # a list never equals a tuple, whatever it holds
        return tuple(a) == tuple(b)
    return bool(a == b)


def common_prefix(before: Sequence[Any], after: Sequence[Any]) -> int:
    """The length of the longest common prefix of two sequences (elements compared with `==`, identity
    first). The usual case, `after` extending `before`, is a single C-level comparison."""
    n = min(len(before), len(after))
    if n == 0 or _same(before, after, 0, n):
        return n
    start = 0
    while start < n and _same(before, after, start, min(start + _BLOCK, n)):
        start += _BLOCK
    for index in range(start, min(start + _BLOCK, n)):
        if not (before[index] is after[index] or before[index] == after[index]):
            return index
    return n  # not reached: the block above held a difference


# How far back from the shorter end `follow` looks for the departure before comparing whole lists: an
# appended turn, a view whose last few messages moved, a long tool loop. Past it, it searches from the start.
_TAIL = 1024


def follow(mirror: list[Any], new: Sequence[Any]) -> int:
    """Make `mirror` equal to `new` (same elements) and return the length of the prefix the old `mirror`
    shared with `new` (`common_prefix`). When the departure is near the end, this costs one pointer
    comparison of the two lists (no copy of either) plus work on the changed part."""
    old_length, length = len(mirror), len(new)
    if isinstance(new, list):
        end = min(old_length, length)
        start = max(end - _TAIL, 0)
        guess = end
        if mirror[start:end] != new[start:end]:  # the departure is in the tail: find it
            guess = next(i for i in range(start, end) if not (mirror[i] is new[i] or mirror[i] == new[i]))
        saved = mirror[guess:]
        del mirror[guess:]
        mirror.extend(new[guess:])
        if mirror == new:  # everything before `guess` is shared too
            return guess
        del mirror[guess:]
        mirror.extend(saved)
    shared = common_prefix(mirror, new)
    del mirror[shared:]
    mirror.extend(new[shared:])
    return shared


BLOCK_SIZE = 1024


class MessageBlocks(Sequence[Message]):
    """An immutable sequence of messages made of full blocks of `BLOCK_SIZE` messages and a tail.

    Consecutive views of a growing history share their full blocks (the same tuple objects), so a new
    view costs its tail and a pointer per block, and two views are compared block by block. It reads
    like any sequence (indexes, slices as lists, iteration, `==` against any sequence of messages)."""

    __slots__ = ("_length", "blocks", "tail")

    def __init__(self, blocks: tuple[tuple[Message, ...], ...] = (), tail: tuple[Message, ...] = ()) -> None:
        if any(len(block) != BLOCK_SIZE for block in blocks):
            raise ValueError(f"every block holds exactly {BLOCK_SIZE} messages")
        self.blocks = blocks
        self.tail = tail
        self._length = len(blocks) * BLOCK_SIZE + len(tail)

    def __len__(self) -> int:
        return self._length

    @overload
    def __getitem__(self, index: int) -> Message: ...

    @overload
    def __getitem__(self, index: slice) -> list[Message]: ...

    def __getitem__(self, index: int | slice) -> Message | list[Message]:
        if isinstance(index, slice):
            return self._slice(index)
        if index < 0:
            index += self._length
        if not 0 <= index < self._length:
            raise IndexError("message index out of range")
        full = len(self.blocks) * BLOCK_SIZE
        if index >= full:
            return self.tail[index - full]
        block, offset = divmod(index, BLOCK_SIZE)
        return self.blocks[block][offset]

    def _slice(self, index: slice) -> list[Message]:
        start, stop, step = index.indices(self._length)
        if step != 1:
            return list(self)[index]
        out: list[Message] = []
        full = len(self.blocks) * BLOCK_SIZE
        position = start
        while position < stop:
            if position >= full:
                out.extend(self.tail[position - full : stop - full])
                break
            block, offset = divmod(position, BLOCK_SIZE)
            taken = self.blocks[block][offset : offset + stop - position]
            out.extend(taken)
            position += len(taken)
        return out

    def __iter__(self) -> Iterator[Message]:
        return chain(chain.from_iterable(self.blocks), self.tail)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, MessageBlocks):
            return len(self) == len(other) and common_prefix(self, other) == len(self)
        if isinstance(other, list | tuple):
            return len(self) == len(other) and all(a is b or a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"MessageBlocks({len(self.blocks)} blocks, {len(self.tail)} in the tail)"


def _first_difference(before: tuple[Any, ...], after: tuple[Any, ...]) -> int:
    """The length of the common prefix of two tuples, by bisection over C-level prefix comparisons."""
    low, high = 0, min(len(before), len(after))  # the prefix is at least `low` and at most `high` long
    while low < high:
        middle = (low + high + 1) // 2
        if before[low:middle] == after[low:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def _blocks_prefix(before: MessageBlocks, after: MessageBlocks) -> int:
    shared, differs = 0, False
    for old, new in zip(before.blocks, after.blocks, strict=False):
        if not (old is new or old == new):
            differs = True
            break
        shared += 1
    start = shared * BLOCK_SIZE
    # What is left to compare: the block where they differ, or else what follows the shorter run of
    # blocks (a tail).
    rest = min(len(before), len(after)) - start
    if differs:
        rest = min(rest, BLOCK_SIZE)
    old_rest, new_rest = tuple(before[start : start + rest]), tuple(after[start : start + rest])
    return start + _first_difference(old_rest, new_rest)


class LastSeen:
    """The sequence of messages a consumer last worked on, and how much of a new one repeats it.

    A `MessageBlocks` is kept as it is (it never changes) and compared block by block; any other
    sequence is mirrored in a private list (`follow`). `items` is the last sequence, to read from."""

    def __init__(self) -> None:
        self.items: Sequence[Message] = ()
        self._mirror: list[Message] | None = None

    def update(self, new: Sequence[Message]) -> int:
        """Take `new` as the last sequence; return the length of the prefix it shares with the previous one."""
        old = self.items
        if isinstance(new, MessageBlocks):
            shared = _blocks_prefix(old, new) if isinstance(old, MessageBlocks) else common_prefix(old, new)
            self.items, self._mirror = new, None
            return shared
        mirror = self._mirror if self._mirror is not None else list(old)
        shared = follow(mirror, new)
        self.items = self._mirror = mirror
        return shared


_MISSING: Any = object()


class GenerationalMemo(Generic[K, V]):
    """A bounded memo that never empties itself all at once.

    Two generations of at most `limit // 2` entries each: new entries go to the young one; when it is
    full it becomes the old one and the previous old one is dropped. A hit in the old generation moves
    the entry back to the young one, so whatever was used during the last generation survives a
    rotation. Lookups are plain dict lookups (cheaper than an LRU's reordering on every hit)."""

    def __init__(self, limit: int = 100_000) -> None:
        if limit < 2:
            raise ValueError("limit must be at least 2")
        self.limit = limit
        self._half = limit // 2
        self._young: dict[K, V] = {}
        self._old: dict[K, V] = {}

    def __len__(self) -> int:
        return len(self._young) + len(self._old)

    def get(self, key: K) -> V | None:
        value = self._young.get(key, _MISSING)
        if value is _MISSING:
            value = self._old.pop(key, _MISSING)
            if value is _MISSING:
                return None
            self.put(key, value)
        result: V = value
        return result

    def put(self, key: K, value: V) -> None:
        young = self._young
        if key not in young and len(young) >= self._half:
            self._old, self._young = young, {}
            young = self._young
        young[key] = value

    def clear(self) -> None:
        self._young, self._old = {}, {}


class MessageMemo(Generic[V]):
    """One computed value per message version: keyed by the message id, valid while the message is the
    same object or an equal one (a snip makes a new version under the same id, which is computed anew).
    The memo keeps a reference to the message it computed for, so a recycled `id()` can never alias."""

    def __init__(self, compute: Callable[[Message], V], *, limit: int = 100_000) -> None:
        self.compute = compute
        self._memo: GenerationalMemo[str, tuple[Message, V]] = GenerationalMemo(limit)

    def __len__(self) -> int:
        return len(self._memo)

    def get(self, message: Message) -> V:
        entry = self._memo.get(message.id)
        if entry is not None and (entry[0] is message or entry[0] == message):
            return entry[1]
        value = self.compute(message)
        self._memo.put(message.id, (message, value))
        return value

    def clear(self) -> None:
        self._memo.clear()
