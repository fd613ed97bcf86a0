"""Claude Code writes some assistant replies itself (model `<synthetic>`): "API Error: Request was
aborted.", "No response requested.". No model answered them and nothing was billed, so a replay does not
simulate a call there: a session with one is priced like any other, and counts only its real calls."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from nova.cli.main import app
from nova.evaluation.replay import billed_usd, replay_session
from nova.model import is_model_reply
from nova.sessions.importers import read_session_file


def _record(kind: str, n: int, message: dict[str, Any]) -> dict[str, Any]:
    return {"type": kind, "uuid": f"r{n}", "parentUuid": f"r{n - 1}" if n > 1 else None, "sessionId": "s1",
            "timestamp": f"2025-06-06T10:{n:02d}:00.000Z", "cwd": "/repo", "version": "1.0.16", "message": message}


def _reply(n: int, text: str, *, model: str, tokens: int) -> dict[str, Any]:
    return _record("assistant", n, {"id": f"msg{n}", "role": "assistant", "model": model, "type": "message",
                                    "content": [{"type": "text", "text": text}],
                                    "usage": {"input_tokens": tokens, "output_tokens": tokens // 10,
                                              "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}})


def test_a_reply_claude_code_wrote_itself_is_not_a_call(tmp_path: Path) -> None:
    records = [
        _record("user", 1, {"role": "user", "content": "summarise the README"}),
        _reply(2, "API Error: Request was aborted.", model="<synthetic>", tokens=0),
        _record("user", 3, {"role": "user", "content": "try again please"}),
        _reply(4, "The README explains how to install and run the tool.", model="claude-sonnet-4-20250514",
               tokens=1200),
    ]
    path = tmp_path / "s1.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    session = read_session_file(path)
    replies = [m for m in session.messages if m.role == "assistant"]
    assert [is_model_reply(m) for m in replies] == [False, True]
    assert "API Error" in replies[0].text  # kept in the conversation all the same
    billed, unpriced = billed_usd(session.messages)
    assert billed is not None and not unpriced
    for policy in ("recorded", "nova"):
        report = replay_session(session, window=200_000, policy=policy)  # type: ignore[arg-type]
        assert report.calls == 1 and report.recorded_calls == (policy == "recorded")
        assert report.cost_usd is not None and not report.unpriced_models, policy


def test_import_show_and_replay_count_the_same_calls(tmp_path: Path, nova_home: Path) -> None:
    """`nova sessions show` counted the harness's reply as a call and the source count held it as a
    response, so a replay's `source / imported: responses 2/1` read as a response lost in the import."""
    records = [
        _record("user", 1, {"role": "user", "content": "summarise the README"}),
        _reply(2, "API Error: Request was aborted.", model="<synthetic>", tokens=0),
        _record("user", 3, {"role": "user", "content": "try again please"}),
        _reply(4, "The README explains how to install and run the tool.", model="claude-sonnet-4-20250514",
               tokens=1200),
    ]
    path = tmp_path / "s1.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    assert read_session_file(path).meta["source_counts"]["responses"] == 1
    runner = CliRunner()
    imported = runner.invoke(app, ["sessions", "import", str(path), "--json"])
    assert imported.exit_code == 0, imported.output
    shown = runner.invoke(app, ["sessions", "show", json.loads(imported.output)["session_id"], "--json"])
    assert shown.exit_code == 0, shown.output
    calls = json.loads(shown.output)["calls"]["turn"]
    assert calls["calls"] == 1 and calls["tokens"] == 1320
    replayed = runner.invoke(app, ["replay", str(path), "--json"])
    assert replayed.exit_code == 0, replayed.output
    data = json.loads(replayed.output)
    assert data["calls"] == 1
    assert data["import"]["source"]["responses"] == data["import"]["imported"]["responses"] == 1
