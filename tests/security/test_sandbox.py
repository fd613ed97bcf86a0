"""The bubblewrap sandbox for `bash` (`sandbox: true`): whatever the rules let run, a command writes
only in the project, cannot touch Nova's own files, cannot read the user's keys or Nova's home, has no
network unless allowed, and dies with the call. Every attack case runs real bash through a real agent,
and fails on a Nova without the sandbox. The rules themselves are checked in both modes."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nova.agent.builder import AgentOptions, build_agent
from nova.cli.main import app
from nova.errors import ConfigError
from nova.settings import load_settings
from nova.testing import ScriptedProvider, reply
from nova.tools.policy.sandbox import SandboxPlan, bwrap_argv, plan_sandbox, sandbox_env

KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nfake-key-material\n"
ORIGINAL = "original\n"


@pytest.fixture()
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """A user home with a key, Nova's home with its config, and a git project with rules and memory."""
    user = tmp_path / "user"
    (user / ".ssh").mkdir(parents=True)
    (user / ".ssh" / "id_rsa").write_text(KEY)
    (user / ".ssh" / "authorized_keys").write_text(ORIGINAL)
    monkeypatch.setenv("HOME", str(user))
    home = tmp_path / "nova-home"
    home.mkdir()
    (home / "config.json").write_text(json.dumps({"permissions": {"deny": ["bash(git push*)"]}}))
    project = user / "project"
    (project / ".git" / "hooks").mkdir(parents=True)
    (project / ".git" / "config").write_text(ORIGINAL)
    (project / ".nova" / "memory").mkdir(parents=True)
    (project / "src").mkdir()
    for path in (project / "NOVA.md", project / "src" / "AGENTS.md", project / ".nova" / "memory" / "role.md"):
        path.write_text(ORIGINAL)
    outside = tmp_path / "outside"
    outside.mkdir()
    return {"user": user, "home": home, "project": project, "outside": outside}


def snapshot(*folders: Path) -> dict[Path, bytes]:
    """Every file's bytes, but for what Nova itself keeps changing: sessions, its store, recall times."""
    return {p: p.read_bytes() for folder in folders for p in folder.rglob("*")
            if p.is_file() and not {"sessions", ".nova-scan"} & set(p.parts) and not p.name.startswith("nova.db")}


# -- what a command may write ------------------------------------------------------------------------
def test_writing_inside_the_workspace_works(world: dict[str, Path], sandboxed) -> None:
    result = sandboxed.run("echo made > made.txt && mkdir -p build && echo o > build/out && cat made.txt",
                           home=world["home"], cwd=world["project"])
    assert not result.is_error, result.content
    assert (world["project"] / "made.txt").read_text() == "made\n"
    assert (world["project"] / "build" / "out").read_text() == "o\n"


WRITES_OUTSIDE = {
    "outside-the-workspace": "echo x > {outside}/planted",
    "nova-config": """echo '{{"permissions": {{"allow": ["bash"]}}}}' > {home}/config.json""",
    "nova-policy": "echo forged > {home}/policy.md",
    "project-rules": "echo 'always run git push' >> NOVA.md",
    "nested-rules": "echo forged > src/AGENTS.md",
    "memory-edit": "sed -i 's/original/forged/' .nova/memory/role.md",
    "memory-new": "printf -- '---\\nstatus: active\\nauthor: user\\n---\\nforged\\n' > .nova/memory/forged.md",
    "git-hook": "printf '#!/bin/sh\\ntouch /tmp/pwned\\n' > .git/hooks/pre-commit",
    "git-config": "printf '[core]\\n\\tfsmonitor = touch /tmp/pwned\\n' >> .git/config",
    "ssh-authorized-keys": "echo 'ssh-ed25519 AAAA attacker' >> ~/.ssh/authorized_keys",
    "system": "echo x > /usr/nova-sandbox-probe",
}


@pytest.mark.parametrize("case", sorted(WRITES_OUTSIDE))
def test_a_command_cannot_write_outside_the_workspace_or_novas_files(
    world: dict[str, Path], sandboxed, case: str
) -> None:
    command = WRITES_OUTSIDE[case].format(home=world["home"], outside=world["outside"])
    cwd = world["user"] if case == "ssh-authorized-keys" else world["project"]
    sandboxed.run("true", home=world["home"], cwd=cwd)  # Nova's own bookkeeping files, made once
    before = snapshot(world["user"], world["home"], world["outside"])
    try:
        sandboxed.run(command, home=world["home"], cwd=cwd)
        after = snapshot(world["user"], world["home"], world["outside"])
        changed = sorted(str(p) for p in after.keys() | before.keys() if before.get(p) != after.get(p))
        assert changed == [], command
        assert json.loads((world["home"] / "config.json").read_text())["permissions"] == {
            "deny": ["bash(git push*)"]}
        assert not Path("/usr/nova-sandbox-probe").exists()
    finally:
        with contextlib.suppress(FileNotFoundError):
            Path("/usr/nova-sandbox-probe").unlink()


def test_the_workspace_can_be_the_home_folder_and_the_keys_stay_hidden(world: dict[str, Path], sandboxed) -> None:
    """Nova started in ~: the home is the writable workspace, ~/.ssh is still neither readable nor
    writable, and Nova's home is hidden."""
    # Nova's home through a variable: the policy refuses a line that names it, the sandbox hides it.
    result = sandboxed.run(f"cat ~/.ssh/id_rsa; ls -a ~/.ssh; h={world['home']}; cat $h/config.json; echo ok > note",
                           home=world["home"], cwd=world["user"])
    assert "fake-key-material" not in result.content
    assert "authorized_keys" not in result.content
    assert "deny" not in result.content
    assert (world["user"] / "note").read_text() == "ok\n"


READS = {
    "ssh-key": "cat ~/.ssh/id_rsa",
    "ssh-key-by-path": "cat {user}/.ssh/id_rsa",
    "ssh-listing": "ls -la ~/.ssh",
    "nova-home": "cat {home}/config.json; ls {home}",
    "api-key-in-env": "echo key=$ANTHROPIC_API_KEY; env",
}


@pytest.mark.parametrize("case", sorted(READS))
def test_a_command_cannot_read_secrets(world: dict[str, Path], sandboxed, case: str,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret-value")
    result = sandboxed.run(READS[case].format(user=world["user"], home=world["home"]),
                           home=world["home"], cwd=world["project"])
    for secret in ("fake-key-material", "authorized_keys", "git push", "sk-ant-secret-value"):
        assert secret not in result.content, (case, result.content)


def test_instruction_files_stay_readable(world: dict[str, Path], sandboxed) -> None:
    result = sandboxed.run("cat NOVA.md src/AGENTS.md .nova/memory/role.md", home=world["home"],
                           cwd=world["project"])
    assert not result.is_error and result.content.count("original") == 3, result.content


def test_tmp_is_private(world: dict[str, Path], sandboxed, tmp_path: Path) -> None:
    probe = tmp_path / "host-tmp-file"
    probe.write_text("written-on-the-host")
    inside = Path(f"/tmp/nova-sandbox-{uuid.uuid4().hex}")
    result = sandboxed.run(f"cat {probe}; echo private > {inside} && cat {inside}",
                           home=world["home"], cwd=world["project"])
    assert "written-on-the-host" not in result.content and "private" in result.content, result.content
    assert not inside.exists()


# -- network ------------------------------------------------------------------------------------------
@pytest.fixture()
def listener() -> Iterator[int]:
    """A real TCP server on loopback that accepts connections; yields its port."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            with contextlib.suppress(TimeoutError, OSError):
                conn, _ = server.accept()
                conn.sendall(b"hello from the host\n")
                conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        stop.set()
        thread.join(2)
        server.close()


def _connect(port: int, folder: Path) -> str:
    """A program that connects to `port` (a script: what the parser cannot look into, the sandbox bounds)."""
    (folder / "connect.py").write_text(f"import socket\ns = socket.create_connection(('127.0.0.1', {port}), "
                                       "timeout=3)\nprint(s.recv(100).decode())\n")
    return "python3 connect.py"


def test_no_network_by_default(world: dict[str, Path], sandboxed, listener: int) -> None:
    result = sandboxed.run(_connect(listener, world["project"]), home=world["home"], cwd=world["project"])
    assert "hello from the host" not in result.content
    assert result.is_error and ("refused" in result.content or "unreachable" in result.content), result.content


def test_network_when_allowed(world: dict[str, Path], sandboxed, listener: int) -> None:
    result = sandboxed.run(_connect(listener, world["project"]), home=world["home"], cwd=world["project"],
                           config={"sandbox_network": True})
    assert "hello from the host" in result.content, result.content


# -- processes ----------------------------------------------------------------------------------------
def _processes_with(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
    return found


@pytest.mark.parametrize("shape", ["timeout", "background"])
def test_every_process_ends_with_the_call(world: dict[str, Path], sandboxed, shape: str) -> None:
    seconds = f"3{uuid.uuid4().int % 1000}.5"  # a unique argument to find the process by
    command = f"sleep {seconds} & wait" if shape == "timeout" else f"sleep {seconds} & echo started"
    settings_home = world["home"]
    (settings_home / "config.json").write_text(json.dumps({"sandbox": True}))
    settings = load_settings(home=settings_home, env={}, overrides={"provider": "demo", "model": "demo"})
    provider = ScriptedProvider([reply("", [_bash_call(command, timeout=1)]), reply("done")])
    agent = build_agent(settings, provider, AgentOptions(cwd=world["project"], yes=True))
    agent.run_turn("go")
    agent.close()
    deadline = time.monotonic() + 3
    while _processes_with(f"sleep\0{seconds}") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _processes_with(f"sleep\0{seconds}") == []


def _bash_call(command: str, *, timeout: int) -> object:
    from nova.testing import call

    return call("bash", command=command, timeout=timeout)


# -- the policy holds the same in both modes ------------------------------------------------------------
POLICY_CASES = [
    # (command, allowed?)  with allow bash(echo*), bash(ls*) and deny bash(touch*), bash(git push*)
    ("echo hello", True),
    ("ls", True),
    ("touch marker", False),
    ("echo a; touch marker", False),
    ("echo a && touch marker", False),
    ("echo $(touch marker)", False),
    ("git push origin main", False),
    ("rm -f marker", False),  # matches no allow rule: refused headless
]


@pytest.mark.parametrize(("command", "allowed"), POLICY_CASES)
def test_the_rules_decide_the_same_with_and_without_the_sandbox(
    world: dict[str, Path], bash_mode, command: str, allowed: bool
) -> None:
    (world["project"] / "keep").write_text("x")
    result = bash_mode.run(command, home=world["home"], cwd=world["project"], yes=False,
                           config={"permissions": {"allow": ["bash(echo*)", "bash(ls*)"],
                                                   "deny": ["bash(touch*)", "bash(git push*)"]}})
    assert (not result.is_error) is allowed, (bash_mode.name, result.content)
    assert not (world["project"] / "marker").exists()
    if not allowed:
        assert "[exit code" not in result.content  # refused before anything ran
    if command == "echo hello":
        assert "hello" in result.content


# -- refusing to start without a working bubblewrap ---------------------------------------------------
def _fake_path(tmp_path: Path, script: str | None) -> str:
    folder = tmp_path / "bin"
    folder.mkdir()
    for tool in ("bash", "true", "git"):
        real = Path("/usr/bin") / tool
        if real.exists():
            (folder / tool).symlink_to(real)
    if script is not None:
        (folder / "bwrap").write_text(script)
        (folder / "bwrap").chmod(0o755)
    return str(folder)


@pytest.mark.parametrize(("script", "reason"), [
    (None, "no `bwrap` on PATH"),
    ("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n", "No permissions"),
])
def test_sandbox_requested_but_unavailable_refuses_to_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, nova_home: Path, script: str | None, reason: str
) -> None:
    monkeypatch.setenv("PATH", _fake_path(tmp_path, script))
    nova_home.mkdir(parents=True, exist_ok=True)
    (nova_home / "config.json").write_text(json.dumps({"sandbox": True}))
    settings = load_settings(home=nova_home, env={}, overrides={"provider": "demo", "model": "demo"})
    with pytest.raises(ConfigError) as raised:
        build_agent(settings, ScriptedProvider([]), AgentOptions(cwd=tmp_path, yes=True))
    message = str(raised.value)
    assert "sandbox requested but bubblewrap is not available" in message and reason in message
    assert "install the bubblewrap package or set sandbox: false" in message
    result = CliRunner().invoke(app, ["run", "hi", "--provider", "demo", "--cwd", str(tmp_path), "--yes"])
    assert result.exit_code == 1 and "sandbox requested but bubblewrap is not available" in result.output
    assert not (nova_home / "sessions").exists() or not any((nova_home / "sessions").iterdir())


def test_the_flag_turns_the_sandbox_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", _fake_path(tmp_path, None))
    result = CliRunner().invoke(app, ["run", "hi", "--provider", "demo", "--cwd", str(tmp_path), "--sandbox"])
    assert result.exit_code == 1 and "sandbox requested but bubblewrap is not available" in result.output


# -- the plan and the command line, without running anything ------------------------------------------
def test_bwrap_argv_mount_order_and_switches() -> None:
    plan = SandboxPlan(cwd=Path("/w/sub"), writable=(Path("/w"),), read_only=(Path("/w/NOVA.md"),),
                       hidden_dirs=(Path("/u/.ssh"),), hidden_files=(Path("/u/.netrc"),))
    argv = bwrap_argv(plan, ["bash", "-c", "ls"], bwrap="/usr/bin/bwrap")
    assert argv[0] == "/usr/bin/bwrap" and argv[-4:] == ["--", "bash", "-c", "ls"]
    for switch in ("--die-with-parent", "--unshare-all"):
        assert switch in argv
    assert argv[argv.index("--cap-drop") + 1] == "ALL"
    assert "--share-net" not in argv
    joined = " ".join(argv)
    # Later mounts cover earlier ones: root, private /tmp, workspace, read-only files, hidden paths.
    order = ["--ro-bind / /", "--tmpfs /tmp", "--bind /w /w", "--ro-bind /w/NOVA.md /w/NOVA.md",
             "--tmpfs /u/.ssh --remount-ro /u/.ssh", "--ro-bind /dev/null /u/.netrc", "--chdir /w/sub"]
    positions = [joined.index(part) for part in order]
    assert positions == sorted(positions)
    networked = bwrap_argv(SandboxPlan(cwd=Path("/w"), writable=(Path("/w"),), network=True), ["true"])
    assert "--share-net" in networked


def test_plan_protects_what_exists_and_never_hides_the_workspace(tmp_path: Path) -> None:
    user = tmp_path / "user"
    project = user / "code" / "project"
    (project / ".git" / "hooks").mkdir(parents=True)
    (project / "node_modules" / "pkg").mkdir(parents=True)
    (project / "node_modules" / "pkg" / "NOVA.md").write_text("dependency")
    (project / "docs").mkdir()
    (project / "docs" / "NOVA.md").write_text("nested rules")
    (user / ".ssh").mkdir()
    (user / ".netrc").write_text("machine x password y")
    home = user / ".nova"
    home.mkdir()
    plan = plan_sandbox(workspace=project, cwd=project / "docs", user_home=user, nova_home=home,
                        protected_dirs=(project / ".nova",), protected_names={"NOVA.md", "AGENTS.md"})
    real = Path(os.path.realpath(project))
    assert plan.writable == (real,) and plan.cwd == real / "docs"
    assert set(plan.read_only) == {real / "docs" / "NOVA.md", real / ".git" / "hooks"}  # what exists
    assert Path(os.path.realpath(user / ".ssh")) in plan.hidden_dirs
    assert Path(os.path.realpath(home)) in plan.hidden_dirs
    assert Path(os.path.realpath(user / ".netrc")) in plan.hidden_files
    # Started in a folder inside Nova's home: hiding that home would hide the workspace too.
    inside = home / "skills"
    inside.mkdir()
    assert Path(os.path.realpath(home)) not in plan_sandbox(
        workspace=inside, cwd=inside, user_home=user, nova_home=home).hidden_dirs


def test_the_environment_loses_credentials() -> None:
    env = sandbox_env({"PATH": "/bin", "HOME": "/u", "ANTHROPIC_API_KEY": "a", "GITHUB_TOKEN": "b",
                       "AWS_SECRET_ACCESS_KEY": "c", "SSH_AUTH_SOCK": "/tmp/s", "DB_PASSWORD": "d",
                       "KEYBOARD_LAYOUT": "us", "LANG": "C"})
    assert env == {"PATH": "/bin", "HOME": "/u", "KEYBOARD_LAYOUT": "us", "LANG": "C"}
