"""Instruction files are repository content, so their `@imports` are untrusted: only regular files under
the project root or Nova's home load, within a size cap, and never anything that looks like key material.
Each refused attempt is one skip line naming the importing file, the `@target` and why, and its content
reaches neither the rule set nor the system prompt `build_agent` sends."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from nova.memory.instructions import InstructionsConfig, RuleSet, load_rules

SECRET = "TOP-SECRET-CONTENT-7d1f"
FAKE_KEY = f"-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA{SECRET}\n-----END OPENSSH PRIVATE KEY-----\n"


@pytest.fixture()
def world(tmp_path: Path, nova_home: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """A user home with a key in ~/.ssh, a project (git root) inside a folder with an outside file."""
    user = tmp_path / "user"
    (user / ".ssh").mkdir(parents=True)
    (user / ".ssh" / "id_rsa").write_text(FAKE_KEY)
    monkeypatch.setenv("HOME", str(user))
    project = tmp_path / "a" / "b" / "project"
    (project / ".git").mkdir(parents=True)
    (tmp_path / "outside.md").write_text(f"outside the project {SECRET}")
    nova_home.mkdir(parents=True, exist_ok=True)
    return {"project": project, "home": nova_home, "tmp": tmp_path}


# Each attempt: (id, the @target written in NOVA.md, a setup making it dangerous, words the reason must have)
Setup = Callable[[dict[str, Path]], None]


def _nothing(world: dict[str, Path]) -> None:
    return None


def _symlink_out(world: dict[str, Path]) -> None:
    (world["project"] / "docs").mkdir()
    (world["project"] / "docs" / "rules.md").symlink_to(world["tmp"] / "outside.md")


def _fifo(world: dict[str, Path]) -> None:
    os.mkfifo(world["project"] / "pipe.md")


def _loop(world: dict[str, Path]) -> None:
    (world["project"] / "loop-a.md").symlink_to(world["project"] / "loop-b.md")
    (world["project"] / "loop-b.md").symlink_to(world["project"] / "loop-a.md")


def _directory(world: dict[str, Path]) -> None:
    (world["project"] / "folder.md").mkdir()
    (world["project"] / "folder.md" / "inner.md").write_text(SECRET)


def _key_in_project(world: dict[str, Path]) -> None:
    (world["project"] / "deploy.md").write_text(f"notes\n{FAKE_KEY}")


def _aws_in_project(world: dict[str, Path]) -> None:
    (world["project"] / "aws.md").write_text(
        f"[default]\naws_access_key_id = AKIAIOSFODNN7EXAMPLE\naws_secret_access_key = {SECRET}wJalrXUtnFEMI\n")


def _too_big(world: dict[str, Path]) -> None:
    (world["project"] / "huge.md").write_text(SECRET + "x" * (300 * 1024))


ATTEMPTS: list[tuple[str, str, Setup, tuple[str, ...]]] = [
    ("ssh-key", "~/.ssh/id_rsa", _nothing, ("outside the project",)),
    ("etc-passwd", "/etc/passwd", _nothing, ("outside the project",)),
    ("dotdot", "../../../outside.md", _nothing, ("outside the project",)),
    ("symlink-out", "docs/rules.md", _symlink_out, ("outside the project",)),
    ("fifo", "./pipe.md", _fifo, ("FIFO", "never opened")),
    ("dev-zero", "/dev/zero", _nothing, ("device",)),
    ("symlink-loop", "./loop-a.md", _loop, ("symlink loop",)),
    ("directory", "./folder.md", _directory, ("directory",)),
    ("private-key-in-project", "./deploy.md", _key_in_project, ("private key",)),
    ("aws-credentials-in-project", "./aws.md", _aws_in_project, ("AWS",)),
    ("over-file-cap", "./huge.md", _too_big, ("too large",)),
]


def load_in_thread(project: Path, home: Path) -> RuleSet:
    """Load with a deadline, so a hang (an opened FIFO) fails the test instead of stalling the suite."""
    result: list[RuleSet] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            result.append(load_rules(cwd=project, home=home))
        except BaseException as exc:  # reported by the assertion below
            errors.append(exc)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(timeout=10)
    if worker.is_alive():
        # Unblock a reader stuck on a FIFO so the daemon thread can end, then fail.
        for fifo in project.glob("*.md"):
            if fifo.is_fifo():
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        pytest.fail("load_rules hung")
    assert not errors, errors
    return result[0]


@pytest.mark.parametrize(("ref", "setup", "words"), [a[1:] for a in ATTEMPTS], ids=[a[0] for a in ATTEMPTS])
def test_a_dangerous_import_is_refused_with_one_clear_message(
    world: dict[str, Path], ref: str, setup: Setup, words: tuple[str, ...]
) -> None:
    project = world["project"]
    setup(world)
    (project / "NOVA.md").write_text(f"project rules\n@{ref}\n")
    rules = load_in_thread(project, world["home"])
    assert [f.path for f in rules.files] == [(project / "NOVA.md").resolve()]
    assert SECRET not in rules.text and "PRIVATE KEY" not in rules.text and "root:" not in rules.text
    [skip] = rules.skipped
    assert f"@{ref}" in skip.reason
    assert str((project / "NOVA.md").resolve()) in skip.reason
    for word in words:
        assert word in skip.reason
    assert skip.imported_by == (project / "NOVA.md").resolve()


def test_total_size_cap_refuses_the_file_that_would_cross_it(world: dict[str, Path]) -> None:
    project = world["project"]
    for name in ("one.md", "two.md", "three.md"):
        (project / name).write_text(name + "\n" + "y" * 400)
    (project / "NOVA.md").write_text("@one.md\n@two.md\n@three.md\n")
    config = InstructionsConfig(max_file_bytes=1000, max_total_bytes=1000)
    rules = load_rules(cwd=project, home=world["home"], config=config)
    assert [f.path.name for f in rules.files] == ["NOVA.md", "one.md", "two.md"]
    [skip] = rules.skipped
    assert skip.path.name == "three.md" and "total size cap" in skip.reason and "@three.md" in skip.reason


def test_caps_are_configurable(world: dict[str, Path]) -> None:
    from nova.memory.instructions import parse_instructions_config

    config = parse_instructions_config({"max_file_bytes": 10, "max_total_bytes": 20})
    assert (config.max_file_bytes, config.max_total_bytes) == (10, 20)
    (world["project"] / "NOVA.md").write_text("@small.md\n")
    (world["project"] / "small.md").write_text("more than ten bytes")
    rules = load_rules(cwd=world["project"], home=world["home"], config=config)
    assert [s.path.name for s in rules.skipped] == ["small.md"]


def test_imports_inside_the_project_and_novas_home_still_load(world: dict[str, Path]) -> None:
    project, home = world["project"], world["home"]
    (project / "docs").mkdir()
    (project / "docs" / "style.md").write_text("Use tabs.\n@../shared/more.md\n")
    (project / "shared").mkdir()
    (project / "shared" / "more.md").write_text("More rules.")
    (project / "linked.md").symlink_to(project / "shared" / "more.md")  # a symlink that stays inside
    (home / "team.md").write_text("Team rules.")
    (project / "NOVA.md").write_text(f"@docs/style.md\n@./linked.md\n@{home}/team.md\n")
    rules = load_rules(cwd=project, home=home)
    assert [f.path.name for f in rules.files] == ["NOVA.md", "style.md", "more.md", "team.md"]
    assert "Use tabs." in rules.text and "More rules." in rules.text and "Team rules." in rules.text
    # the symlink resolves to the already-loaded more.md: deduplicated, not refused
    assert [("deduplicated" in s.reason) for s in rules.skipped] == [True]


def test_nova_rules_lists_the_refusals(world: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from nova.cli.main import app

    project = world["project"]
    (project / "NOVA.md").write_text("@~/.ssh/id_rsa\n")
    monkeypatch.chdir(project)
    result = CliRunner().invoke(app, ["rules"])
    assert result.exit_code == 0, result.output
    assert "id_rsa" in result.output and "outside the project" in result.output
    assert SECRET not in result.output


def test_the_system_prompt_never_carries_refused_content(world: dict[str, Path]) -> None:
    from nova.agent.builder import AgentOptions, build_agent
    from nova.settings import load_settings
    from nova.testing import ScriptedProvider, reply

    project = world["project"]
    _symlink_out(world)
    _key_in_project(world)
    (project / "ok.md").write_text("Prefer small functions.")
    (project / "NOVA.md").write_text(
        "Project rules.\n@~/.ssh/id_rsa\n@/etc/passwd\n@../../../outside.md\n@docs/rules.md\n"
        "@./deploy.md\n@./ok.md\n")  # FIFO, /dev/zero: own cases above
    provider = ScriptedProvider([reply("ok")])
    agent = build_agent(load_settings(home=world["home"], overrides={"provider": "demo"}), provider,
                        AgentOptions(cwd=project))
    try:
        agent.run_turn("hello")
    finally:
        agent.close()
    [request] = provider.requests
    assert "Project rules." in request.system and "Prefer small functions." in request.system
    assert SECRET not in request.system and "PRIVATE KEY" not in request.system
    assert "root:" not in request.system


# -- Nova's own state is never importable; what an import adds passes the secret scan ------------------
def _nova_state(world: dict[str, Path]) -> dict[str, Path]:
    """Nova's home as a running Nova leaves it, and a project memory, each holding `SECRET`."""
    home, project = world["home"], world["project"]
    files = {
        "server-token": home / "server-token",
        "config": home / "config.json",
        "home-memory": home / "memory" / "deploy-notes.md",
        "store": home / "nova.db",
        "transcript": home / "sessions" / "20250101-000000-abcdef" / "transcript.jsonl",
        "spilled-output": home / "sessions" / "20250101-000000-abcdef" / "tool-results" / "call.txt",
        "project-memory": project / ".nova" / "memory" / "team.md",
        "skill": home / "skills" / "deploy" / "SKILL.md",
        "dot-file": home / ".reviews.md",
    }
    for path in files.values():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{SECRET}\n")
    return files


@pytest.mark.parametrize("which", ["server-token", "config", "home-memory", "store", "transcript", "spilled-output",
                                   "project-memory", "skill", "dot-file"])
def test_novas_own_state_is_never_imported(world: dict[str, Path], which: str) -> None:
    project = world["project"]
    target = _nova_state(world)[which]
    (project / "NOVA.md").write_text(f"project rules\n@{target}\n")
    rules = load_in_thread(project, world["home"])
    assert [f.path for f in rules.files] == [(project / "NOVA.md").resolve()]
    assert SECRET not in rules.text
    [skip] = rules.skipped
    assert f"@{target}" in skip.reason and "only rule files are imported" in skip.reason


def test_the_tilde_path_a_hostile_nova_md_writes_reaches_nothing(
    world: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    # NOVA_HOME left at its default, ~/.nova: the paths a repository would write.
    home = Path(os.environ["HOME"]) / ".nova"
    home.mkdir()
    world = {**world, "home": home}
    _nova_state(world)
    project = world["project"]
    (project / "NOVA.md").write_text("@~/.nova/server-token\n@~/.nova/config.json\n@~/.nova/memory/deploy-notes.md\n")
    rules = load_in_thread(project, home)
    assert SECRET not in rules.text and len(rules.skipped) == 3
    assert all("only rule files are imported" in s.reason for s in rules.skipped)


def test_rule_files_in_novas_home_still_import(world: dict[str, Path]) -> None:
    home, project = world["home"], world["project"]
    (home / "rules").mkdir()
    (home / "rules" / "python.md").write_text("Type every function.")
    (project / "NOVA.md").write_text(f"@{home}/rules/python.md\n")
    rules = load_rules(cwd=project, home=home)
    assert "Type every function." in rules.text and rules.skipped == ()


GITHUB_TOKEN = "ghp_" + "Zq8XwL3vN0tRb7Ym2KcD5hJ9sFgA4eUo1pVi"


def test_a_base64_token_in_an_imported_file_never_reaches_the_provider(world: dict[str, Path]) -> None:
    import base64

    from nova.agent.builder import AgentOptions, build_agent
    from nova.settings import load_settings
    from nova.testing import ScriptedProvider, reply

    project = world["project"]
    encoded = base64.b64encode(f"token={GITHUB_TOKEN}".encode()).decode()
    (project / "ci.md").write_text(f"CI notes: the bot pushes with\n{encoded}\nRun `make ci` before pushing.\n")
    (project / "NOVA.md").write_text("Project rules.\n@./ci.md\n")
    provider = ScriptedProvider([reply("ok")])
    agent = build_agent(load_settings(home=world["home"], overrides={"provider": "demo"}), provider,
                        AgentOptions(cwd=project))
    try:
        agent.run_turn("hello")
    finally:
        agent.close()
    [request] = provider.requests
    assert "Run `make ci` before pushing." in request.system, "the rest of the file is kept"
    assert encoded not in request.system and GITHUB_TOKEN not in request.system
    assert "[REDACTED" in request.system
    [_, imported] = load_rules(cwd=project, home=world["home"]).files
    assert imported.redacted and "GitHub token" in imported.redacted[0], "and `nova rules` can say what was"
