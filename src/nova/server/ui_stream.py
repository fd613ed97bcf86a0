"""Nova's events as the Vercel AI SDK UI message stream, protocol v1 (what `useChat` and
`readUIMessageStream` read).

One `UIStreamEncoder` per turn turns each bus event into zero or more chunks (JSON objects); `sse()`
frames a chunk as one server-sent event and `DONE` ends the stream. Nova's own parts are data parts,
which the SDK keeps on the message:

- `data-nova-context` `{used, limit, window, percent}` with the fixed id `context`, so a client holds the
  latest figure in one part (the SDK replaces a data part that has the same type and id);
- `data-nova-compaction-start` `{messageCount, tokenCount, reason}` and `data-nova-compaction-end`
  `{ok, tokensBefore, tokensAfter, messagesCompacted, error}`;
- `data-nova-waiting` `{waiting, attempt, waitedS}`, transient (not kept on the message): `waiting` is
  true from the moment a request is sent until the model's first stream event, so a page can show a
  spinner with the time waited;
- `data-nova-retry` `{attempt, maxAttempts, delayS, reason, text}` for each retry after a retryable
  provider error (`text` is `retrying in 2.0 s (attempt 2 of 4): 529 overloaded`, as the CLI says it).
- `data-nova-denied` `{toolCallId, reason}` (id `denied-<toolCallId>`) beside the SDK's own
  `tool-output-denied`, which carries no reason.

A call that waits for the user's approval is the SDK's `tool-approval-request` (`approvalId`,
`toolCallId`, and in `approvalDescriptor` what the call does: `{tool, summary, reason, rule, grant,
timeoutS, deadline, diff}`, `deadline` in seconds since the epoch, `diff` the unified diff of a file
change); `POST /api/sessions/{id}/approvals/{toolCallId}` answers it (nova.server.approvals). When
nobody answers in time, `data-nova-approval-timeout` `{toolCallId, timeoutS}` says so before the
call's `tool-output-denied`.

Tool calls are `dynamic` in SDK terms: the tools are Nova's, not declared by the client.
"""

from __future__ import annotations

from typing import Any

from nova import events as ev
from nova.sessions.schema import json_text

__all__ = ["DONE", "STREAM_HEADERS", "UIStreamEncoder", "sse"]

STREAM_HEADERS = {
    "cache-control": "no-cache",
    "x-vercel-ai-ui-message-stream": "v1",
    "x-accel-buffering": "no",  # a reverse proxy must pass each event on as it comes
}

DONE = b"data: [DONE]\n\n"

# Nova's stop reasons as the SDK's finish reasons.
_FINISH_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "tool_use": "tool-calls",
    "error": "error",
}

Chunk = dict[str, Any]


def sse(chunk: Chunk) -> bytes:
    # Valid UTF-8 whatever the text holds (a lone surrogate is sent as a JSON escape).
    return b"data: " + json_text(chunk, separators=(",", ":")).encode("utf-8") + b"\n\n"


def context_data(update: ev.ContextUpdate) -> dict[str, Any]:
    return {"used": update.used, "limit": update.limit, "window": update.window, "percent": update.percent}


def waiting_part(*, waiting: bool, attempt: int, waited_s: float) -> Chunk:
    return {"type": "data-nova-waiting", "id": "waiting", "transient": True,
            "data": {"waiting": waiting, "attempt": attempt, "waitedS": round(waited_s, 3)}}


class UIStreamEncoder:
    """Stateful: it opens and closes text parts and steps around the events of one turn."""

    def __init__(self, message_id: str) -> None:
        self.message_id = message_id
        self._text_id: str | None = None
        self._texts = 0
        self._in_step = False
        self._after_tools = False
        self._denied: dict[str, str] = {}
        self.finished = False

    def start(self) -> list[Chunk]:
        return [{"type": "start", "messageId": self.message_id}]

    def encode(self, event: ev.Event) -> list[Chunk]:
        if isinstance(event, ev.TextDelta):
            if not event.text:
                return []
            out = self._step()
            if self._text_id is None:
                self._texts += 1
                self._text_id = f"{self.message_id}-text-{self._texts}"
                out.append({"type": "text-start", "id": self._text_id})
            out.append({"type": "text-delta", "id": self._text_id, "delta": event.text})
            return out
        if isinstance(event, ev.AssistantMessage):
            return self._close_text()
        if isinstance(event, ev.ToolCallStarted):
            out = self._close_text() + self._step()
            out.append({"type": "tool-input-available", "toolCallId": event.tool_use_id, "toolName": event.name,
                        "input": dict(event.input), "dynamic": True})
            return out
        if isinstance(event, ev.ApprovalRequested):
            return [{"type": "tool-approval-request", "approvalId": event.approval_id, "toolCallId": event.tool_use_id,
                     "approvalDescriptor": {"tool": event.name, "summary": event.summary, "reason": event.reason,
                                            "rule": event.rule, "grant": event.grant, "timeoutS": event.timeout_s,
                                            "deadline": event.deadline, "diff": event.diff}}]
        if isinstance(event, ev.ApprovalTimedOut):
            return [{"type": "data-nova-approval-timeout", "id": f"timeout-{event.tool_use_id}",
                     "data": {"toolCallId": event.tool_use_id, "timeoutS": event.timeout_s}}]
        if isinstance(event, ev.PermissionDenied):
            self._denied[event.tool_use_id] = event.reason
            return []
        if isinstance(event, ev.ToolCallFinished):
            self._after_tools = True
            if event.tool_use_id in self._denied:
                reason = self._denied.pop(event.tool_use_id)
                return [{"type": "tool-output-denied", "toolCallId": event.tool_use_id},
                        {"type": "data-nova-denied", "id": f"denied-{event.tool_use_id}",
                         "data": {"toolCallId": event.tool_use_id, "reason": reason}}]
            if event.is_error:
                return [{"type": "tool-output-error", "toolCallId": event.tool_use_id, "errorText": event.output,
                         "dynamic": True}]
            return [{"type": "tool-output-available", "toolCallId": event.tool_use_id, "output": event.output,
                     "dynamic": True}]
        if isinstance(event, ev.ContextUpdate):
            return [{"type": "data-nova-context", "id": "context", "data": context_data(event)}]
        if isinstance(event, ev.CompactionStart):
            return [{"type": "data-nova-compaction-start",
                     "data": {"messageCount": event.message_count, "tokenCount": event.token_count,
                              "reason": event.reason}}]
        if isinstance(event, ev.CompactionEnd):
            return [{"type": "data-nova-compaction-end",
                     "data": {"ok": event.ok, "tokensBefore": event.tokens_before, "tokensAfter": event.tokens_after,
                              "messagesCompacted": event.messages_compacted, "error": event.error,
                              "declined": event.declined,
                              # The receipt: its figures, and the words the CLI line prints.
                              "receipt": event.receipt, "receiptText": event.receipt_text}}]
        if isinstance(event, ev.ModelCallStarted):
            return [waiting_part(waiting=True, attempt=event.attempt, waited_s=0.0)]
        if isinstance(event, ev.ModelResponding):
            return [waiting_part(waiting=False, attempt=0, waited_s=event.waited_s)]
        if isinstance(event, ev.RetryScheduled):
            return [{"type": "data-nova-retry",
                     "data": {"attempt": event.attempt, "maxAttempts": event.max_attempts, "delayS": event.delay_s,
                              "reason": event.reason, "text": event.describe()}}]
        if isinstance(event, ev.ErrorEvent):
            return [{"type": "error", "errorText": f"{event.kind}: {event.error}"}]
        if isinstance(event, ev.TurnFinished):
            return self.finish(event.stop_reason)
        return []

    def finish(self, stop_reason: str) -> list[Chunk]:
        if self.finished:
            return []
        self.finished = True
        out = self._close_text()
        if self._in_step:
            out.append({"type": "finish-step"})
            self._in_step = False
        out.append({"type": "finish", "finishReason": _FINISH_REASONS.get(stop_reason, "other")})
        return out

    # A step is one model call: after tool results come back, the next text or call opens a new one.
    def _step(self) -> list[Chunk]:
        out: list[Chunk] = []
        if self._in_step and self._after_tools:
            out.append({"type": "finish-step"})
            self._in_step = False
        if not self._in_step:
            out.append({"type": "start-step"})
            self._in_step = True
            self._after_tools = False
        return out

    def _close_text(self) -> list[Chunk]:
        if self._text_id is None:
            return []
        chunk = {"type": "text-end", "id": self._text_id}
        self._text_id = None
        return [chunk]
