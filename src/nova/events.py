"""Typed events and the bus every surface subscribes to (CLI timeline, SSE stream, TUI, logs).

Events are frozen dataclasses with a `type` tag; `EventBus.emit` calls subscribers synchronously in
subscription order. A subscriber that raises is logged and skipped: a broken display must never break
a turn.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

__all__ = [
    "ApprovalRequested",
    "ApprovalTimedOut",
    "CacheBreak",
    "CompactionEnd",
    "CompactionStart",
    "ContextUpdate",
    "ErrorEvent",
    "Event",
    "EventBus",
    "ModelCallStarted",
    "ModelResponding",
    "PermissionDenied",
    "RetryScheduled",
    "TextDelta",
    "ToolCallFinished",
    "ToolCallStarted",
    "TurnFinished",
    "TurnStarted",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class _SessionEvent:
    """What every event carries: the session it happened in. Subclasses add their own fields after it,
    so `event_to_dict` keeps `session_id` first, as the transcripts and the SSE stream have it."""

    session_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class _ToolCallEvent(_SessionEvent):
    """What every event about one tool call carries: the call's id and the tool's name."""

    tool_use_id: str
    name: str


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnStarted(_SessionEvent):
    prompt: str
    type: Literal["turn_started"] = "turn_started"


@dataclass(frozen=True, slots=True, kw_only=True)
class TextDelta(_SessionEvent):
    text: str
    type: Literal["text_delta"] = "text_delta"


@dataclass(frozen=True, slots=True, kw_only=True)
class AssistantMessage(_SessionEvent):
    message_id: str
    text: str
    type: Literal["assistant_message"] = "assistant_message"


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallStarted(_ToolCallEvent):
    input: Mapping[str, Any]
    type: Literal["tool_call_started"] = "tool_call_started"


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallFinished(_ToolCallEvent):
    output: str
    is_error: bool
    duration_s: float
    type: Literal["tool_call_finished"] = "tool_call_finished"


@dataclass(frozen=True, slots=True, kw_only=True)
class PermissionDenied(_ToolCallEvent):
    reason: str
    type: Literal["permission_denied"] = "permission_denied"


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalRequested(_SessionEvent):
    """A tool call waits for the user's answer (nova.tools.approval); a surface that cannot show it
    lets it time out, which denies it."""

    tool_use_id: str
    approval_id: str
    name: str
    summary: str
    """What the call does, one line: `bash: git push origin main`."""
    reason: str
    """Why the user is asked (the ask rule, or the default for tools that change things)."""
    rule: str | None
    grant: str
    """What "allow for session" would cover."""
    timeout_s: float
    deadline: float = 0.0
    """When the call is denied unanswered, in seconds since the epoch (0: no deadline)."""
    diff: str = ""
    """For a file change, the unified diff it would make (nova.tools.change_preview)."""
    type: Literal["approval_requested"] = "approval_requested"


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalTimedOut(_ToolCallEvent):
    """Nobody answered a call's approval in time: it is denied (a `PermissionDenied` follows)."""

    timeout_s: float
    type: Literal["approval_timed_out"] = "approval_timed_out"


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextUpdate(_SessionEvent):
    """CMP-11: `limit` is the compaction threshold, so `percent` reaches 100 exactly at the trigger."""

    used: int
    limit: int
    window: int
    percent: float
    type: Literal["context_update"] = "context_update"


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionStart(_SessionEvent):
    message_count: int
    token_count: int
    reason: Literal["threshold", "overflow", "manual", "hard", "cost"]
    type: Literal["compaction_start"] = "compaction_start"


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionEnd(_SessionEvent):
    ok: bool
    tokens_before: int
    tokens_after: int
    messages_compacted: int = 0
    snipped: int = 0
    duration_s: float = 0.0
    error: str = ""
    declined: bool = False
    """Not made, and not a failure: the summary would not have made the view smaller (`error` says by how
    much), so nothing changed."""
    receipt: dict[str, Any] | None = None
    """`nova.context.receipt.CompactionReceipt.to_json()` of a successful compaction."""
    receipt_text: str = ""
    """The same receipt in words (`receipt_line`), as every surface shows it."""
    type: Literal["compaction_end"] = "compaction_end"


@dataclass(frozen=True, slots=True, kw_only=True)
class CacheBreak(_SessionEvent):
    segment: str
    cause: str
    cost_usd: float
    type: Literal["cache_break"] = "cache_break"


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelCallStarted(_SessionEvent):
    """A request is being sent to the model. Until `ModelResponding` (or an error, or a retry) the
    surfaces show that they wait for it, with the time waited."""

    attempt: int = 1
    type: Literal["model_call_started"] = "model_call_started"


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelResponding(_SessionEvent):
    """The first stream event of a model call arrived (text, a tool call or the end of the answer)."""

    waited_s: float
    type: Literal["model_responding"] = "model_responding"


@dataclass(frozen=True, slots=True, kw_only=True)
class RetryScheduled(_SessionEvent):
    """A model call failed in a way that may pass: the same request is sent again after `delay_s`, as
    attempt `attempt` of `max_attempts`. `reason` is the error, e.g. `529 overloaded`."""

    attempt: int
    max_attempts: int
    delay_s: float
    reason: str
    type: Literal["retry_scheduled"] = "retry_scheduled"

    def describe(self) -> str:
        """`retrying in 2.0 s (attempt 2 of 4): 529 overloaded`, the same words on every surface."""
        return f"retrying in {self.delay_s:.1f} s (attempt {self.attempt} of {self.max_attempts}): {self.reason}"


@dataclass(frozen=True, slots=True, kw_only=True)
class ErrorEvent(_SessionEvent):
    error: str
    kind: str
    type: Literal["error"] = "error"


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnFinished(_SessionEvent):
    stop_reason: str
    usage: Mapping[str, int] = field(default_factory=dict)
    cost_usd: float = 0.0
    type: Literal["turn_finished"] = "turn_finished"


Event = (
    TurnStarted
    | TextDelta
    | AssistantMessage
    | ToolCallStarted
    | ToolCallFinished
    | PermissionDenied
    | ApprovalRequested
    | ApprovalTimedOut
    | ContextUpdate
    | CompactionStart
    | CompactionEnd
    | CacheBreak
    | ModelCallStarted
    | ModelResponding
    | RetryScheduled
    | ErrorEvent
    | TurnFinished
)

Subscriber = Callable[[Event], None]


def event_to_dict(event: Event) -> dict[str, Any]:
    return asdict(event)


class EventBus:
    """Synchronous fan-out. Thread-safe subscribe/unsubscribe; emit never raises from a subscriber."""

    def __init__(self) -> None:
        self._subscribers: list[Subscriber] = []
        self._lock = threading.Lock()

    def subscribe(self, fn: Subscriber) -> Callable[[], None]:
        with self._lock:
            self._subscribers.append(fn)

        def unsubscribe() -> None:
            with self._lock:
                if fn in self._subscribers:
                    self._subscribers.remove(fn)

        return unsubscribe

    def emit(self, event: Event) -> None:
        with self._lock:
            subscribers = list(self._subscribers)
        for fn in subscribers:
            try:
                fn(event)
            except Exception:  # a broken display must not break the turn
                log.exception("event subscriber %r failed on %s", fn, event.type)
