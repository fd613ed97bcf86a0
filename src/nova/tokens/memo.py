"""Counting each text and each message once, however often the same history is measured.

Before every call the same history is measured again (the compaction decision, the context figure, the
cache plan), and it only grows. `MemoCounter` remembers the count of each text it has seen; it is
bounded, and drops its least recently used half when full rather than emptying itself (an emptied memo
made every call past its size count the whole history again). `MessageTotals` keeps running totals
over the last list of messages it measured, so a sum over a history that grew by one turn costs the
new messages, not the history.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from nova.incremental import GenerationalMemo, LastSeen
from nova.messages import Message
from nova.tokens.counters import TokenCounter

__all__ = ["MemoCounter", "MessageTotals"]


class MemoCounter:
    """Wraps a counter and remembers its counts by text (at most `limit` texts). Same counts, same
    overheads as the counter it wraps."""

    def __init__(self, inner: TokenCounter, limit: int = 50_000) -> None:
        self.inner = inner
        self.overheads = getattr(inner, "overheads", None)
        self._memo: GenerationalMemo[str, int] = GenerationalMemo(limit)

    def __len__(self) -> int:
        return len(self._memo)

    def count(self, text: str) -> int:
        value = self._memo.get(text)
        if value is None:
            value = self.inner.count(text)
            self._memo.put(text, value)
        return value

    def __repr__(self) -> str:
        return f"MemoCounter({self.inner!r})"


class MessageTotals:
    """Sums of a per-message size over message lists that mostly extend one another.

    It keeps the list it last summed and the running total at each position; a new list is compared
    with it (`LastSeen`) and only the messages after the first difference are sized and added.
    `size` must depend on the message alone (memoize it per message: after a compaction or a snip the
    rest of the list is summed again). Safe to call from several threads."""

    def __init__(self, size: Callable[[Message], int]) -> None:
        self.size = size
        self._messages = LastSeen()
        self._running: list[int] = [0]
        self._lock = threading.Lock()

    def sum(self, messages: Sequence[Message], start: int = 0) -> int:
        """The sum of `size` over `messages[start:]`."""
        with self._lock:
            shared = self._messages.update(messages)
            del self._running[shared + 1 :]
            total = self._running[-1]
            for message in messages[shared:]:
                total += self.size(message)
                self._running.append(total)
            start = min(max(start, 0), len(messages))
            return self._running[len(messages)] - self._running[start]
