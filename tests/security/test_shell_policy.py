"""Shell tricks do not get past the bash permission rules.

Every case is a command line that got through the old hand splitter: with only `echo`, `ls` and
`git status` allowed, lines that also ran `touch`; past a deny of `bash(git push*)`, spellings of
`git push` the splitter did not recognise; shell writes into Nova's own files. The other direction is
checked too: ordinary commands the rules allow stay allowed. The end-to-end cases run a real agent whose
scripted model issues the call, and look at the disk afterwards.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from nova.settings import PermissionsConfig
from nova.tools import default_registry
from nova.tools.base import Tool
from nova.tools.permissions import PermissionPolicy, ProtectedPaths

if TYPE_CHECKING:
    from tests.security.conftest import BashMode

BASH: Tool = default_registry().get("bash")  # type: ignore[assignment]
READ_ONLY_ALLOWED = ("bash(echo*)", "bash(ls*)", "bash(git status*)")


def policy(tmp_path: Path, **kw: Any) -> PermissionPolicy:
    config = PermissionsConfig(allow=kw.pop("allow", ()), deny=kw.pop("deny", ()), ask=kw.pop("ask", ()))
    return PermissionPolicy(config, interactive=False, cwd=tmp_path, **kw)


# -- with only echo, ls and git status allowed, nothing else runs --------------------------------------
SMUGGLED = [
    "ls <(touch X)",
    "echo a >(touch X)",
    "echo $'\\''; touch X",
    "echo hi # '\ntouch X",
    "echo hi #'\n touch X",
    "echo a > >(touch X)",
]
# The plain separators and substitutions the old splitter did catch; the parser must keep catching them.
STILL_CAUGHT = [
    "ls $(touch X)",
    "echo `touch X`",
    "echo \"$(touch X)\"",
    "ls; touch X",
    "ls\ntouch X",
    "ls | touch X",
    "echo a && touch X",
    "echo a || touch X",
    "ls & touch X",
    "echo \"a\\\"b\"; touch X",
    "echo 'a'\\'' b'; touch X",
    "ls {,} ; touch X",
    "echo $(\necho\n)\ntouch X",
    "ls <<EOF\n$(touch X)\nEOF",
    "echo <<< $(touch X)",
    "ls -la; (touch X)",
    "ls -la; { touch X; }",
    "echo hi; eval 'touch X'",
    "echo hi; bash -c 'touch X'",
    "echo x | sh",
    "echo a; $(echo touch) X",
    "ls `\ntouch X`",
]


@pytest.mark.parametrize("command", SMUGGLED + STILL_CAUGHT)
def test_allowing_read_commands_does_not_allow_a_smuggled_one(command: str, tmp_path: Path) -> None:
    decision = policy(tmp_path, allow=READ_ONLY_ALLOWED).check(BASH, {"command": command})
    assert not decision.allowed, (command, decision)


# -- past a deny of `bash(git push*)`, no spelling of git push runs ------------------------------------
PUSHES = [
    "git -C . push",
    "git --no-pager push",
    "git -c a.b=c push",
    "git --git-dir=.git --work-tree . push",
    "git -P push origin main",
    "(git push)",
    "'git' push",
    "\"git\" \"push\"",
    "git pu''sh",
    "g\\it push",
    "git $'push'",
    "timeout 5 git push",
    "timeout -k 1 5 git push",
    "nice -n 5 git push",
    "stdbuf -o0 git push",
    "stdbuf -oL -eL git push",
    "ionice -c3 git push",
    "ionice -c 2 -n 7 git push",
    "2>&1 git push",
    "/usr/bin/git push",
    "bash -lc 'git push'",
    "cat <(git push)",
    "cat >(git push)",
    "sudo -u root git push",
    "exec -a x git push",
    "xargs git push < /dev/null",
    "echo push | xargs git",
    "x=push; git $x",
    "git ${X:-push} origin",
    "git \"$(echo push)\"",
    "set -- push; git \"$@\"",
    "echo origin | xargs -n1 git push",
    "find . -maxdepth 0 -exec git push \\;",
    "find . -maxdepth 0 -execdir timeout 5 git push {} +",
    "env -i PATH=/usr/bin /usr/bin/git -C . push",
    "X=1 timeout 5 nice -n 1 git --no-pager push",
    "f() { git push; }; f",
]


# Forms the old splitter caught too.
PUSHES_STILL_CAUGHT = ["sh -c 'cd . && git push'", "for r in a; do git push; done", "bash -c \"bash -c 'git push'\""]


@pytest.mark.parametrize("command", PUSHES + PUSHES_STILL_CAUGHT)
def test_a_deny_rule_catches_every_spelling(command: str, tmp_path: Path) -> None:
    p = policy(tmp_path, deny=("bash(git push*)",), allowed_tools=frozenset({"bash"}))
    decision = p.check(BASH, {"command": command})
    assert not decision.allowed, (command, decision)
    assert decision.rule == "bash(git push*)"


UNRESOLVABLE = [
    "eval 'git push'",
    "bash -c \"$CMD\"",
    "$GIT push",
    "$(echo git) push",
    "`echo git` push",
    "g$@it push",
    "source ./push.sh",
    ". ./push.sh",
    "echo 'git push' | bash",
    "sh push.sh",
    "env -S 'git push'",
    "sudo -s 'git push'",
    "{g,}it push",
    "gi* push",
    "git -c alias.p=push p",
    "echo x | xargs -I{} git {}",
    "git push (",  # does not parse
]


@pytest.mark.parametrize("command", UNRESOLVABLE)
def test_what_cannot_be_resolved_is_never_allowed_past_a_deny_rule(command: str, tmp_path: Path) -> None:
    # Even `--yes` and `--allow bash` do not cover it: the command might be the denied one.
    p = policy(tmp_path, deny=("bash(git push*)",), allow=("bash",), allowed_tools=frozenset({"bash"}), yes=True)
    decision = p.check(BASH, {"command": command})
    assert not decision.allowed, (command, decision)


@pytest.mark.parametrize("command", ["eval 'ls'", "bash -c \"$CMD\"", "$LS -la", "source env.sh"])
def test_no_rule_allows_what_cannot_be_resolved(command: str, tmp_path: Path) -> None:
    p = policy(tmp_path, allow=("bash(eval*)", "bash(bash*)", "bash(*)", "bash(source*)", "bash(ls*)"))
    verdict = p.evaluate(BASH, {"command": command})
    assert verdict.outcome == "ask", verdict
    assert "cannot be checked" in verdict.reason


def test_the_user_may_still_approve_what_cannot_be_resolved(tmp_path: Path) -> None:
    asked: list[str] = []
    config = PermissionsConfig(deny=("bash(git push*)",))
    p = PermissionPolicy(config, interactive=True, cwd=tmp_path, yes=True,
                         ask=lambda request: asked.append(request.reason) or True)
    assert p.check(BASH, {"command": "eval \"$X\""}).allowed
    assert len(asked) == 1 and "cannot be checked" in asked[0]


# -- ordinary commands stay allowed ---------------------------------------------------------------------
STILL_ALLOWED = [
    "ls -la",
    "ls",
    "git status",
    "git status --short 2>&1",
    "echo \"a # b\"",
    "echo 'a; touch X'",
    "echo hi # a comment",
    "ls | grep x",
    "ls -la src && git status",
    "'ls' -la",
    "echo $'tab\\there'",
    "echo $HOME",
    "ls *.py",
]


@pytest.mark.parametrize("command", STILL_ALLOWED)
def test_allowed_commands_stay_allowed(command: str, tmp_path: Path) -> None:
    decision = policy(tmp_path, allow=(*READ_ONLY_ALLOWED, "bash(grep *)")).check(BASH, {"command": command})
    assert decision.allowed, (command, decision)


@pytest.mark.parametrize("command", ["echo 'git push'", "git pushd", "git log --oneline", "git status && make",
                                     "grep -r 'git push' docs", "cat <<'EOF'\ngit push\nEOF",
                                     "find . -name '*.py' | xargs grep -l foo", "find . -exec grep -H foo {} +",
                                     "git log $REV", "echo \"$HOME\" | git status"])
def test_a_deny_rule_leaves_lookalikes_alone(command: str, tmp_path: Path) -> None:
    p = policy(tmp_path, deny=("bash(git push *)", "bash(git push)"), allowed_tools=frozenset({"bash"}))
    assert p.check(BASH, {"command": command}).allowed, command


# -- shell writes into Nova's own files -------------------------------------------------------------------
@pytest.fixture()
def world(tmp_path: Path, bash_mode: BashMode) -> dict[str, Path]:
    home = tmp_path / "home"
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    (project / "src").mkdir()
    (project / ".nova" / "memory").mkdir(parents=True)
    (project / ".nova" / "skills").mkdir()
    home.mkdir()
    # The mode is in the config from the start, so the run rewriting it changes no byte of it.
    config = {"permissions": {"deny": ["bash(git push*)"]}, "sandbox": bash_mode.sandbox}
    (home / "config.json").write_text(json.dumps(config))
    for path in (home / "policy.md", project / "NOVA.md", project / "AGENTS.md", project / "src" / "CLAUDE.md",
                 project / ".nova" / "memory" / "user_role.md", project / "notes.md"):
        path.write_text("original\n")
    return {"home": home, "project": project}


SHELL_WRITES = [
    "echo '{\"permissions\":{\"allow\":[\"bash\"]}}' > {home}/config.json",
    "echo forged >> {home}/policy.md",
    "echo forged &> NOVA.md",
    "echo forged >| AGENTS.md",
    "echo forged | tee -a src/CLAUDE.md",
    "echo forged | tee .nova/memory/forged.md > /dev/null",
    "cp notes.md {home}/config.json",
    "cp -t .nova/memory notes.md",
    "mv notes.md AGENTS.md",
    "mv .nova/memory/user_role.md /tmp/",
    "install notes.md NOVA.md",
    "ln -sf notes.md NOVA.md",
    "rm .nova/memory/user_role.md",
    "rm -rf .nova",
    "touch .nova/skills/evil.md",
    "mkdir -p .nova/skills/evil",
    "sed -i s/original/forged/ src/CLAUDE.md",
    "sed -i.bak -e s/original/forged/ NOVA.md",
    "truncate -s 0 {home}/policy.md",
    "dd if=notes.md of={home}/config.json",
    "chmod 777 {home}/config.json",
    "cd .nova/memory && echo forged > forged.md",
    "cd src; echo forged > CLAUDE.md",
    "bash -c 'echo forged > NOVA.md'",
    "(echo forged) > NOVA.md",
    "{ echo forged; } >> AGENTS.md",
    "timeout 5 tee NOVA.md < notes.md",
    "echo forged > 'NO''VA.md'",
    "echo forged > ./src/../.nova/config.json",
]


def run_bash(world: dict[str, Path], bash_mode: BashMode, command: str) -> str:
    return bash_mode.run(command, home=world["home"], cwd=world["project"], allow=("bash",)).content


def snapshot(world: dict[str, Path]) -> dict[Path, bytes | None]:
    """Every file Nova protects as it is now, and the project's tree (a new or removed file shows); Nova's
    own caches (`.nova-scan`) are left out."""
    paths = [p for p in (*world["home"].glob("*"), *world["project"].rglob("*"))
             if ".nova-scan" not in p.parts and p.name != "notes.md"]
    return {p: p.read_bytes() if p.is_file() else None for p in paths if p.is_file() or world["project"] in p.parents}


@pytest.mark.parametrize("command", SHELL_WRITES)
def test_shell_writes_to_protected_paths_are_refused(world: dict[str, Path], bash_mode: BashMode,
                                                    command: str) -> None:
    before = snapshot(world)
    message = run_bash(world, bash_mode, command.replace("{home}", str(world["home"])))
    assert message.startswith("Permission denied:"), message
    assert "is refused: it writes" in message and "no tool may change it" in message
    after = snapshot(world)
    assert {p: after.get(p) for p in before} == before
    assert {p for p in after if world["project"] in p.parents} == {p for p in before if world["project"] in p.parents}


def test_a_protected_write_is_refused_by_the_policy_whatever_the_rules(tmp_path: Path) -> None:
    protected = ProtectedPaths(dirs=(tmp_path / ".nova",), names=frozenset({"NOVA.md"}))
    p = policy(tmp_path, allow=("bash",), yes=True, allowed_tools=frozenset({"bash"}), protected=protected)
    decision = p.check(BASH, {"command": "echo x > NOVA.md"})
    assert not decision.allowed and decision.rule == "protected"
    assert "NOVA.md" in decision.reason
    assert p.check(BASH, {"command": "echo x > notes.md && cat NOVA.md"}).allowed


def test_ordinary_shell_writes_still_run(world: dict[str, Path], bash_mode: BashMode) -> None:
    message = run_bash(world, bash_mode, "echo updated > notes.md && cp notes.md copy.md")
    assert not message.startswith("Permission denied"), message
    assert (world["project"] / "copy.md").read_text() == "updated\n"


# -- end to end: a bypass issued by the model through the real agent loop --------------------------------
@pytest.mark.parametrize("command", ["ls <(touch X)", "echo a >(touch X)", "echo $'\\''; touch X",
                                     "echo hi # '\ntouch X"])
def test_a_bypass_from_the_model_creates_nothing(tmp_path: Path, bash_mode: BashMode, command: str) -> None:
    project = tmp_path / "project"
    project.mkdir()
    result = bash_mode.run(command, home=tmp_path / "home", cwd=project, yes=False,
                           config={"permissions": {"allow": list(READ_ONLY_ALLOWED)}})
    assert result.is_error and result.content.startswith("Permission denied:"), result.content
    assert not (project / "X").exists()


def test_a_denied_command_behind_a_wrapper_never_runs(tmp_path: Path, bash_mode: BashMode) -> None:
    project = tmp_path / "project"
    project.mkdir()
    result = bash_mode.run("timeout 5 /usr/bin/t\\ouch X", home=tmp_path / "home", cwd=project, yes=False,
                           allow=("bash",), config={"permissions": {"deny": ["bash(touch *)"]}})
    assert "deny rule `bash(touch *)`" in result.content
    assert not (project / "X").exists()
