"""The usage anchor and the one context-size figure (TOK-1..3).

The provider's reported input of the latest call already covers the system prompt, tool schemas and the
cached prefix exactly; only what was added after that call's reply is estimated. The reply itself is
counted from the call's real output tokens. `TokenLedger.estimate` is the single figure the compaction
decision, the `/context` endpoint, the TUI bar and the web page all read, so they cannot disagree (TOK-3).

A ledger measures the same growing history before every call, so it counts each message once
(`message_sizer`: shared with the other consumers of a `MemoCounter`) and sums through running totals (`MessageTotals`): the figure costs what was added since
the last one, not the length of history, and is always what `estimate_context_tokens` would say.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

from nova.core import ToolSpec, Usage
from nova.messages import Message
from nova.tokens.counters import CL100K_PROFILE, HeuristicCounter, TokenCounter
from nova.tokens.memo import MessageTotals, message_sizer
from nova.tokens.sizing import count_messages, count_system, count_tools

__all__ = ["Anchor", "TokenLedger", "anchor_from_usage", "context_percent", "estimate_context_tokens"]


@dataclass(frozen=True, slots=True)
class Anchor:
    """The real figures of the latest assistant call: `context_tokens` is everything the provider read
    (`Usage.context_tokens`), `output_tokens` the part of its reply that goes back as input next time."""

    message_id: str
    context_tokens: int
    output_tokens: int

    @property
    def total(self) -> int:
        return self.context_tokens + self.output_tokens


def anchor_from_usage(message_id: str, usage: Usage, *, reasoning_replayed: bool = False) -> Anchor:
    """Reasoning tokens are billed as output but, unless thinking blocks are sent back (Anthropic within
    a tool loop), never reach the next request; counting them would overstate the next call by as much
    as a few hundred tokens (measured on the Gemini trajectories)."""
    output = usage.output_tokens
    if not reasoning_replayed:
        output -= min(usage.reasoning_tokens, output)
    return Anchor(message_id, usage.context_tokens, output)


def _default_counter() -> TokenCounter:
    return HeuristicCounter(CL100K_PROFILE)


def _anchor_index(messages: Sequence[Message], message_id: str) -> int:
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].id == message_id:
            return index
    return -1


def estimate_context_tokens(
    messages: Sequence[Message],
    *,
    anchor: Anchor | None,
    system: str = "",
    tools: Sequence[ToolSpec] = (),
    counter: TokenCounter | None = None,
) -> int:
    """Tokens the next request will take (TOK-1): the anchor plus an estimate of the messages after the
    anchor's message. Without an anchor, or when its message is no longer in `messages` (compacted or
    edited away), everything is estimated, system prompt and tool declarations included."""
    counter = counter or _default_counter()
    index = _anchor_index(messages, anchor.message_id) if anchor is not None else -1
    if anchor is not None and index >= 0:
        return anchor.total + count_messages(messages[index + 1 :], counter)
    return count_system(system, counter) + count_tools(tools, counter) + count_messages(messages, counter)


def context_percent(used: int, threshold: int) -> float:
    """Share of the compaction threshold in use, in percent (CMP-11: 100 exactly at the trigger, may
    exceed it). One decimal, as every surface shows it."""
    if threshold <= 0:
        return 100.0 if used > 0 else 0.0
    return round(max(used, 0) * 100.0 / threshold, 1)


# Up to this many messages after the anchor are summed one by one (cheaper than updating the running
# totals, which compare the whole list); a longer tail goes through the totals.
_DIRECT_TAIL = 64


class TokenLedger:
    """Holds the anchor of one session's working history and answers "how big is the context now".

    `record` whenever an assistant message enters history with real usage (TOK-2); `clear` after a
    successful compaction, so the estimate is a full one until the next real figure arrives.
    """

    def __init__(self, counter: TokenCounter | None = None):
        self.counter: TokenCounter = counter or _default_counter()
        self._anchor: Anchor | None = None
        self._lock = threading.Lock()
        self._sized_with = self.counter
        self._size = message_sizer(self.counter)
        self._totals = MessageTotals(self._size)

    def _sizes_valid(self) -> None:
        if self.counter is not self._sized_with:  # another counter measures differently: start over
            self._sized_with = self.counter
            self._size = message_sizer(self.counter)
            self._totals = MessageTotals(self._size)

    @property
    def anchor(self) -> Anchor | None:
        return self._anchor

    def record(self, message_id: str, usage: Usage, *, reasoning_replayed: bool = False) -> Anchor | None:
        """Anchor on this assistant message. A usage with no input figure (a provider that reported
        nothing) is not a real figure: the previous anchor stays."""
        if usage.context_tokens <= 0:
            return self._anchor
        anchor = anchor_from_usage(message_id, usage, reasoning_replayed=reasoning_replayed)
        with self._lock:
            self._anchor = anchor
        return anchor

    def clear(self) -> None:
        with self._lock:
            self._anchor = None

    def estimate(self, messages: Sequence[Message], system: str = "", tools: Sequence[ToolSpec] = ()) -> int:
        """`estimate_context_tokens` with this ledger's anchor and counter, each message counted once."""
        self._sizes_valid()
        anchor = self._anchor
        index = _anchor_index(messages, anchor.message_id) if anchor is not None else -1
        if anchor is not None and index >= 0:
            if len(messages) - index - 1 <= _DIRECT_TAIL:
                return anchor.total + sum(self._size(m) for m in messages[index + 1 :])
            return anchor.total + self._totals.sum(messages, index + 1)
        return count_system(system, self.counter) + count_tools(tools, self.counter) + self._totals.sum(messages)

    def estimate_message(self, message: Message) -> int:
        """The estimate of one message (what appending it would add)."""
        self._sizes_valid()
        return self._size(message)
