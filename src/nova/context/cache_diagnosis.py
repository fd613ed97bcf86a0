"""Which segment broke the prompt cache, why, and what it cost (SPEC 7, "beyond the seeds").

Every request is cut into segments in the provider's prefix order — each tool, the system contract,
the project rules, then each history message (memory and summary inserts named as such) — and each
segment gets a digest of exactly what the provider sees of it (no ids, timestamps or metadata).
`CacheMonitor.observe` compares a call with the previous one: when the call reads less from the cache
than the previous call left in it (read + written, normalized usage), the first segment whose digest
changed names the break, and its kind says why:

    tool catalog changed   a tool was added, removed or its schema/description changed
    mcp tools changed      the same, for MCP tools only: a server's tools/list_changed (nova.mcp)
    rules changed          the project instruction files were edited (the rules part of the system)
    system changed         the system contract itself changed
    memory changed         an injected memory block changed
    compaction             history was folded into a summary (layer 2) or shortened
    snip                   an old tool output was cut (layer 1)
    history rewritten      any other change to an earlier message
    ttl expired            nothing changed, but the gap since the last call outlived the cache
    evicted                nothing changed and the gap was short: the provider dropped the entry

A call usually repeats the previous one and adds a few messages, so `CacheMonitor` keeps the previous
call's segments and digests only the messages that are new or changed (each message version once);
its reports are exactly those of comparing `request_segments` of both calls.

The cost of a break is what the missed tokens cost over reading them: (price paid − cache read price)
× missed tokens, priced from the model table. The segmentation is self-contained and small so it can
later read the context compiler's manifest instead of re-deriving segments from the request.
"""

from __future__ import annotations

import hashlib
import json
import time
from bisect import bisect_left
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from nova.context.cache import TTL_SECONDS, join_system_text, system_text
from nova.history.incremental import LastSeen, MessageMemo
from nova.messages import Message, to_dict
from nova.model import ModelRequest, Usage
from nova.providers.pricing import model_info

__all__ = [
    "CAUSES",
    "RULES_HEADING",
    "CacheBreakReport",
    "CacheMonitor",
    "Segment",
    "break_cost_usd",
    "first_changed",
    "request_segments",
]

# The heading the context sources (`nova.agent.context_runtime.RULES_TITLE`) put before the instruction files: the system text after it
# is the rules segment, so an edited rule file is told apart from a changed contract.
RULES_HEADING = "# Instructions from the user and the project"
SegmentKind = Literal["tool", "system", "rules", "memory", "summary", "message"]
CAUSES = ("tool catalog changed", "mcp tools changed", "rules changed", "system changed", "memory changed", "compaction", "snip",
          "history rewritten", "ttl expired", "evicted")


@dataclass(frozen=True, slots=True)
class Segment:
    name: str
    kind: SegmentKind
    digest: str


def _digest(value: Any) -> str:
    data = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.blake2b(data.encode("utf-8", "surrogatepass"), digest_size=12).hexdigest()


def _message_kind(message: Message) -> SegmentKind:
    if message.origin == "memory":
        return "memory"
    if message.origin == "summary" or message.has("summary"):
        return "summary"
    return "message"


def _sent_form(message: Message) -> dict[str, Any]:
    """What a provider sees of a message: role and parts (id, timestamps and metadata stay local)."""
    data = to_dict(message)
    return {"role": data["role"], "parts": data["parts"]}


def _head_segments(request: ModelRequest, system: str) -> list[Segment]:
    """The tools, system and rules segments (everything before the messages); `system` is the request's
    `system_text`."""
    segments = [Segment(f"tool {t.name}", "tool", _digest([t.name, t.description, t.input_schema]))
                for t in request.tools]
    contract, sep, rules = system.partition(RULES_HEADING)
    if contract or not sep:
        segments.append(Segment("system", "system", _digest(contract)))
    if sep:
        segments.append(Segment("rules", "rules", _digest(sep + rules)))
    return segments


def _message_fingerprint(message: Message) -> tuple[SegmentKind, str]:
    return _message_kind(message), _digest(_sent_form(message))


def _message_segment(index: int, message: Message, fingerprint: tuple[SegmentKind, str]) -> Segment:
    kind, digest = fingerprint
    label = {"memory": "memory", "summary": "summary"}.get(kind, message.role)
    return Segment(f"message {index} ({label} {message.id})", kind, digest)


def request_segments(request: ModelRequest) -> list[Segment]:
    """The request's segments in prefix order (tools, system, rules, messages)."""
    segments = _head_segments(request, system_text(request))
    for index, message in enumerate(m for m in request.messages if m.role != "system"):
        segments.append(_message_segment(index, message, _message_fingerprint(message)))
    return segments


def first_changed(before: Sequence[Segment], after: Sequence[Segment]) -> int | None:
    """Index of the first segment of `before` that `after` does not repeat at the same place, or None
    when `after` starts with all of `before` (the prefix was kept)."""
    for index, old in enumerate(before):
        if index >= len(after) or after[index].digest != old.digest:
            return index
    return None


@dataclass(frozen=True, slots=True, kw_only=True)
class CacheBreakReport:
    call: int
    segment: str
    cause: str
    expected_read_tokens: int
    read_tokens: int
    missed_tokens: int
    cost_usd: float | None
    gap_s: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "call": self.call,
            "segment": self.segment,
            "cause": self.cause,
            "expected_read_tokens": self.expected_read_tokens,
            "read_tokens": self.read_tokens,
            "missed_tokens": self.missed_tokens,
            "cost_usd": None if self.cost_usd is None else round(self.cost_usd, 6),
            "gap_s": round(self.gap_s, 3),
        }


def break_cost_usd(missed_tokens: int, usage: Usage, model: str, *, ttl: str = "5m") -> float | None:
    """What `missed_tokens` cost on this call over reading them from the cache: they were written again
    (a provider that writes, like Anthropic) or paid as plain input (OpenAI). None for unknown prices."""
    info = model_info(model)
    if info is None:
        return None
    paid = (info.cache_write_1h if ttl == "1h" else info.cache_write_5m) if usage.cache_write_tokens else info.input
    return missed_tokens * (paid - info.cache_read) / 1_000_000


def _cause(before: Sequence[Segment], after: Sequence[Segment], index: int, *, tools: tuple[list[str], list[str]],
           message_at: Callable[[int], Message | None]) -> str:
    """`tools`: the tool segment names before and after; `message_at(i)`: the message of `after[i]` when
    that segment is a message."""
    old = before[index]
    new = after[index] if index < len(after) else None
    if old.kind == "tool" or (new is not None and new.kind == "tool") or tools[0] != tools[1]:
        return _tool_cause(old, new, tools)
    if old.kind in ("rules", "system") and new is not None and new.kind == old.kind:
        return f"{old.kind} changed"
    if old.kind in ("rules", "system") or (new is not None and new.kind in ("rules", "system")):
        return "rules changed"
    if new is None or new.kind == "summary" or old.kind == "summary" or len(after) < len(before):
        return "compaction"
    if old.kind == "memory" or new.kind == "memory":
        return "memory changed"
    message = message_at(index)
    if message is not None and message.metadata.get("snipped"):
        return "snip"
    return "history rewritten"


def _tool_cause(old: Segment, new: Segment | None, tools: tuple[list[str], list[str]]) -> str:
    """"mcp tools changed" when only MCP tools (`mcp_…` segments, which sit after the built-in ones)
    changed: the first changed tool is one of them and no built-in tool came or went."""
    first = old.name if old.kind == "tool" else new.name if new is not None and new.kind == "tool" else ""
    moved = set(tools[0]) ^ set(tools[1])
    mcp = first.startswith("tool mcp_") or (not first and bool(moved))
    if mcp and all(name.startswith("tool mcp_") for name in moved):
        return "mcp tools changed"
    return "tool catalog changed"


class _Joined(Sequence[Segment]):
    """Head segments followed by message segments, without copying either list."""

    def __init__(self, head: Sequence[Segment], messages: Sequence[Segment], shared: int = -1,
                 tail: Sequence[Segment] = ()) -> None:
        # With `shared` >= 0 the message part is messages[:shared] + tail (the previous request, whose
        # first `shared` message segments the current list still holds).
        self.head, self.messages, self.tail = head, messages, tail
        self.shared = len(messages) if shared < 0 else shared

    def __len__(self) -> int:
        return len(self.head) + self.shared + len(self.tail)

    def __getitem__(self, index: int) -> Segment:  # type: ignore[override]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        if index < len(self.head):
            return self.head[index]
        index -= len(self.head)
        return self.messages[index] if index < self.shared else self.tail[index - self.shared]


def _first_change(before: _Joined, after: _Joined) -> int | None:
    """`first_changed(before, after)` when both share their first `before.shared` message segments:
    that stretch is skipped when it sits at the same place in both."""
    index = 0
    skip_at = len(before.head) if len(before.head) == len(after.head) and before.shared else -1
    while index < len(before):
        if index == skip_at:
            index += before.shared
            continue
        if index >= len(after) or after[index].digest != before[index].digest:
            return index
        index += 1
    return None


class _MessageSegments:
    """The message segments of the last request, brought up to date from where a new request departs
    from it (`LastSeen`); each message's digest is worked out once (`MessageMemo`)."""

    def __init__(self) -> None:
        self.messages = LastSeen()
        """The last request's messages, system-role ones included."""
        self.counted: list[int] = [0]
        """How many message segments come before each position of `messages`."""
        self.segments: list[Segment] = []
        self.sent: list[Message] = []
        """The message of each segment."""
        self.system_at: list[int] = []
        """Where the system-role messages are (the converter hoists them into the system text)."""
        self._fingerprints = MessageMemo(_message_fingerprint)

    def update(self, messages: Sequence[Message]) -> tuple[int, list[Segment]]:
        """Take the new request's messages; returns how many message segments are unchanged and the
        previous request's segments after them."""
        shared = self.messages.update(messages)
        kept = self.counted[shared]
        tail = self.segments[kept:]
        del self.counted[shared + 1 :], self.segments[kept:], self.sent[kept:]
        del self.system_at[bisect_left(self.system_at, shared):]
        for index in range(shared, len(messages)):
            message = messages[index]
            if message.role == "system":
                self.system_at.append(index)
            else:
                self.segments.append(_message_segment(len(self.segments), message,
                                                      self._fingerprints.get(message)))
                self.sent.append(message)
            self.counted.append(len(self.segments))
        return kept, tail

    def system_text(self, system: str) -> str:
        """`system_text` of the request last taken, whose own system text is `system`."""
        return join_system_text(system, [self.messages.items[i].text for i in self.system_at])


@dataclass(slots=True)
class _Previous:
    head: list[Segment]
    cached_tokens: int
    at: float
    ttl: str


class CacheMonitor:
    """Compares each call with the one before it and reports cache breaks (see the module docstring).

    `observe` is fed every successful call in order. It keeps the previous call's segments, updated in
    place: a call that extends the previous one costs its new messages, not the whole history."""

    def __init__(self, *, model: str, clock: Callable[[], float] = time.time) -> None:
        self.model = model
        self.clock = clock
        self.calls = 0
        self.breaks: list[CacheBreakReport] = []
        self._previous: _Previous | None = None
        self._messages = _MessageSegments()

    def observe(self, request: ModelRequest, usage: Usage, *, at: float | None = None,
                model: str | None = None) -> CacheBreakReport | None:
        now = self.clock() if at is None else at
        shared, old_tail = self._messages.update(request.messages)
        head = _head_segments(request, self._messages.system_text(request.system))
        self.calls += 1
        previous, self._previous = self._previous, _Previous(
            head, usage.cache_read_tokens + usage.cache_write_tokens, now, request.cache.ttl)
        if previous is None or previous.cached_tokens <= 0 or usage.cache_read_tokens >= previous.cached_tokens:
            return None
        current = self._messages.segments
        before, after = _Joined(previous.head, current, shared, old_tail), _Joined(head, current)
        gap = now - previous.at
        index = _first_change(before, after)
        expired = gap > TTL_SECONDS.get(previous.ttl, 300.0)
        if index is None or (expired and usage.cache_read_tokens == 0):
            cause = "ttl expired" if expired else "evicted"
            segment = "(whole prefix)" if index is None else before[index].name
        else:
            tools = [s.name for s in previous.head if s.kind == "tool"], [s.name for s in head if s.kind == "tool"]
            sent, skip = self._messages.sent, len(head)
            cause = _cause(before, after, index, tools=tools,
                           message_at=lambda i: sent[i - skip] if 0 <= i - skip < len(sent) else None)
            segment = after[index].name if index < len(after) else before[index].name
        missed = previous.cached_tokens - usage.cache_read_tokens
        report = CacheBreakReport(
            call=self.calls, segment=segment, cause=cause, expected_read_tokens=previous.cached_tokens,
            read_tokens=usage.cache_read_tokens, missed_tokens=missed,
            cost_usd=break_cost_usd(missed, usage, model or self.model, ttl=request.cache.ttl), gap_s=gap,
        )
        self.breaks.append(report)
        return report
