"""Asking the person at the terminal before a tool that changes things runs.

The permission policy calls the session's approver from the agent's worker thread. The TUI's approvals
(`ScreenApprovals`, the hub's `Approvals`) give each session it opens its own
`nova.tools.approval.RememberingApprover` over one `ScreenPrompt`: the prompt shows the request and
blocks that thread until the person answers `y` (once), `a` (for this session) or `n`; Ctrl-C answers
no. Without a screen attached the answer is no, which is what the policy does for headless runs
without `--allow`.

"Allow for this session" belongs to the session, as on the web and in `nova run`: each session gets its
own grants when the hub opens it, and they end when the person leaves it (`/new`, `/resume` another)
or the hub closes it; coming back to a session, or opening it again, starts with none.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from nova import events as ev
from nova.tools.approval import Answer, RememberingApprover, SessionGrants
from nova.tools.permissions import PermissionRequest

__all__ = ["PendingApproval", "ScreenApprovals", "ScreenPrompt"]


@dataclass(eq=False)
class PendingApproval:
    request: PermissionRequest
    done: threading.Event = field(default_factory=threading.Event)
    answer_given: Answer = Answer.DENY

    def answer(self, answer: Answer) -> None:
        self.answer_given = answer
        self.done.set()


class ScreenPrompt:
    """The question on the screen: `show` is set by the app once it is running."""

    def __init__(self) -> None:
        self.show: Callable[[PendingApproval], None] | None = None
        self._waiting: set[PendingApproval] = set()
        self._lock = threading.Lock()

    def __call__(self, request: PermissionRequest) -> Answer:
        if self.show is None:
            return Answer.DENY
        pending = PendingApproval(request)
        with self._lock:
            self._waiting.add(pending)
        try:
            self.show(pending)
            pending.done.wait()
        finally:
            with self._lock:
                self._waiting.discard(pending)
        return pending.answer_given

    def withdraw(self) -> None:
        """Deny whatever waits (the hub is closing): the agent's thread must not wait for a screen gone."""
        with self._lock:
            waiting = list(self._waiting)
        for pending in waiting:
            if not pending.done.is_set():
                pending.answer(Answer.DENY)


class ScreenApprovals:
    """The hub's approvals in the TUI: one screen prompt, and for each open session its own grants."""

    def __init__(self) -> None:
        self.prompt = ScreenPrompt()
        self._grants: dict[str, SessionGrants] = {}
        self._lock = threading.Lock()

    def approver(self, session_id: str, bus: ev.EventBus,
                 record: Callable[[str, Mapping[str, Any]], None]) -> RememberingApprover:
        """The approver of `session_id` as the hub opens it: fresh grants, whatever it was granted before."""
        grants = SessionGrants()
        with self._lock:
            previous, self._grants[session_id] = self._grants.get(session_id), grants
        if previous is not None:
            previous.clear()
        return RememberingApprover(self.prompt, grants)

    def end(self, session_id: str) -> None:
        """The person left `session_id`: what they allowed for it ends here."""
        with self._lock:
            grants = self._grants.pop(session_id, None)
        if grants is not None:
            grants.clear()

    def withdraw(self, session_id: str | None = None) -> None:
        # A cancelled turn's question is answered by the app itself (it also closes the prompt); what
        # is left to do is not to leave a thread waiting when the hub closes.
        if session_id is None:
            self.prompt.withdraw()

    @staticmethod
    def describe(request: PermissionRequest) -> str:
        """What "allow for this session" would cover, for the notice after the answer."""
        return SessionGrants().describe(request)
