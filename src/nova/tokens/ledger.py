"""The usage anchor and the one context-size figure (TOK-1..3).

The provider's reported input of the latest call already covers the system prompt, tool schemas and the
cached prefix exactly; only what was added after that call's reply is estimated. The reply itself is
counted from the call's real output tokens. `TokenLedger.estimate` is the single figure the compaction
decision, the `/context` endpoint, the TUI bar and the web page all read, so they cannot disagree (TOK-3).

A ledger measures the same growing history before every call, so it counts each message once
(`message_sizer`: shared with the other consumers of a `MemoCounter`) and sums through running totals (`MessageTotals`): the figure costs what was added since
the last one, not the length of history, and is always what `estimate_context_tokens` would say plus
the learned allowance below.

The anchored figure also carries what each call grows beyond what the counter can see (a harness's
unrecorded content, a tokenizer that runs above its profile in this session): the ledger learns it from
the real usage of the calls already answered (`nova.tokens.allowance`) and adds it to the estimate of
the next call's growth, so a compaction trigger does not come late by that much every step.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass

from nova.messages import Message, TextPart, ThinkingPart
from nova.model import ToolSpec, Usage, usage_of
from nova.tokens.allowance import GrowthAllowance
from nova.tokens.counters import CL100K_PROFILE, HeuristicCounter, TokenCounter
from nova.tokens.memo import MessageTotals, message_sizer
from nova.tokens.sizing import count_messages, count_system, count_tools

__all__ = [
    "GROWTH_METADATA",
    "Anchor",
    "TokenLedger",
    "anchor_from_usage",
    "context_percent",
    "estimate_context_tokens",
    "opens_turn",
    "reasoning_goes_back",
    "thinking_kept",
    "turn_drops_reasoning",
]

# The metadata key under which a reply carries what its session's ledger had learned once it was
# recorded (`TokenLedger.growth.samples`), so a resumed session or `nova context` starts from exactly that.
GROWTH_METADATA = "growth_samples"


@dataclass(frozen=True, slots=True)
class Anchor:
    """The real figures of the latest assistant call: `context_tokens` is everything the provider read
    (`Usage.context_tokens`), `output_tokens` the part of its reply that goes back as input next time."""

    message_id: str
    context_tokens: int
    output_tokens: int
    # The reasoning tokens of this turn's replies, this one's included, that went back as input within
    # the turn (`reasoning_goes_back`) and are part of what the next request carries while the turn
    # goes on; a reply that ends the turn drops them (`TokenLedger.record`), and so does a request whose
    # messages after this one open a new turn (`opens_turn`). 0 for a model that keeps its thinking.
    turn_reasoning: int = 0

    @property
    def total(self) -> int:
        return self.context_tokens + self.output_tokens

    def carried_into(self, messages: Sequence[Message], start: int, end: int | None = None) -> int:
        """What of `total` a request holds whose messages after the anchor's are `messages[start:end]`:
        all of it while the turn goes on, less the turn's reasoning once they open a new turn."""
        if self.turn_reasoning and opens_turn(messages[start:end]):
            return self.total - self.turn_reasoning
        return self.total


def anchor_from_usage(message_id: str, usage: Usage, *, reasoning_replayed: bool = False) -> Anchor:
    """Reasoning tokens are billed as output but, unless the reasoning is sent back
    (`reasoning_goes_back`), never reach the next request; counting them would overstate the next call by
    as much as a few hundred tokens (measured on the Gemini trajectories)."""
    output = usage.output_tokens
    if not reasoning_replayed:
        output -= min(usage.reasoning_tokens, output)
    return Anchor(message_id, usage.context_tokens, output)


def thinking_kept(model: str) -> bool:
    """Whether a reply's thinking is input again even once its turn has ended. Anthropic documents that
    Opus 4.5 and later keep earlier turns' thinking in context and earlier models drop it when the turn
    ends (`turn_drops_reasoning`)."""
    match = _OPUS_VERSION.search(model.lower())
    if match is None:
        return False
    return (int(match[1]), int(match[2] or 0)) >= (4, 5)


# "claude-opus-4-5-20251101", "claude-opus-4.5", "claude-opus-5"; a date ("opus-4-20250514",
# "3-opus-20240229") is no version.
_OPUS_VERSION = re.compile(r"opus-(\d{1,2})(?!\d)(?:[-.](\d{1,2})(?!\d))?")


def opens_turn(after: Sequence[Message]) -> bool:
    """Whether the messages that came back after a reply open a new turn: a user message holds the
    person's own text (not `harness` text), beside its tool results or instead of them. Anthropic keeps
    thinking only within a tool loop that no user turn of the person's breaks. On the Claude Code
    recordings the two steps where a reply with thinking called a tool and the person interrupted it
    and wrote ("[Request interrupted by user]", then a new prompt) grew by none of that thinking (+67
    and +172 once it is taken out, where counting it missed by -138 and -1,059; the cache read stopped
    short of it), while a skill body Claude Code put beside a tool result left the cache read whole."""
    return any(
        message.role == "user"
        and any(isinstance(part, TextPart) and part.text and not part.harness for part in message.parts)
        for message in after
    )


def turn_drops_reasoning(reply: Message, model: str = "", after: Sequence[Message] = ()) -> bool:
    """Whether the request after `reply` no longer holds the reasoning its turn's replies sent back:
    `reply` ends its turn (it calls no tool) or what came back after it opens a new one (`opens_turn`;
    `after`: those messages, when known), and the model does not keep thinking. Anthropic strips
    earlier turns' thinking blocks from the context; on the Claude Code recordings a turn's first call
    is smaller than the call before plus what was added by about its previous turn's thinking: of the
    20 turns that followed a turn with thinking, 18 are within -329..+545 tokens once it is taken out,
    where 10 of them had shrunk, by up to 2,542 tokens (the other two: a cut of 25k, and +1.5k)."""
    if thinking_kept(model or str(reply.metadata.get("model") or "")):
        return False
    return not reply.tool_uses() or opens_turn(after)


def reasoning_goes_back(reply: Message, model: str = "") -> bool:
    """Whether the request after `reply` carries its reasoning as input, so that the anchor counts the
    reply's reasoning tokens (`anchor_from_usage(reasoning_replayed=...)`). Only signed reasoning goes
    back (an Anthropic thinking block, an OpenAI Responses encrypted item; each converter sends its own
    provider's and drops the rest), and both APIs keep it only within its turn: while the reply calls
    tools the next request continues that turn. Once the turn ends it is dropped, unless the model keeps
    thinking (`thinking_kept`). On real recordings the next input grows by the reply's reasoning tokens
    on such steps (Codex: +60..+173 for 64..191 reasoning tokens; Claude Code on Bedrock: +1,769 for a
    reply whose output count is 1,854 above its visible text), and by nothing of it once the turn has
    ended. One recorded step disagrees: a first-party Sonnet 4.5 call of Claude Code 2.0.13
    (agentlogs subagent.jsonl) grew by none of its reply's thinking. `model` defaults to the reply's
    recorded `model` metadata."""
    if not any(isinstance(p, ThinkingPart) and p.provider and (p.signature or p.redacted) for p in reply.parts):
        return False
    return bool(reply.tool_uses()) or thinking_kept(model or str(reply.metadata.get("model") or ""))


def _default_counter() -> TokenCounter:
    return HeuristicCounter(CL100K_PROFILE)


def _anchor_index(messages: Sequence[Message], message_id: str, end: int | None = None) -> int:
    for index in range((len(messages) if end is None else end) - 1, -1, -1):
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
        return anchor.carried_into(messages, index + 1) + count_messages(messages[index + 1 :], counter)
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

    `record` whenever an assistant message enters history with real usage (TOK-2), with the messages
    that call was sent so the ledger learns what the call grew beyond its estimate (`growth`); `clear`
    after a successful compaction, so the estimate is a full one until the next real figure arrives.
    One ledger per session: what it learns is that session's, and a new session starts from nothing.
    """

    def __init__(self, counter: TokenCounter | None = None, *, growth_prior: int = 0):
        """`growth_prior`: the per-step allowance before the first answered call (`GrowthAllowance`)."""
        self.counter: TokenCounter = counter or _default_counter()
        self._anchor: Anchor | None = None
        self.growth = GrowthAllowance(prior=growth_prior)
        """Learned per step from answered calls; added to every anchored estimate (never negative)."""
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

    def record(
        self, message_id: str, usage: Usage, *, reasoning_replayed: bool = False,
        sent: Sequence[Message] | None = None, reply: Message | None = None, ends_turn: bool = False,
        keeps_reasoning: bool = False,
    ) -> Anchor | None:
        """Anchor on this assistant message. A usage with no input figure (a provider that reported
        nothing) is not a real figure: the previous anchor stays.

        `sent`: the messages of the request this message answers. With them, and an anchor from the
        previous call among them, the ledger compares the real input with what it would have estimated
        for this call and learns the difference (`growth`). The agent loop records each reply once;
        recording the same message again would learn nothing twice.

        `reply`: the message itself, which says whether its reasoning goes back (`reasoning_goes_back`,
        else `reasoning_replayed`) and whether it ends its turn (`turn_drops_reasoning`, else
        `ends_turn`) and whether its model keeps thinking across turns (`thinking_kept`, else
        `keeps_reasoning`). The reasoning the turn's earlier replies sent back is part of this call's
        real input; when this reply ends the turn the next request no longer carries it, so the anchor
        leaves it out; when the messages after it open a new turn (`opens_turn`: the person wrote while
        its tools ran), `estimate` leaves it out of that request."""
        if usage.context_tokens <= 0:
            return self._anchor
        if reply is not None:
            reasoning_replayed = reasoning_goes_back(reply)
            ends_turn = turn_drops_reasoning(reply)
            keeps_reasoning = thinking_kept(str(reply.metadata.get("model") or ""))
        previous = self._anchor
        anchor = self._next_anchor(message_id, usage, previous, reasoning_replayed, ends_turn, keeps_reasoning)
        unexplained = None
        if sent is not None and previous is not None and previous.message_id != message_id:
            unexplained = self._unexplained(previous, usage.context_tokens, sent, len(sent))
        with self._lock:
            if unexplained is not None and self._anchor is previous:
                self.growth.observe(unexplained)
            self._anchor = anchor
        return anchor

    @staticmethod
    def _next_anchor(message_id: str, usage: Usage, previous: Anchor | None, replayed: bool, ends_turn: bool,
                     kept: bool) -> Anchor:
        anchor = anchor_from_usage(message_id, usage, reasoning_replayed=replayed)
        held = previous.turn_reasoning if previous is not None else 0  # this turn's, in this call's input
        if ends_turn or kept:  # nothing of it is dropped later: at a turn's end it is gone, or it stays
            return Anchor(message_id, max(0, anchor.context_tokens - held), anchor.output_tokens)
        own = min(usage.reasoning_tokens, usage.output_tokens) if replayed else 0
        return Anchor(message_id, anchor.context_tokens, anchor.output_tokens, held + own)

    def _unexplained(self, previous: Anchor, real: int, messages: Sequence[Message], end: int) -> int | None:
        """Real input of a call sent `messages[:end]` minus the anchored estimate for it (without the
        allowance). None when it is not one growth step: the previous anchor was not in what was sent,
        or the input shrank (something was cut that the ledger was not told of)."""
        index = _anchor_index(messages, previous.message_id, end)
        if index < 0:
            return None
        carried = previous.carried_into(messages, index + 1, end)
        if real < previous.context_tokens - (previous.total - carried):
            return None
        self._sizes_valid()
        return real - (carried + self._tail(messages, index + 1, end))

    def resume(self, history: Sequence[Message]) -> None:
        """Take up what a recorded session had learned: the samples the latest reply carries
        (`GROWTH_METADATA`, as the agent loop stores them), else relearned from the recorded usage
        (`learn_from`: an imported session). The anchor is left as it was."""
        for message in reversed(history):
            if message.role != "assistant":
                continue
            samples = message.metadata.get(GROWTH_METADATA)
            if isinstance(samples, list) and all(isinstance(v, int) and not isinstance(v, bool) for v in samples):
                with self._lock:
                    self.growth = GrowthAllowance(samples, prior=self.growth.prior)
                return
            if usage_of(message) is not None:
                break  # the latest reply with usage carries none: not recorded by Nova's loop
        self.learn_from(history)

    def learn_from(self, history: Sequence[Message]) -> None:
        """Learn `growth` from a recorded history (a resumed session): every pair of consecutive
        assistant messages carrying usage (`usage_of`) is one answered call, as `record` would have seen
        it with the history before the later one as sent. The anchor is left as it was: a recorded
        figure may predate a compaction the record does not show."""
        previous: Anchor | None = None
        for index, message in enumerate(history):
            usage = usage_of(message) if message.role == "assistant" else None
            if usage is None or usage.context_tokens <= 0:
                continue
            if previous is not None:
                unexplained = self._unexplained(previous, usage.context_tokens, history, index)
                if unexplained is not None:
                    with self._lock:
                        self.growth.observe(unexplained)
            previous = self._next_anchor(message.id, usage, previous, reasoning_goes_back(message),
                                         turn_drops_reasoning(message),
                                         thinking_kept(str(message.metadata.get("model") or "")))

    def clear(self) -> None:
        with self._lock:
            self._anchor = None

    def restore(self, anchor: Anchor | None) -> None:
        """Put back the anchor `clear` took away, when what it was cleared for was not kept (a compaction
        whose summary was dropped): the history it measured is the one still in use."""
        with self._lock:
            self._anchor = anchor

    def _tail(self, messages: Sequence[Message], start: int, end: int | None = None) -> int:
        end = len(messages) if end is None else end
        if end - start <= _DIRECT_TAIL or end != len(messages):
            return sum(self._size(m) for m in messages[start:end])
        return self._totals.sum(messages, start)

    def estimate(self, messages: Sequence[Message], system: str = "", tools: Sequence[ToolSpec] = ()) -> int:
        """`estimate_context_tokens` with this ledger's anchor and counter, each message counted once,
        plus the learned per-step `growth` when anchored (the next call is one step past the anchor)."""
        self._sizes_valid()
        anchor = self._anchor
        index = _anchor_index(messages, anchor.message_id) if anchor is not None else -1
        if anchor is not None and index >= 0:
            return anchor.carried_into(messages, index + 1) + self._tail(messages, index + 1) + self.growth.tokens
        return count_system(system, self.counter) + count_tools(tools, self.counter) + self._totals.sum(messages)

    def parts(self, messages: Sequence[Message]) -> tuple[int, int, int] | None:
        """What `estimate` adds up when it is anchored in `messages`: the anchor's real figure as it is
        carried into this request, the estimate of the messages after the anchor's, and the learned
        allowance. None when it is not anchored there (everything is estimated)."""
        self._sizes_valid()
        anchor = self._anchor
        index = _anchor_index(messages, anchor.message_id) if anchor is not None else -1
        if anchor is None or index < 0:
            return None
        return anchor.carried_into(messages, index + 1), self._tail(messages, index + 1), self.growth.tokens

    def estimate_message(self, message: Message) -> int:
        """The estimate of one message (what appending it would add)."""
        self._sizes_valid()
        return self._size(message)
