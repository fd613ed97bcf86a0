"""Asking the person at the terminal before a tool that changes things runs.

The permission policy calls the session's approver from the agent's worker thread. The TUI's approver
is `nova.tools.approval.RememberingApprover` over a `ScreenPrompt`: the prompt shows the request and
blocks that thread until the person answers `y` (once), `a` (for this session, remembered by the
approver's grants as on every surface) or `n`; Ctrl-C answers no. Without a screen attached the
answer is no, which is what the policy does for headless runs without `--allow`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from nova.tools.approval import Answer, RememberingApprover
from nova.tools.permissions import PermissionRequest

__all__ = ["PendingApproval", "ScreenPrompt", "screen_approver"]


@dataclass
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

    def __call__(self, request: PermissionRequest) -> Answer:
        if self.show is None:
            return Answer.DENY
        pending = PendingApproval(request)
        self.show(pending)
        pending.done.wait()
        return pending.answer_given


def screen_approver() -> RememberingApprover:
    """The TUI's approver: the screen prompt behind the grants every surface shares."""
    return RememberingApprover(ScreenPrompt())
