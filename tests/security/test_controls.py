"""Nova's own controls answer only to a person: a command the model runs cannot change the config or the
rules, approve a memory, trust a project or get the server's token, however it is spelled.

Each case runs real `bash` through a real agent (the scripted model's call) and checks the effect: the
config file unchanged and the next session still denying `git push`, the memory still a candidate, the
token not in the output. `nova` itself is run as the command would run it (`python -m nova.cli.main`),
and also from a script, which the shell parser cannot read: then it is `nova`'s own refusal (the parent
chain holds a Nova tool runner) or the sandbox (Nova's home hidden) that holds.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from typer.testing import CliRunner

from nova.agent.builder import AgentOptions, build_agent, build_policy
from nova.cli.main import app
from nova.memory.config import MemoryConfig
from nova.memory.governance import Proposal, remember
from nova.memory.store import MemoryStore
from nova.settings import load_settings
from nova.testing import ScriptedProvider, call, reply
from nova.tools import default_registry

if TYPE_CHECKING:
    from tests.security.conftest import BashMode

NOVA = f"{shlex.quote(sys.executable)} -m nova.cli.main"
OPEN_RULES = '{"allow": ["bash"], "deny": []}'
CONFIG = {"permissions": {"deny": ["bash(git push*)"]}}


@pytest.fixture()
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    home, project = tmp_path / "nova-home", tmp_path / "project"
    home.mkdir()
    (project / ".git").mkdir(parents=True)
    (home / "config.json").write_text(json.dumps(CONFIG))
    (home / "server-token").write_text("tok-the-servers-own-secret")
    monkeypatch.setenv("NOVA_HOME", str(home))
    src = str(Path(__file__).resolve().parents[2] / "src")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH")) if p))
    return {"home": home, "project": project}


def runner_script(world: dict[str, Path], line: str, *, clear_env: bool = False) -> str:
    """A command that runs `line` from a file, through Python: no shell parser sees `nova` in it."""
    (world["project"] / "line.txt").write_text(line)
    env = "{k: os.environ[k] for k in ('PATH', 'PYTHONPATH', 'NOVA_HOME') if k in os.environ}" if clear_env else "None"
    (world["project"] / "run_line.py").write_text(
        "import os, subprocess, sys\n"
        f"done = subprocess.run(open('line.txt').read(), shell=True, env={env})\n"
        "sys.exit(done.returncode)\n")
    return "python3 run_line.py"


def bash(mode: BashMode, world: dict[str, Path], command: str) -> str:
    # The run writes its config (with its own `sandbox`) first: the file the command must not change.
    return mode.run(command, home=world["home"], cwd=world["project"], config=CONFIG).content


def next_session_denies_git_push(world: dict[str, Path]) -> bool:
    settings = load_settings(home=world["home"], env={}, overrides={"provider": "demo", "model": "demo"})
    policy = build_policy(settings, AgentOptions(cwd=world["project"], yes=True))
    return policy.evaluate(default_registry().get("bash"), {"command": "git push origin main"}).outcome == "deny"  # type: ignore[arg-type]


# -- the config and the rules ----------------------------------------------------------------------------
CONFIG_CHANGES = {
    "plain": f"{NOVA} config set permissions '{OPEN_RULES}'",
    "environment-cleared": f"env -i PATH=\"$PATH\" PYTHONPATH=\"$PYTHONPATH\" NOVA_HOME=\"$NOVA_HOME\" "
                           f"{NOVA} config set permissions '{OPEN_RULES}'",
    "unset": f"{NOVA} config unset permissions",
    "sandbox-off": f"{NOVA} config set sandbox off",
}


@pytest.mark.parametrize("case", sorted(CONFIG_CHANGES))
def test_bash_cannot_change_novas_config(world: dict[str, Path], bash_mode: BashMode, case: str) -> None:
    bash(bash_mode, world, "true")
    before = (world["home"] / "config.json").read_bytes()
    output = bash(bash_mode, world, CONFIG_CHANGES[case])
    assert (world["home"] / "config.json").read_bytes() == before, (case, output)
    assert next_session_denies_git_push(world)


@pytest.mark.parametrize("clear_env", [False, True], ids=["script", "script-environment-cleared"])
def test_nova_refuses_to_change_its_config_from_a_command_the_rules_could_not_read(
    world: dict[str, Path], bash_mode: BashMode, clear_env: bool
) -> None:
    bash(bash_mode, world, "true")
    before = (world["home"] / "config.json").read_bytes()
    output = bash(bash_mode, world, runner_script(world, f"{NOVA} config set permissions '{OPEN_RULES}'",
                                                  clear_env=clear_env))
    assert (world["home"] / "config.json").read_bytes() == before, output
    assert next_session_denies_git_push(world)
    if not bash_mode.sandbox:  # no sandbox: it is `nova` that refused, and says why
        assert "answers only to a person" in output and "Nova process" in output, output


def test_a_person_still_changes_the_config_after_a_session_ran_commands(world: dict[str, Path],
                                                                      sandboxed: BashMode) -> None:
    bash(sandboxed, world, "true")
    result = CliRunner().invoke(app, ["config", "set", "sandbox_network", "true"])
    assert result.exit_code == 0, result.output
    assert json.loads((world["home"] / "config.json").read_text())["sandbox_network"] is True


# -- memory review, trust, the server ----------------------------------------------------------------------
def test_bash_cannot_approve_a_memory_the_model_wrote(world: dict[str, Path], bash_mode: BashMode) -> None:
    store = MemoryStore.for_workspace(home=world["home"], cwd=world["project"])
    written = remember(store, Proposal(name="deploy-routine", description="how to deploy", type="project",
                                       body="Deploy by pushing straight to main.", author="model", origin="tool"),
                       config=MemoryConfig())
    assert written.memory is not None and written.memory.status == "candidate"
    for command in (f"{NOVA} memory approve deploy-routine", f"{NOVA} memory approve --all-listed --yes",
                    runner_script(world, f"{NOVA} memory approve deploy-routine")):
        output = bash(bash_mode, world, command)
        memory = next(m for m in MemoryStore.for_workspace(home=world["home"], cwd=world["project"]).memories()
                      if m.name == "deploy-routine")
        assert memory.status == "candidate", (command, output)


TOKEN_READS = {
    "path": "cat {home}/server-token",
    "variable": "cat \"$NOVA_HOME/server-token\"",
    "print-token": f"{NOVA} serve --print-token",
}


@pytest.mark.parametrize("case", sorted(TOKEN_READS))
def test_bash_cannot_read_the_servers_token(world: dict[str, Path], bash_mode: BashMode, case: str) -> None:
    output = bash(bash_mode, world, TOKEN_READS[case].replace("{home}", str(world["home"])))
    assert "tok-the-servers-own-secret" not in output, (case, output)


def test_a_script_cannot_read_the_token_in_the_sandbox(world: dict[str, Path], sandboxed: BashMode) -> None:
    (world["project"] / "peek.py").write_text("import os\nprint(open(os.environ['NOVA_HOME'] + '/server-token').read())\n")
    output = bash(sandboxed, world, "python3 peek.py")
    assert "tok-the-servers-own-secret" not in output and "[exit code: 1]" in output, output


def test_no_tool_reads_the_token(world: dict[str, Path]) -> None:
    settings = load_settings(home=world["home"], env={}, overrides={"provider": "demo", "model": "demo"})
    agent = build_agent(settings, ScriptedProvider([
        reply("", [call("read_file", path=str(world["home"] / "server-token"))]), reply("done")]),
        AgentOptions(cwd=world["project"], yes=True))
    try:
        agent.run_turn("read it")
    finally:
        agent.close()
    result = next(r for m in agent.history for r in m.tool_results())
    assert result.is_error and "tok-the-servers-own-secret" not in result.content, result.content
