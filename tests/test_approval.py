"""One approval protocol for every surface: allow once, allow for the session (per rule or tool), deny."""

from __future__ import annotations

from pathlib import Path

from nova.settings import PermissionsConfig
from nova.tools import default_registry
from nova.tools.approval import Answer, RememberingApprover, SessionGrants, answer_of
from nova.tools.permissions import PermissionPolicy, PermissionRequest

REGISTRY = default_registry()
BASH = REGISTRY.get("bash")
EDIT = REGISTRY.get("edit_file")
assert BASH is not None and EDIT is not None


class Scripted:
    """A prompt that answers from a list and records what it was shown."""

    def __init__(self, *answers: Answer | bool) -> None:
        self.answers = list(answers)
        self.asked: list[PermissionRequest] = []

    def __call__(self, request: PermissionRequest) -> Answer | bool:
        self.asked.append(request)
        return self.answers.pop(0)


def _policy(tmp_path: Path, prompt: Scripted, **rules: tuple[str, ...]) -> PermissionPolicy:
    return PermissionPolicy(PermissionsConfig(**rules), interactive=True, cwd=tmp_path,
                            ask=RememberingApprover(prompt))


def test_answers_read_fail_closed() -> None:
    assert answer_of(True) is Answer.ONCE and answer_of(False) is Answer.DENY
    assert answer_of("session") is Answer.SESSION and answer_of(Answer.ONCE) is Answer.ONCE
    for odd in (None, "yes", 1, "always"):
        assert answer_of(odd) is Answer.DENY


def test_once_is_asked_again_and_session_is_remembered_per_rule(tmp_path: Path) -> None:
    prompt = Scripted(Answer.ONCE, Answer.SESSION, Answer.ONCE)
    policy = _policy(tmp_path, prompt, ask=("bash(git push*)",))
    push = {"command": "git push origin main"}
    first = policy.check(BASH, push, call_id="toolu_1")
    assert first.allowed and first.reason == "approved by the user"
    assert prompt.asked[0].call_id == "toolu_1" and prompt.asked[0].rule == "bash(git push*)"
    assert prompt.asked[0].summary == "bash: git push origin main"
    second = policy.check(BASH, push, call_id="toolu_2")
    assert second.allowed and "for this session" in second.reason
    # Remembered for the rule: another push is not asked about ...
    assert policy.check(BASH, {"command": "git push --tags"}).allowed
    assert len(prompt.asked) == 2
    # ... but a call the rule does not cover (the default ask for bash) still is.
    assert policy.check(BASH, {"command": "make"}).allowed
    assert len(prompt.asked) == 3 and prompt.asked[2].rule is None


def test_deny_refuses_and_a_grant_never_overrides_a_deny_rule(tmp_path: Path) -> None:
    prompt = Scripted(Answer.SESSION, Answer.DENY)
    policy = _policy(tmp_path, prompt, deny=("bash(rm -rf*)",))
    assert policy.check(BASH, {"command": "ls"}).allowed  # bash granted for the session
    refused = policy.check(BASH, {"command": "rm -rf build"})
    assert not refused.allowed and refused.rule == "bash(rm -rf*)"
    assert len(prompt.asked) == 1  # a deny verdict never reaches the person
    edit = policy.check(EDIT, {"path": "x.py", "old_text": "a", "new_text": "b"})
    assert not edit.allowed and "declined" in edit.reason


def test_a_call_only_the_user_may_approve_is_asked_each_time(tmp_path: Path) -> None:
    prompt = Scripted(Answer.SESSION, Answer.ONCE)
    policy = _policy(tmp_path, prompt, deny=("bash(git push*)",))
    unresolved = {"command": 'eval "$cmd"'}
    assert policy.check(BASH, unresolved).allowed
    assert policy.check(BASH, unresolved).allowed
    assert len(prompt.asked) == 2 and all(r.user_only for r in prompt.asked)


def test_a_broken_prompt_is_a_denial(tmp_path: Path) -> None:
    def broken(request: PermissionRequest) -> Answer:
        raise RuntimeError("the screen went away")

    policy = PermissionPolicy(PermissionsConfig(), interactive=True, cwd=tmp_path, ask=RememberingApprover(broken))
    assert not policy.check(BASH, {"command": "ls"}).allowed


def test_grants_describe_what_they_cover() -> None:
    grants = SessionGrants()
    by_rule = PermissionRequest(tool="bash", summary="bash: git push", reason="r", rule="bash(git push*)")
    by_tool = PermissionRequest(tool="edit_file", summary="edit_file: x", reason="r")
    assert grants.describe(by_rule) == "every call the rule `bash(git push*)` asks about"
    assert grants.describe(by_tool) == "every edit_file call"
    grants.grant(by_tool)
    assert grants.covers(by_tool) and not grants.covers(by_rule)
