"""What `nova run` does with a prompt before any model call: `/help` lists the slash commands, an empty
prompt and an unknown slash command are refused, and none of them leaves a session behind."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nova.cli.main import app

runner = CliRunner()


def _sessions(home: Path) -> list[Path]:
    root = home / "sessions"
    return sorted(root.iterdir()) if root.is_dir() else []


@pytest.mark.parametrize("args", [["run", "/help"], ["run", "--provider", "demo", " /help "]])
def test_help_lists_the_slash_commands_without_a_session(args: list[str], nova_home: Path) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    for command in ("/help", "/context", "/compact", "/memory", "/remember", "/goal", "/constraint"):
        assert command in result.stdout
    assert _sessions(nova_home) == []


def test_help_as_json_is_one_object(nova_home: Path) -> None:
    result = runner.invoke(app, ["run", "/help", "--json"])
    assert result.exit_code == 0 and "/context" in json.loads(result.stdout)["text"]


@pytest.mark.parametrize("args", [["run", ""], ["run", "   \n\t"], ["run", "--provider", "demo", " "],
                                  ["resume", "last", ""]])
def test_an_empty_prompt_is_a_usage_error(args: list[str], nova_home: Path) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    assert "the prompt is empty" in result.stderr
    assert _sessions(nova_home) == []


def test_an_unknown_slash_command_names_the_known_ones_and_leaves_nothing(nova_home: Path) -> None:
    result = runner.invoke(app, ["run", "--provider", "demo", "/nope"])
    assert result.exit_code == 2
    assert "unknown command '/nope'" in result.stderr and "/help" in result.stderr
    assert _sessions(nova_home) == []


def test_a_known_slash_command_still_runs(nova_home: Path) -> None:
    result = runner.invoke(app, ["run", "--provider", "demo", "/goal ship the fix"])
    assert result.exit_code == 0, result.output
