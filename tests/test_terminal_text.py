"""What reaches the terminal is text: an escape sequence in a file name, a tool's output or a model's reply
is printed visibly (`\\x1b[31m`), never sent to the terminal to act on, and rich markup in it stays
text. Checked on the bytes the commands write."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from nova import events as ev
from nova.cli.commands.terminal_approval import TerminalPrompt
from nova.cli.main import app
from nova.cli.render import Timeline
from nova.messages import Message, TextPart, ToolResultPart, ToolUsePart
from nova.present.terminal import terminal_console
from nova.present.text import terminal_safe
from nova.sessions.session import Session
from nova.tools.permissions import PermissionRequest

runner = CliRunner()
# A colour, a new window title, a cleared screen, a carriage return over the line, a C1 CSI, a bidi override.
HOSTILE = "evil\x1b[31mRED\x1b]0;PWNED\x07\x1b[2J\rhidden\x9b1m\u202etxt.gpj"
MARKUP = "[link=https://evil.example]click[/link][bold]"


def _no_control(output: str) -> None:
    for char in ("\x1b", "\x9b", "\u202e", "\r", "\x07"):
        assert char not in output, f"{char!r} reached the terminal: {output!r}"


def test_terminal_safe_makes_every_control_visible_and_keeps_lines() -> None:
    shown = terminal_safe(HOSTILE + "\r\nnext\tline\n")
    _no_control(shown)
    assert shown == "evil\\x1b[31mRED\\x1b]0;PWNED\\x07\\x1b[2J\\x0dhidden\\x9b1m\\u202etxt.gpj\nnext\tline\n"
    assert terminal_safe("café 你好 👩‍💻") == "café 你好 👩‍💻", "ordinary text, joiners included, is untouched"


def test_terminal_safe_for_json_is_the_same_json() -> None:
    document = json.dumps({"name": HOSTILE}, ensure_ascii=False)
    shown = terminal_safe(document, json=True)
    _no_control(shown)
    assert json.loads(shown) == {"name": HOSTILE}


def test_the_console_keeps_its_own_styles_and_shows_everything_else() -> None:
    out = io.StringIO()
    console = terminal_console(file=out, force_terminal=True, color_system="standard", highlight=False)
    console.print("[bold]title[/]", HOSTILE, markup=True)
    written = out.getvalue()
    assert "\x1b[1mtitle" in written, "rich's own style sequence is kept"
    assert "\x1b]0;PWNED" not in written and "\x1b[2J" not in written and "\x9b" not in written
    assert "\\x1b]0;PWNED" in written and "\\x1b[2J" in written


def test_the_timeline_shows_tool_output_and_model_text_as_text() -> None:
    out = io.StringIO()
    timeline = Timeline(Console(file=out, width=200, color_system=None), stream_text=True)
    for event in (ev.TextDelta(session_id="s", text=f"reading {HOSTILE} {MARKUP}"),
                  ev.ToolCallStarted(session_id="s", tool_use_id="t", name="read_file", input={"path": HOSTILE}),
                  ev.ToolCallFinished(session_id="s", tool_use_id="t", name="read_file", output=HOSTILE + MARKUP,
                                      is_error=False, duration_s=0.0)):
        timeline(event)
    written = out.getvalue()
    _no_control(written)
    assert "\\x1b]0;PWNED" in written and MARKUP in written


def test_the_approval_prompt_shows_the_command_it_asks_about() -> None:
    out = io.StringIO()
    prompt = TerminalPrompt(Console(file=out, width=200, color_system=None), stdin=io.StringIO("n\n"))
    command = "echo ok\x1b[2K\r# harmless; rm -rf ~"
    prompt(PermissionRequest(tool="bash", input={"command": command}, summary=f"bash: {command}",
                             reason="bash can change files or run commands"))
    written = out.getvalue()
    _no_control(written)
    assert "rm -rf ~" in written and "\\x1b[2K\\x0d" in written


@pytest.fixture()
def hostile_project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    (project / f"{HOSTILE}.txt").write_text(f"contents {HOSTILE}\n")
    return project


def test_nova_run_prints_a_hostile_file_name_as_text(hostile_project: Path, nova_home: Path) -> None:
    result = runner.invoke(app, ["--provider", "demo", "run", "what is here?", "--yes", "--cwd", str(hostile_project)])
    assert result.exit_code == 0, result.output
    _no_control(result.stdout)
    assert "\\x1b]0;PWNED" in result.stdout


def _hostile_session(home: Path) -> Session:
    session = Session.create(home, title=f"title {HOSTILE}", cwd=str(home), provider="demo", model="nova-demo")
    session.record_message(Message(role="user", parts=(TextPart(f"look at {HOSTILE} {MARKUP}"),), id="m1"))
    session.record_message(Message(role="assistant", id="m2", parts=(
        ToolUsePart(id="c1", name="read_file", input={"path": HOSTILE}),)))
    session.record_message(Message(role="user", id="m3", parts=(ToolResultPart(tool_use_id="c1", content=HOSTILE),)))
    session.close()
    return session


@pytest.mark.parametrize("argv", [["show"], ["list"], ["list", "--json"], ["export", "--format", "md"]])
def test_nova_sessions_prints_hostile_records_as_text(argv: list[str], nova_home: Path) -> None:
    session = _hostile_session(nova_home)
    command = ["sessions", argv[0], *([session.id] if argv[0] in ("show", "export") else []), *argv[1:]]
    result = runner.invoke(app, command)
    assert result.exit_code == 0, result.output
    if argv[0] == "export":
        assert HOSTILE in result.stdout, "into a pipe, an export is the record as it is"
        return
    _no_control(result.stdout)
    if argv == ["show"]:
        assert MARKUP in result.stdout, "markup in a message is printed, not applied"
    if argv == ["list", "--json"]:
        assert json.loads(result.stdout)[0]["title"] == f"title {HOSTILE}", "the JSON still says the same"


def test_an_error_naming_a_hostile_file_is_text(tmp_path: Path) -> None:
    missing = tmp_path / f"{HOSTILE}.jsonl"
    result = runner.invoke(app, ["sessions", "import", str(missing)])
    assert result.exit_code == 1 and "does not exist" in result.output
    _no_control(result.output)


def test_piped_output_keeps_each_line_whole_unless_a_width_is_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    # Into a pipe or a log, a figure or a path cut at rich's default 80 columns cannot be grepped.
    line = "compaction 1: " + ", ".join(f"figure {i:,} input-token equivalents" for i in range(6))
    monkeypatch.delenv("COLUMNS", raising=False)
    piped = io.StringIO()
    terminal_console(file=piped, highlight=False).print(line, markup=False)
    assert piped.getvalue() == line + "\n"
    narrow = io.StringIO()
    terminal_console(file=narrow, width=60, highlight=False).print(line, markup=False)
    assert len(narrow.getvalue().splitlines()) > 1
    monkeypatch.setenv("COLUMNS", "60")
    sized = io.StringIO()
    terminal_console(file=sized, highlight=False).print(line, markup=False)
    assert len(sized.getvalue().splitlines()) > 1
