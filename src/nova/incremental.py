"""Building blocks for per-call work that follows what changed in history, not how long it is.

History is append-only between compactions: each call sends what the previous call sent plus a few new
messages. Two things change that: a snip replaces an old message with a new version under the same id
(messages are frozen, so the list gets a new object), and a compaction replaces the head of history. So
every incremental consumer (pairing check, cache plan, cache-break diagnosis, token totals) keeps a
mirror of the list it last saw, finds where the new list departs from it with `follow`, and redoes only
the part after that point.

Finding the point must not cost a Python step per message, and not even touch every message: history
objects lie scattered in memory, and copying a 100,000-message list (which increments every object's
reference count) takes about 0.5 ms, while comparing two lists of the same length that hold the same
objects only compares pointers (about 0.06 ms). So `follow` finds where the two lists differ in their
last stretch (an appended turn, a view whose last few messages moved), makes the mirror hold the new
list from there and compares whole lists once to confirm the rest is shared; only a departure deep
inside (a snip, a compaction) falls back to `common_prefix`, which compares slices block by block.

What a consumer works out per message (a token count, a digest) goes in a `MessageMemo`: keyed by the
message id and checked against the message itself, so a snipped version with the same id is worked out
again and a message moved by a compaction is not. Every memo here is bounded by `GenerationalMemo`,
which never empties itself all at once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

from nova.messages import Message

__all__ = ["GenerationalMemo", "MessageMemo", "common_prefix", "follow"]

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
