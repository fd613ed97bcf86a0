"""`Mirror`: follows a framework's message history in Nova's message model and renders Nova's view back.

The framework keeps its own history, whole: it is the raw record, and nothing here rewrites it. The
mirror remembers which framework items each Nova message was made from. Before every call it finds what
is new (the longest prefix of the framework's list it has already seen, by identity first and equality
second, since some frameworks rebuild their items between calls), converts it with the adapter's
`Codec` and hands it to the engine. A view is rendered message by message:

- a message the controller left as it was: the framework's own items, untouched (ids, signatures and
  provider details go back byte-identical);
- a message it rewrote (a spilled or snipped tool output, a message cut to fit): the original items with
  the changed contents (`Codec.rewrite`), so each tool call keeps its result and its call id;
- a message Nova wrote (a compaction summary, the pinned task state): a new user message (`Codec.insert`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Generic, Protocol, TypeVar

from nova.integrations._engine import ContextEngine
from nova.messages import Message

__all__ = ["Codec", "Mirror", "shared_prefix"]

T = TypeVar("T")


class Codec(Protocol[T]):
    """How one framework's items become Nova messages and back."""

    def to_nova(self, items: Sequence[T]) -> list[tuple[Message, tuple[T, ...]]]:
        """Complete messages for `items`, each with the items it was made from, in order."""
        ...

    def rewrite(self, items: tuple[T, ...], message: Message) -> list[T]:
        """`items` carrying the contents of `message`, a rewritten version of what they were made from."""
        ...

    def insert(self, message: Message) -> list[T]:
        """Items for a message Nova added to the view."""
        ...

    def same(self, a: T, b: T) -> bool:
        """Whether two items are the same item (the framework may have rebuilt it)."""
        ...


def shared_prefix(seen: Sequence[T], items: Sequence[T], same: Callable[[T, T], bool]) -> int:
    """How many leading items of `items` are the items of `seen`. Usually all of them, which one list
    comparison settles (identical items compare at C speed); otherwise item by item."""
    limit = min(len(seen), len(items))
    head = seen if len(seen) == limit and isinstance(seen, list) else list(seen[:limit])
    if head == (items if len(items) == limit and isinstance(items, list) else list(items[:limit])):
        return limit
    for index in range(limit):
        if seen[index] is not items[index] and not same(seen[index], items[index]):
            return index
    return limit


class Mirror(Generic[T]):
    def __init__(self, engine: ContextEngine, codec: Codec[T]) -> None:
        self.engine = engine
        self.codec = codec
        self._seen: list[T] = []
        self._origins: dict[str, tuple[Message, tuple[T, ...]]] = {}
        self._last_render: tuple[list[Message], list[T], list[int]] = ([], [], [])
        self._ends: list[tuple[int, str]] = []
        """(index just past its last item, message id) of each message made, in order."""

    @property
    def seen(self) -> int:
        return len(self._seen)

    def follow(self, items: Sequence[T]) -> None:
        """Take in the framework's history as it is now: what was appended, what was taken off its end
        (a session's `pop_item`), or, when it no longer continues at all, all of it anew."""
        shared = self._shared_prefix(items)
        if shared == len(items) < len(self._seen):
            self._truncate(shared)
        elif shared < len(self._seen):
            groups = self.codec.to_nova(items)
            self._origins = {m.id: (m, group) for m, group in groups}
            self._ends = []
            self.engine.reset([m for m, _ in groups])
            self._note_ends(groups, 0)
        else:
            self._take(items[shared:], shared)
        self._seen = list(items)

    def _take(self, items: Sequence[T], start: int) -> None:
        groups = self.codec.to_nova(items)
        for message, group in groups:
            self._origins[message.id] = (message, group)
        self.engine.add_all([message for message, _ in groups])
        self._note_ends(groups, start)

    def _note_ends(self, groups: Sequence[tuple[Message, tuple[T, ...]]], start: int) -> None:
        end = start
        for message, group in groups:
            end += len(group)
            self._ends.append((end, message.id))

    def _truncate(self, keep: int) -> None:
        """The last items are gone: their messages leave the working history; a message made of items on
        both sides of the cut is made again from the items that stay."""
        dropped: list[str] = []
        while self._ends and self._ends[-1][0] > keep:
            dropped.append(self._ends.pop()[1])
        self.engine.drop(dropped)
        start = self._ends[-1][0] if self._ends else 0
        if start < keep:
            self._take(self._seen[start:keep], start)

    def _shared_prefix(self, items: Sequence[T]) -> int:
        return shared_prefix(self._seen, items, self.codec.same)

    def render(self, messages: Sequence[Message]) -> list[T]:
        """The framework's items for a view. Consecutive views share their first messages (the same
        objects, until a compaction): what the last render made of those is reused, so a call renders only
        what is new."""
        current = list(messages)
        previous, rendered, ends = self._last_render
        shared = shared_prefix(previous, current, _never)
        kept = ends[shared - 1] if shared else 0
        # Usually the view only grew: the last render's lists are extended in place.
        out: list[T] = rendered if kept == len(rendered) else rendered[:kept]
        if shared < len(ends):
            ends = ends[:shared]
        for message in current[shared:]:
            origin = self._origins.get(message.id)
            if origin is None:
                out.extend(self.codec.insert(message))
            elif origin[0] is message:
                out.extend(origin[1])
            else:
                out.extend(self.codec.rewrite(origin[1], message))
            ends.append(len(out))
        self._last_render = (current, out, ends)
        return list(out)


def _never(a: object, b: object) -> bool:
    """Messages are the same only when they are the same object (a rewrite is a new one)."""
    return False
