"""Approvals over HTTP: a tool call that needs the user waits here until someone answers it.

When the rules send a call to the user (nova.tools.approval), the session's approver puts an
`ApprovalRequested` event on the session's bus (the stream carries it as the AI SDK's
`tool-approval-request` chunk) and blocks the turn's worker thread until

    POST /api/sessions/{id}/approvals/{call_id}   {"decision": "once" | "session" | "deny"}

answers it, the turn is cancelled or the server shuts down (a denial), or `approval_timeout_s` passes
(a denial). Unknown ids are 404; a call already answered, or timed out, is 409. Each answer is
recorded in the session (`approval` events: who answered and how); a denied call is also recorded as
`permission_denied` by the agent, and streamed as `tool-output-denied`. A timeout is said as it
happens (`ApprovalTimedOut` on the bus, `data-nova-approval-timeout` in the stream) and the denial the
model and the record get reads "timed out after N s".

A waiting call is part of the session's state, not of the page that was shown it: `pending(session_id)`
gives each one with its tool, arguments, diff and deadline, which `GET /api/sessions/{id}` returns, so
a page reloaded or opened later shows the question again and can answer it.

"Allow for session" is remembered per open session, in memory (`SessionGrants`): it ends when the
server closes the session.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from nova import events as ev
from nova.errors import NovaError
from nova.messages import new_id
from nova.tools.approval import Answer, NoAnswer, RememberingApprover, SessionGrants
from nova.tools.permissions import PermissionRequest

__all__ = ["DEFAULT_APPROVAL_TIMEOUT_S", "ApprovalAnswered", "ApprovalDesk", "ApprovalNotFound", "Pending"]

DEFAULT_APPROVAL_TIMEOUT_S = 300.0
"""Long enough to read a command and decide; short enough that a turn nobody watches ends."""
_REMEMBERED = 4096
"""Answered calls kept to tell a late answer (409) from an unknown id (404)."""

Record = Callable[[str, Mapping[str, Any]], None]


class ApprovalNotFound(NovaError):
    """No call with that id waits for an answer in that session (404)."""


class ApprovalAnswered(NovaError):
    """The call was answered already, or its time ran out (409)."""


@dataclass(frozen=True, slots=True)
class Pending:
    """One call waiting for an answer, as a page needs it to ask again (`GET /api/sessions/{id}` returns
    these as they are)."""

    call_id: str
    """The model's id of the call: answer with POST /api/sessions/{id}/approvals/{call_id}."""
    approval_id: str
    tool: str
    input: Mapping[str, Any]
    """The call's arguments, as the model gave them."""
    summary: str
    reason: str
    rule: str | None
    grant: str
    """What "allow for session" would cover."""
    diff: str
    """For edit_file and write_file: the unified diff the call would make ("" otherwise)."""
    timeout_s: float
    deadline: float
    """Seconds since the epoch when it is denied unanswered."""


@dataclass(eq=False)
class _Waiting:
    session_id: str
    call_id: str
    shown: Pending
    done: threading.Event = field(default_factory=threading.Event)
    answer: Answer | None = None
    by: Literal["user", "timeout", "cancelled"] = "user"


class ApprovalDesk:
    """The calls waiting for an answer, across the server's sessions. Thread-safe."""

    def __init__(self, timeout_s: float = DEFAULT_APPROVAL_TIMEOUT_S) -> None:
        self.timeout_s = timeout_s
        self._lock = threading.Lock()
        self._waiting: dict[tuple[str, str], _Waiting] = {}
        self._answered: OrderedDict[tuple[str, str], str] = OrderedDict()

    def approver(self, session_id: str, bus: ev.EventBus, record: Record) -> RememberingApprover:
        """The approver of one open session: asks over its stream, records each answer with `record`."""
        grants = SessionGrants()

        def ask(request: PermissionRequest) -> Answer | NoAnswer:
            call_id = request.call_id or new_id("call")
            # Wall-clock time: the deadline is shown to a person (and a page computes what is left).
            shown = Pending(call_id=call_id, approval_id=new_id("apr"), tool=request.tool,
                            input=dict(request.input), summary=request.summary, reason=request.reason,
                            rule=request.rule, grant=grants.describe(request), diff=request.diff,
                            timeout_s=self.timeout_s, deadline=time.time() + self.timeout_s)
            waiting = _Waiting(session_id, call_id, shown)
            key = (session_id, call_id)
            with self._lock:
                self._waiting[key] = waiting
                self._answered.pop(key, None)
            bus.emit(ev.ApprovalRequested(
                session_id=session_id, tool_use_id=call_id, approval_id=shown.approval_id, name=request.tool,
                summary=request.summary, reason=request.reason, rule=request.rule, grant=shown.grant,
                timeout_s=self.timeout_s, deadline=shown.deadline, diff=request.diff))
            waiting.done.wait(self.timeout_s)
            with self._lock:
                if waiting.answer is None:  # nobody answered in time: a denial
                    waiting.answer, waiting.by = Answer.DENY, "timeout"
                del self._waiting[key]
                self._remember(key, f"{waiting.answer.value} ({waiting.by})")
            entry: dict[str, Any] = {"tool_use_id": call_id, "tool": request.tool, "answer": waiting.answer.value,
                                     "by": waiting.by, "rule": request.rule}
            if waiting.by == "timeout":
                reason = f"timed out after {self.timeout_s:g} s"
                entry["reason"] = reason
                record("approval", entry)
                bus.emit(ev.ApprovalTimedOut(session_id=session_id, tool_use_id=call_id, name=request.tool,
                                             timeout_s=self.timeout_s))
                return NoAnswer(reason)
            record("approval", entry)
            return waiting.answer

        return RememberingApprover(ask, grants)

    def answer(self, session_id: str, call_id: str, answer: Answer) -> None:
        key = (session_id, call_id)
        with self._lock:
            waiting = self._waiting.get(key)
            if waiting is None or waiting.answer is not None:
                settled = self._answered.get(key)
                if waiting is not None and waiting.answer is not None:
                    settled = f"{waiting.answer.value} ({waiting.by})"
                if settled is None:
                    raise ApprovalNotFound(f"no tool call {call_id!r} waits for approval in session {session_id}")
                raise ApprovalAnswered(f"tool call {call_id!r} was already answered: {settled}")
            waiting.answer, waiting.by = answer, "user"
        waiting.done.set()

    def pending(self, session_id: str) -> list[Pending]:
        """The calls of `session_id` waiting for an answer, oldest first."""
        with self._lock:
            return [w.shown for (sid, _), w in self._waiting.items() if sid == session_id and w.answer is None]

    def withdraw(self, session_id: str | None = None) -> None:
        """Deny what waits in `session_id` (every session when None): its turn was cancelled, or the
        server is shutting down."""
        with self._lock:
            found = [w for (sid, _), w in self._waiting.items()
                     if (session_id is None or sid == session_id) and w.answer is None]
            for waiting in found:
                waiting.answer, waiting.by = Answer.DENY, "cancelled"
        for waiting in found:
            waiting.done.set()

    def _remember(self, key: tuple[str, str], how: str) -> None:
        self._answered[key] = how
        while len(self._answered) > _REMEMBERED:
            self._answered.popitem(last=False)
