"""How a person answers a tool call the permission rules send to them: one protocol for every surface.

The policy (nova.tools.permissions) decides first; only an "ask" verdict reaches an `Approver`. The
TUI, `nova run` in a terminal and the server (the web page and the API) each supply one, and each
answer is one of three:

- `Answer.ONCE`: run this call;
- `Answer.SESSION`: run it, and every later call the same rule asks about, for the life of this
  session (remembered by `SessionGrants`, in memory, never written to the config);
- `Answer.DENY`: refuse it. No answer in time, a closed prompt or a broken one is a denial too; a
  surface that gave up waiting returns `NoAnswer(reason)` instead, so the denial the model and the
  record get says why ("timed out after 300 s") rather than that the user declined.

A grant is keyed by what made the policy ask: the ask rule (`bash(git push*)`) when one did, else the
tool (`edit_file` asks because it changes files). A call only the user may approve (a command that
cannot be checked against the deny rules, see `Verdict.user_only`) is never covered by a grant: the
person is asked each time. A deny verdict never reaches an approver, so no answer overrides a deny rule.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

__all__ = ["Answer", "Approver", "NoAnswer", "PermissionRequest", "RememberingApprover", "SessionGrants", "answer_of", "grant_key"]


@dataclass(frozen=True, kw_only=True)
class PermissionRequest:
    """What the `ask` callback is shown when a call needs the user's approval."""

    tool: str
    input: Mapping[str, Any] = field(default_factory=dict)
    summary: str
    """One line for a prompt, e.g. `bash: git push origin main`."""
    reason: str
    """Why the user is asked: an `ask` rule, or the default for tools that change things."""
    rule: str | None = None
    call_id: str = ""
    """The model's id for this tool call (`toolu_…`), when the agent knows it: surfaces answer by it."""
    user_only: bool = False
    """Only an answer for this call may approve it: no session grant covers it (see `Verdict.user_only`)."""
    diff: str = ""
    """For `edit_file` and `write_file`: the unified diff the call would make (nova.tools.change_preview),
    "" when it would not apply or is not a file change."""


class Answer(StrEnum):
    ONCE = "once"
    SESSION = "session"
    DENY = "deny"

    @property
    def allows(self) -> bool:
        return self is not Answer.DENY


@dataclass(frozen=True, slots=True)
class NoAnswer:
    """A denial because nobody answered: `reason` says what happened (`timed out after 300 s`)."""

    reason: str


class Approver(Protocol):
    """Called on the agent's worker thread; blocks until the person answers (or the surface gives up,
    which is `Answer.DENY` or `NoAnswer`). A plain `bool` is read as once / deny."""

    def __call__(self, request: PermissionRequest, /) -> Answer | NoAnswer | bool: ...


def answer_of(value: object) -> Answer:
    """What an approver's return value means; anything unexpected is a denial (fail closed)."""
    if isinstance(value, NoAnswer):
        return Answer.DENY
    if isinstance(value, Answer):
        return value
    if value is True:
        return Answer.ONCE
    if isinstance(value, str):
        try:
            return Answer(value)
        except ValueError:
            return Answer.DENY
    return Answer.DENY


def grant_key(request: PermissionRequest) -> str:
    """What an "allow for session" answer covers: the rule that asked, else the tool."""
    return f"rule:{request.rule}" if request.rule else f"tool:{request.tool}"


class SessionGrants:
    """The "allow for session" answers of one session. Thread-safe; lives as long as the session's
    approver, and the model has no way to reach it."""

    def __init__(self) -> None:
        self._keys: set[str] = set()
        self._lock = threading.Lock()

    def covers(self, request: PermissionRequest) -> bool:
        if request.user_only:
            return False
        with self._lock:
            return grant_key(request) in self._keys

    def grant(self, request: PermissionRequest) -> None:
        if request.user_only:
            return
        with self._lock:
            self._keys.add(grant_key(request))

    def clear(self) -> None:
        """Forget every grant: the session they were given for is over, or the person left it."""
        with self._lock:
            self._keys.clear()

    def describe(self, request: PermissionRequest) -> str:
        """What "allow for session" would cover, for a prompt."""
        if request.user_only:
            return "this call only (it cannot be checked before it runs)"
        return f"every call the rule `{request.rule}` asks about" if request.rule else f"every {request.tool} call"


class RememberingApprover:
    """An `Approver` over a prompt: asks through `prompt` unless a session grant covers the call, and
    remembers the "allow for session" answers. A prompt that raises is a denial (the policy catches it)."""

    def __init__(self, prompt: Callable[[PermissionRequest], Answer | NoAnswer | bool],
                 grants: SessionGrants | None = None) -> None:
        self.prompt = prompt
        self.grants = grants or SessionGrants()

    def __call__(self, request: PermissionRequest, /) -> Answer | NoAnswer:
        if self.grants.covers(request):
            return Answer.SESSION
        given = self.prompt(request)
        if isinstance(given, NoAnswer):
            return given
        answer = answer_of(given)
        if answer is Answer.SESSION:
            self.grants.grant(request)
        return answer
