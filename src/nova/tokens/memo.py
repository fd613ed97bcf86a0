"""Counting each text and each message once, however often the same history is measured.

Before every call the same history is measured again (the compaction decision, the context figure, the
cache plan), and it only grows. `MemoCounter` remembers the count of each text it has seen; it is
bounded, and drops its least recently used half when full rather than emptying itself (an emptied memo
made every call past its size count the whole history again). `MessageTotals` keeps running totals
over the last list of messages it measured, so a sum over a history that grew by one turn costs the
new messages, not the history. `MemoCounter.count_message` also remembers each message's count, so the
consumers that share a counter (the ledger, the cache plan, the context compiler) count a message once
between them: `message_sizer(counter)` hands each of them that shared count, or a private memo for
any other counter.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from nova.history.incremental import GenerationalMemo, LastSeen, MessageMemo
from nova.messages import Message
from nova.tokens.counters import TokenCounter
from nova.tokens.sizing import count_message

__all__ = ["MemoCounter", "MessageTotals", "message_sizer"]


class MemoCounter:
    """Wraps a counter and remembers its counts by text (at most `limit` texts). Same counts, same
    overheads as the counter it wraps."""

    def __init__(self, inner: TokenCounter, limit: int = 50_000, *, messages_limit: int = 250_000) -> None:
        self.inner = inner
        self.overheads = inner.overheads
        self._memo: GenerationalMemo[str, int] = GenerationalMemo(limit)
        # Large enough that a whole long history fits in one generation: the first call after a resume
        # counts it once for every consumer.
        self._messages: MessageMemo[int] = MessageMemo(self._count_message, limit=messages_limit)

    @property
    def remembered(self) -> int:
        """How many texts the memo holds. (Not `__len__`: an empty counter must not be falsy, callers
        write `counter or default`.)"""
        return len(self._memo)

    def count(self, text: str) -> int:
        value = self._memo.get(text)
        if value is None:
            value = self.inner.count(text)
            self._memo.put(text, value)
        return value

    def count_message(self, message: Message) -> int:
        """`count_message(message, self)`, once per message version."""
        return self._messages.get(message)

    def _count_message(self, message: Message) -> int:
        return count_message(message, self)

    def __repr__(self) -> str:
        return f"MemoCounter({self.inner!r})"


def message_sizer(counter: TokenCounter) -> Callable[[Message], int]:
    """`count_message(message, counter)`, each message version counted once: shared by everyone who
    counts with the same `MemoCounter`, private otherwise."""
    if isinstance(counter, MemoCounter):
        return counter.count_message
    return MessageMemo(lambda message: count_message(message, counter)).get


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
