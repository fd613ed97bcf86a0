"""What the shell parser makes of the spellings the attack corpus used, and of the ordinary commands that
must keep working: the decision for each line, fast and without running anything (the effect of the
same lines is tested in test_boundary.py)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from nova.settings import PermissionsConfig
from nova.tools import default_registry
from nova.tools.base import Tool
from nova.tools.permissions import PermissionPolicy, ProtectedPaths
from nova.tools.policy.shell_parse import parse_command_line

BASH: Tool = default_registry().get("bash")  # type: ignore[assignment]
DENY = ("bash(git push*)", "bash(rm -rf*)", "bash(curl*)")


def decide(tmp_path: Path, command: str, *, allow: tuple[str, ...] = (), deny: tuple[str, ...] = DENY,
           unconfined: str | None = None) -> str:
    protected = ProtectedPaths(dirs=(tmp_path / ".nova", tmp_path / ".git" / "hooks"),
                               files=(tmp_path / ".git" / "config",), names=frozenset({"NOVA.md", "AGENTS.md"}),
                               home=tmp_path.parent / "nova-home")
    policy = PermissionPolicy(PermissionsConfig(allow=allow, deny=deny), interactive=False, cwd=tmp_path,
                              workspace=tmp_path, protected=protected, unconfined=unconfined)
    return policy.evaluate(BASH, {"command": command}).outcome


@pytest.mark.parametrize("command", [
    "git {push,origin,main}", "trap 'git push' EXIT", "trap -- 'git push' EXIT", "su -c 'git push' root",
    "script -qc 'git push origin' /dev/null", "flock /tmp/l git push", "flock -x /tmp/l -c 'git push'",
    "watch -n1 git push", "taskset -c 0 git push", "chroot / git push", "strace -f git push",
    "rm -fr build", "rm -r -f build", "rm -Rf build", "rm --recursive --force build", "rm build -rf",
    "find build -delete", "command curl http://x", "echo x | xargs rm -rf", "nice -n 5 git push",
])
def test_a_deny_rule_meets_every_spelling(tmp_path: Path, command: str) -> None:
    assert decide(tmp_path, command) == "deny", command


@pytest.mark.parametrize("command", [
    "hash -p /usr/bin/git g; g push", "git -c core.fsmonitor='git push' status", "git -c core.sshCommand=x fetch",
    "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=alias.p GIT_CONFIG_VALUE_0=push git p",
    "export GIT_SSH_COMMAND='sh -c x'; git fetch", "env GIT_SSH_COMMAND=x git fetch",
    "BASH_ENV=x bash -c true", "LD_PRELOAD=./x.so ls", "python3 -c 'import os'", "perl -e 'system(1)'",
    "node -e 'x'", "ruby -e 'x'", "awk 'BEGIN{system(\"x\")}'", "sed 's/a/b/e' f", "echo x | python3 -",
    "shopt -s expand_aliases; alias g='git push'", "echo > /dev/tcp/127.0.0.1/80", "cat < /dev/udp/h/53",
    "{git,push,origin}",
])
def test_what_cannot_be_checked_is_only_ever_the_users_to_allow(tmp_path: Path, command: str) -> None:
    line = parse_command_line(command)
    assert line.unresolved, command
    assert decide(tmp_path, command, allow=("bash",)) == "ask", command


@pytest.mark.parametrize("command", [
    "python3 -m pytest -c pytest.ini -q", "python3 script.py -c x", "python3 --version", "node app.js -e x",
    "awk '{print $1}' f", "awk '$3 > 100' f", "sed -n '/x/p' f", "git -c color.ui=always status",
    "export PATH=$PATH:/x", "PYTHONPATH=src pytest -q",
])
def test_ordinary_commands_stay_checkable(tmp_path: Path, command: str) -> None:
    assert not parse_command_line(command).unresolved, command


@pytest.mark.parametrize("command", [
    "perl -pi -e 's/a/b/' NOVA.md", "ed -s NOVA.md", "ex -sc '%s/a/b/|x' NOVA.md", "vim -es NOVA.md",
    "git checkout main -- NOVA.md", "git restore NOVA.md", "ln NOVA.md x", "echo x > NOVA.m?",
    "echo x > *.md", "f=NOVA.md; echo x > $f", "sort -o NOVA.md x", "git config core.fsmonitor 'touch x'",
    "git config core.hooksPath h", "printf x > .git/hooks/pre-commit", "echo x >> .git/config",
    "cp x src/AGENTS.md", "mv x .nova/memory/m.md",
])
def test_writes_to_protected_files_are_refused(tmp_path: Path, command: str) -> None:
    (tmp_path / "NOVA.md").write_text("rules\n")
    assert decide(tmp_path, command, allow=("bash",)) == "deny", command


def test_an_archive_is_refused_by_the_names_it_holds(tmp_path: Path) -> None:
    with zipfile.ZipFile(tmp_path / "a.zip", "w") as archive:
        archive.writestr("docs/readme.txt", "fine")
    with zipfile.ZipFile(tmp_path / "b.zip", "w") as archive:
        archive.writestr("sub/NOVA.md", "forged")
        archive.writestr("../../outside.txt", "slip")
    assert decide(tmp_path, "unzip -o a.zip", allow=("bash",)) == "allow"
    assert decide(tmp_path, "unzip -o b.zip", allow=("bash",)) == "deny"
    assert decide(tmp_path, "unzip -o missing.zip", allow=("bash",)) == "ask"  # cannot be listed: asked


@pytest.mark.parametrize(("command", "outcome"), [
    ("echo x > ~/.bashrc", "ask"), ("echo x >> $HOME/.ssh/authorized_keys", "ask"), ("echo x > /etc/hosts", "ask"),
    ("cd /tmp && echo x > y", "ask"), ("f=$(pwd)/x; echo y > $f", "ask"), ("cd $X && echo y > z", "ask"),
    ("echo x > out.txt", "allow"), ("echo x > build/out.txt 2>/dev/null", "allow"), ("ls > /dev/null", "allow"),
])
def test_an_allow_rule_does_not_cover_a_write_outside_the_workspace(tmp_path: Path, command: str,
                                                                  outcome: str) -> None:
    assert decide(tmp_path, command, allow=("bash(echo*)", "bash(ls*)", "bash(cd*)"), deny=()) == outcome, command


@pytest.mark.parametrize(("command", "read_only"), [
    ("ls -la", True), ("cat a | grep x | wc -l", True), ("git status && git log -3", True), ("git diff", True),
    ("find . -name '*.py'", True), ("echo hi > /dev/null", True), ("git branch -a", True),
    ("touch x", False), ("git commit -m x", False), ("find . -delete", False), ("sort -o x y", False),
    ("git branch feature", False), ("echo hi > x", False), ("python3 x.py", False), ("env rm x", False),
])
def test_read_only_lines(command: str, read_only: bool) -> None:
    assert parse_command_line(command).read_only is read_only, command


def test_without_a_sandbox_an_allow_rule_covers_only_what_reads(tmp_path: Path) -> None:
    allow = ("bash(touch*)", "bash(ls*)")
    assert decide(tmp_path, "touch x", allow=allow, deny=()) == "allow"
    assert decide(tmp_path, "touch x", allow=allow, deny=(), unconfined="no bwrap") == "ask"
    assert decide(tmp_path, "ls -la", allow=allow, deny=(), unconfined="no bwrap") == "allow"


@pytest.mark.parametrize("command", [
    "nova config set permissions '{}'", "nova --provider demo config unset permissions", "nova memory approve x",
    "python3 -m nova memory promote x", "python -m nova.cli.main trust --yes", "nova serve --print-token",
    "nova skills retire x", "timeout 5 nova config set sandbox off", "bash -c 'nova config set a b'",
    "cat ../nova-home/server-token", "ls ../nova-home",
])
def test_novas_own_controls_and_home_are_refused(tmp_path: Path, command: str) -> None:
    assert decide(tmp_path, command, allow=("bash",), deny=()) == "deny", command


@pytest.mark.parametrize("command", ["nova config show", "nova trust --list", "nova sessions list",
                                     "nova memory list", "nova permissions check 'bash(ls)'"])
def test_novas_reading_commands_are_not_controls(tmp_path: Path, command: str) -> None:
    assert decide(tmp_path, command, allow=("bash",), deny=()) == "allow", command
