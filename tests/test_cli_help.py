"""Help on every command: `-h` is `--help`, and yes/no options are listed as bare flags (`--json`,
never `--json <bool>`, which reads as if it wanted `--json true`)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import pytest
import typer
import typer.main
from typer.testing import CliRunner

from nova.cli.commands.typer_classes import NovaCommand
from nova.cli.main import app

runner = CliRunner()


def _command_paths() -> Iterator[list[str]]:
    """Every command and group of `nova`, the lazily mounted ones loaded, as argument lists."""
    root = typer.main.get_command(app)

    def walk(command: Any, path: list[str]) -> Iterator[list[str]]:
        yield path
        for name in list(getattr(command, "commands", {})):
            yield from walk(command.get_command(None, name), [*path, name])

    yield from walk(root, [])


PATHS = list(_command_paths())


@pytest.mark.parametrize("path", PATHS, ids=[" ".join(p) or "nova" for p in PATHS])
def test_dash_h_is_help_and_flags_take_no_value(path: list[str], nova_home: Path) -> None:
    long = runner.invoke(app, [*path, "--help"])
    short = runner.invoke(app, [*path, "-h"])
    assert long.exit_code == 0, long.output
    assert short.exit_code == 0, short.output
    assert short.output == long.output
    assert "-h, --help" in long.output
    assert "<bool>" not in long.output


def test_an_optional_yes_no_option_is_shown_and_parsed_as_a_flag() -> None:
    """Typer treats only a plain `bool` annotation as a flag; `bool | None` would otherwise be listed as
    `--json <bool>` and refuse a bare `--json`."""
    toy = typer.Typer(rich_markup_mode=None)
    seen: list[object] = []

    @toy.command(cls=NovaCommand)
    def show(as_json: Annotated[bool | None, typer.Option("--json", help="Print JSON.")] = None) -> None:
        seen.append(as_json)

    @toy.command(cls=NovaCommand)
    def other() -> None:
        pass

    shown = runner.invoke(toy, ["show", "-h"])
    assert shown.exit_code == 0 and "<bool>" not in shown.output and "--json" in shown.output
    assert runner.invoke(toy, ["show", "--json"]).exit_code == 0
    assert runner.invoke(toy, ["show"]).exit_code == 0
    assert seen == [True, None]


def test_every_config_key_a_help_names_is_one_config_show_lists(nova_home: Path) -> None:
    # `nova replay --help` once named "the config's default_context_window", a key `nova config set`
    # refuses: the key lives in the compaction section. A help that names a key must name it as it is set.
    shown = runner.invoke(app, ["config", "show", "--json"])
    keys = {row["key"] for row in json.loads(shown.output)["values"]}
    named = {(" ".join(path), found) for path in PATHS
             for found in re.findall(r"config's `?([a-z_.]+[a-z_])", runner.invoke(app, [*path, "--help"],
                                                                                   terminal_width=400).output)}
    assert named, "no help names a config key: the pattern no longer matches the wording"
    assert {(where, key) for where, key in named if key not in keys} == set()
