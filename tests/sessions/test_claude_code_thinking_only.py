"""A Claude Code response of thinking only (the person interrupted it while the model was still thinking)
has no text and no tool call, but it was a call and its usage was billed. It is imported as an empty
assistant turn with that usage: counted and billed by the import and the replay alike, dropped from every
view a provider is sent, and the tool calls around it stay paired."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from nova.cli.main import app
from nova.evaluation.replay import billed_usd, replay_session
from nova.model import usage_of
from nova.sessions.importers import read_session_file
from nova.sessions.repair import repair_history

MODEL = "claude-sonnet-4-5-20250929"


def _record(kind: str, n: int, message: dict[str, Any]) -> dict[str, Any]:
    return {"type": kind, "uuid": f"r{n}", "parentUuid": f"r{n - 1}" if n > 1 else None, "sessionId": "s1",
            "timestamp": f"2025-10-06T10:{n:02d}:00.000Z", "cwd": "/repo", "version": "2.0.76", "message": message}


def _usage(tokens: int, output: int) -> dict[str, int]:
    return {"input_tokens": 10, "cache_creation_input_tokens": 0, "cache_read_input_tokens": tokens,
            "output_tokens": output}


def _reply(n: int, response: str, block: dict[str, Any], tokens: int, output: int = 40) -> dict[str, Any]:
    return _record("assistant", n, {"id": response, "role": "assistant", "model": MODEL, "type": "message",
                                    "content": [block], "usage": _usage(tokens, output)})


THINKING = {"type": "thinking", "thinking": "Let me look at the test first", "signature": "c2lnbmF0dXJl"}


def _session(tmp_path: Path) -> Path:
    records = [
        _record("user", 1, {"role": "user", "content": "why does test_parse fail?"}),
        _reply(2, "msg_a", THINKING, 12_000),
        _reply(3, "msg_a", {"type": "tool_use", "id": "toolu_1", "name": "Read",
                            "input": {"file_path": "/repo/test_parse.py"}}, 12_000),
        _record("user", 4, {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "def test_parse(): ..."}]}),
        # Interrupted while thinking: the response holds nothing but its thinking, and was billed.
        _reply(5, "msg_b", THINKING, 12_500, output=3),
        _record("user", 6, {"role": "user", "content": [{"type": "text", "text": "[Request interrupted by user]"}]}),
        _record("user", 7, {"role": "user", "content": "look at parse.py instead"}),
        _reply(8, "msg_c", {"type": "text", "text": "parse.py drops the last field."}, 12_700),
    ]
    path = tmp_path / "s1.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_a_thinking_only_response_is_an_empty_turn_with_its_usage(tmp_path: Path) -> None:
    session = read_session_file(_session(tmp_path))
    replies = [m for m in session.messages if m.role == "assistant"]
    assert len(replies) == session.meta["source_counts"]["responses"] == 3
    silent = replies[1]
    assert silent.text == "" and not silent.tool_uses() and not silent.has("thinking")
    usage = usage_of(silent)
    assert usage is not None and usage.cache_read_tokens == 12_500 and usage.output_tokens == 3
    # The view a provider is sent never holds it, and the calls around it stay answered.
    repaired, report = repair_history(session.messages)
    assert silent.id not in {m.id for m in repaired} and report.dropped_empty == 1
    assert not report.synthetic_results and not report.dropped_results


def test_the_replay_counts_and_bills_the_call(tmp_path: Path) -> None:
    session = read_session_file(_session(tmp_path))
    billed, unpriced = billed_usd(session.messages)
    assert billed is not None and not unpriced
    without = billed_usd([m for m in session.messages if m.text or m.role == "user" or m.tool_uses()])[0]
    assert without is not None and billed > without
    for policy in ("recorded", "nova", "naive"):
        report = replay_session(session, window=200_000, policy=policy)  # type: ignore[arg-type]
        assert report.calls == 3, policy
        assert report.invariant_violations == 0, report.violations
        assert report.billed_usd == billed
    recorded = replay_session(session, window=200_000, policy="recorded")
    # Each call as the provider counted it: the silent one's view is the history before it, measured.
    assert [c.input_tokens for c in recorded.per_call] == [12_010, 12_510, 12_710]
    assert recorded.cost_usd is not None and recorded.output_cost_usd is not None
    assert abs(recorded.cost_usd + recorded.output_cost_usd - billed) < 1e-6


def test_import_show_and_replay_agree_on_the_calls(tmp_path: Path, nova_home: Path) -> None:
    path = _session(tmp_path)
    runner = CliRunner()
    imported = runner.invoke(app, ["sessions", "import", str(path), "--json"])
    assert imported.exit_code == 0, imported.output
    session_id = json.loads(imported.output)["session_id"]
    shown = runner.invoke(app, ["sessions", "show", session_id, "--json"])
    assert shown.exit_code == 0, shown.output
    turn = json.loads(shown.stdout)["calls"]["turn"]
    assert turn["calls"] == 3 and turn["unpriced_calls"] == 0
    assert turn["tokens"] == 12_010 + 40 + 12_510 + 3 + 12_710 + 40
    conversation = runner.invoke(app, ["sessions", "show", session_id])
    assert conversation.exit_code == 0, conversation.output
    assert conversation.stdout.count("no text or tool call") == 1
    # Said in place of the empty text, with no blank line for it.
    shown = conversation.stdout.splitlines()
    note = next(i for i, line in enumerate(shown) if "no text or tool call" in line)
    assert " assistant " in shown[note - 1]
    for source in (str(path), session_id):
        replayed = runner.invoke(app, ["replay", source, "--json", "--policy", "recorded"])
        assert replayed.exit_code == 0, replayed.output
        data = json.loads(replayed.stdout)
        assert data["calls"] == 3 and data["invariant_violations"] == 0, source
