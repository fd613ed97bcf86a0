"""Asking the person at the terminal before a tool that changes things runs.

The permission policy calls `Approver` from the agent's worker thread. The TUI installs a handler
that shows the request and blocks that thread until the person answers `y` (once), `a` (this tool for
the rest of the session) or `n`; Ctrl-C answers no. Without a handler (no screen) the answer is no,
which is what the policy does for headless runs without `--allow`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from nova.agent.permissions import PermissionRequest

__all__ = ["Approver", "PendingApproval"]


@dataclass
class PendingApproval:
    request: PermissionRequest
    done: threading.Event = field(default_factory=threading.Event)
    allowed: bool = False

    def answer(self, allowed: bool) -> None:
        self.allowed = allowed
        self.done.set()


class Approver:
    """The `ask` callback of an interactive policy. Tools approved with `a` are remembered here, for
    this process only: the policy itself never changes, and the model has no way to reach it."""

    def __init__(self) -> None:
        self.show: Callable[[PendingApproval], None] | None = None
        self.always: set[str] = set()

    def __call__(self, request: PermissionRequest) -> bool:
        if request.tool in self.always:
            return True
        if self.show is None:
            return False
        pending = PendingApproval(request)
        self.show(pending)
        pending.done.wait()
        return pending.allowed
