"""`nova` starts without importing the world: what `import nova.cli.main`, `nova --help`, `nova --version` and
`nova sessions list` load, checked in fresh interpreters; and the lazily mounted commands keep their help."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nova.cli.commands.typer_classes import HELP_MARKUP, first_paragraph, load_command
from nova.cli.main import _NovaGroup, app

# Modules a start-up must not pay for: the server, the TUI, providers, the agent, the context engine,
# the command implementations, and the libraries pydantic and rich.
HEAVY = ("nova.server", "nova.tui", "nova.providers", "nova.providers.anthropic", "nova.agent.builder", "nova.agent",
         "nova.context", "nova.sessions", "nova.memory", "nova.evaluation.replay", "nova.cli.commands.sessions",
         "nova.cli.commands.memory", "nova.cli.commands.context", "nova.cli.commands.replay", "nova.cli.commands.run",
         "pydantic", "rich")

# Runs `nova ARGS` in this interpreter as the console script would, then prints the loaded modules.
_PROBE = """
import json, sys
sys.argv = ["nova", *json.loads(sys.argv[1])]
from nova.cli.main import main
try:
    main()
except SystemExit as exc:
    assert not exc.code, exc.code
print("\\n" + json.dumps(sorted(sys.modules)))
"""


def _loaded_after(args: list[str], home: Path) -> tuple[str, set[str]]:
    env = {**os.environ, "NOVA_HOME": str(home)}
    proc = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(args)], capture_output=True, text=True,
                          env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    output, _, modules = proc.stdout.rstrip("\n").rpartition("\n")
    return output, set(json.loads(modules))


def test_importing_the_cli_loads_no_heavy_module() -> None:
    code = "import json, sys, nova.cli.main; print(json.dumps(sorted(sys.modules)))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    loaded = set(json.loads(proc.stdout))
    assert "nova.cli.main" in loaded
    assert sorted(loaded & set(HEAVY)) == []


@pytest.mark.parametrize("args", [["--help"], ["--version"]])
def test_help_and_version_load_no_heavy_module(args: list[str], tmp_path: Path) -> None:
    output, loaded = _loaded_after(args, tmp_path)
    assert output.strip()
    assert sorted(loaded & set(HEAVY)) == []


def test_sessions_list_loads_neither_pydantic_nor_rich(tmp_path: Path) -> None:
    output, loaded = _loaded_after(["sessions", "list", "--json"], tmp_path)
    assert json.loads(output) == []
    assert "nova.cli.commands.sessions" in loaded
    assert sorted(loaded & {"pydantic", "rich", "nova.server", "nova.tui", "nova.agent.builder", "nova.context"}) == []


def test_help_lists_every_command_with_its_help_line() -> None:
    result = CliRunner().invoke(app, ["--help"], terminal_width=400)
    assert result.exit_code == 0, result.output
    for name in ("run", "resume", "serve", "demo", "config", *_NovaGroup.lazy_commands):
        assert f"\n  {name} " in result.output
    for spec in _NovaGroup.lazy_commands.values():
        assert spec.help in " ".join(result.output.split())


@pytest.mark.parametrize("name", sorted(_NovaGroup.lazy_commands))
def test_each_lazy_help_line_is_the_commands_own(name: str) -> None:
    spec = _NovaGroup.lazy_commands[name]
    command = load_command(name, spec, markup=HELP_MARKUP)
    assert first_paragraph(command.short_help or command.help) == spec.help


@pytest.mark.parametrize(("args", "expected"), [
    (["sessions", "--help"], ("list", "show", "export", "rm", "import", "most recently updated first")),
    (["memory", "--help"], ("list", "add", "forget", "consolidate")),
    (["replay", "--help"], ("--window", "--policy", "--provider-cache", "the window of the model")),
    (["context", "--help"], ("--why", "--json")),
    (["rules", "--help"], ("--json", "instruction chain")),
    (["run", "--help"], ("--allow", "--max-steps", "[default: 50]", "Deny rules")),
])
def test_subcommand_help_still_shows_options_and_texts(args: list[str], expected: tuple[str, ...]) -> None:
    result = CliRunner().invoke(app, args, terminal_width=200)
    assert result.exit_code == 0, result.output
    for text in expected:
        assert text in result.output


def test_a_mistyped_lazy_command_is_still_suggested() -> None:
    result = CliRunner().invoke(app, ["sesions"])
    assert result.exit_code == 2
    assert "Did you mean 'sessions'" in result.output  # 'permissions' may be suggested too


def test_messages_load_pydantic_only_when_a_message_is_serialized() -> None:
    code = ("import sys\n"
            "from nova.messages import Message, from_dict, to_dict\n"
            "assert 'pydantic' not in sys.modules\n"
            "m = Message.user('hi')\n"
            "assert from_dict(to_dict(m)) == m\n"
            "assert 'pydantic' in sys.modules\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
