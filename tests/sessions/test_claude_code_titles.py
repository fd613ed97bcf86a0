"""Claude Code titles a conversation with a `summary` record naming its last record (`leafUuid`), and
writes such records into whichever session file is open, so a file holds titles of other sessions too.
The one naming this file's own conversation is the imported session's title; the rest change nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from nova.cli.main import app
from nova.sessions.importers import read_session_file


def _record(kind: str, n: int, message: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"type": kind, "uuid": f"u{n}", "parentUuid": f"u{n - 1}" if n > 1 else None, "sessionId": "s1",
            "timestamp": f"2025-10-06T10:{n:02d}:00.000Z", "cwd": "/repo", "version": "2.0.76",
            "message": message, **extra}


def _reply(n: int, content: list[dict[str, Any]]) -> dict[str, Any]:
    return _record("assistant", n, {"id": f"msg{n}", "role": "assistant", "model": "claude-sonnet-4-5",
                                    "content": content,
                                    "usage": {"input_tokens": 900, "output_tokens": 30}})


def _summary(text: str, leaf: str) -> dict[str, Any]:
    return {"type": "summary", "summary": text, "leafUuid": leaf}


def _conversation() -> list[dict[str, Any]]:
    task = {"type": "tool_use", "id": "T1", "name": "Task", "input": {"prompt": "find the parser", "description": "d"}}
    return [
        _summary("Pricing tiers with Polar.sh", "elsewhere-1"),  # another session's title
        _record("user", 1, {"role": "user", "content": "why does the parser drop the last field?"}),
        _summary("Parser drops a field", "u2"),  # this conversation, early on
        _reply(2, [{"type": "text", "text": "Let me look."}, task]),
        _record("user", 3, {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "T1", "content": "parse.py"}]}),
        _record("user", 4, {"role": "user", "content": "find the parser"}, isSidechain=True),
        _reply(5, [{"type": "text", "text": "It is parse.py."}]) | {"isSidechain": True},
        _reply(6, [{"type": "text", "text": "Fixed: the loop stopped one short."}]),
        _summary("Fix off-by-one in the field parser", "u6"),  # this conversation, at its end
        _summary("React Grab provider", "elsewhere-2"),  # another session's, written after
    ]


def _write(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_the_summary_naming_this_conversation_is_its_title(tmp_path: Path) -> None:
    records = _conversation()
    session = read_session_file(_write(tmp_path / "s1.jsonl", records))
    assert session.title == "Fix off-by-one in the field parser"
    # Harmless otherwise: the same conversation as without any summary record.
    plain = read_session_file(_write(tmp_path / "plain.jsonl", [r for r in records if r["type"] != "summary"]))
    assert plain.title == ""
    assert [m.parts for m in session.messages] == [m.parts for m in plain.messages]
    assert [[m.parts for m in c.messages] for c in session.children] == [
        [m.parts for m in c.messages] for c in plain.children]
    assert session.meta["ignored_records"] == {"summary": 4}


def test_titles_of_other_sessions_leave_the_file_untitled(tmp_path: Path) -> None:
    records = [r for r in _conversation() if r["type"] != "summary" or str(r["leafUuid"]).startswith("elsewhere")]
    assert read_session_file(_write(tmp_path / "s1.jsonl", records)).title == ""


def test_nova_sessions_list_shows_the_title(tmp_path: Path, nova_home: Path) -> None:
    path = _write(tmp_path / "3f6c1b2e-session.jsonl", _conversation())
    runner = CliRunner()
    imported = runner.invoke(app, ["sessions", "import", str(path), "--json"])
    assert imported.exit_code == 0, imported.output
    listed = runner.invoke(app, ["sessions", "list", "--json"])
    assert listed.exit_code == 0, listed.output
    titles = {s["title"] for s in json.loads(listed.stdout)}
    assert titles == {"Fix off-by-one in the field parser", "Fix off-by-one in the field parser / sub-agent 1"}
    # A title given on the command line still wins.
    named = runner.invoke(app, ["sessions", "import", str(path), "--title", "mine", "--json"])
    shown = runner.invoke(app, ["sessions", "show", json.loads(named.stdout)["session_id"], "--json"])
    assert json.loads(shown.stdout)["title"] == "mine"


def test_a_replay_says_its_sub_agents_are_not_in_its_figures(tmp_path: Path, nova_home: Path) -> None:
    """The sub-agent's calls were billed apart: the replay's figures are the main conversation's alone."""
    path = _write(tmp_path / "s1.jsonl", _conversation())
    assert len(read_session_file(path).children) == 1
    result = CliRunner().invoke(app, ["replay", str(path)])
    assert result.exit_code == 0, result.output
    assert "  calls 2," in result.stdout
    assert "  not in these figures: 1 sub-agent (each a session of its own" in result.stdout
