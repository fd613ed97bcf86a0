"""`nova replay` without --window replays at the window of the model the recording's calls name: a
Claude Code session that ran at 150k tokens on a 200k-token model is not over a window it never had."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from nova.cli.main import app

runner = CliRunner()


def _claude_code_session(path: Path, model: str) -> Path:
    """Two turns of a Claude Code JSONL transcript (the record shape of ~/.claude/projects), the second
    call reading 150k tokens from the cache."""
    def user(uuid: str, parent: str | None, text: str, at: str) -> dict[str, object]:
        return {"type": "user", "uuid": uuid, "parentUuid": parent, "sessionId": "s1", "timestamp": at,
                "cwd": "/repo", "message": {"role": "user", "content": text}}

    def assistant(uuid: str, parent: str, text: str, at: str, read: int) -> dict[str, object]:
        return {"type": "assistant", "uuid": uuid, "parentUuid": parent, "sessionId": "s1", "timestamp": at,
                "cwd": "/repo", "message": {"id": f"msg-{uuid}", "role": "assistant", "model": model,
                                            "content": [{"type": "text", "text": text}],
                                            "usage": {"input_tokens": 3, "cache_read_input_tokens": read,
                                                      "cache_creation_input_tokens": 500, "output_tokens": 20}}}

    records = [user("u1", None, "read the big log", "2026-01-01T10:00:00Z"),
               assistant("a1", "u1", "read it", "2026-01-01T10:00:05Z", 20_000),
               user("u2", "a1", "now summarise it " + "log line " * 20, "2026-01-01T10:01:00Z"),
               assistant("a2", "u2", "summary", "2026-01-01T10:01:05Z", 150_000)]
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_the_default_window_is_the_recorded_models(tmp_path: Path) -> None:
    path = _claude_code_session(tmp_path / "s1.jsonl", "claude-opus-4-6")
    result = runner.invoke(app, ["replay", str(path), "--policy", "recorded", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output.strip().splitlines()[-1])
    assert report["window"] == 200_000 and report["requests_over_window"] == 0
    assert report["peak_context_tokens"] > 128_000


def test_an_explicit_window_or_an_unknown_model_keeps_the_old_default(tmp_path: Path) -> None:
    known = _claude_code_session(tmp_path / "s1.jsonl", "claude-opus-4-6")
    result = runner.invoke(app, ["replay", str(known), "--policy", "recorded", "--window", "100000", "--json"])
    assert json.loads(result.output.strip().splitlines()[-1])["window"] == 100_000
    unknown = _claude_code_session(tmp_path / "s2.jsonl", "house-model-7")
    result = runner.invoke(app, ["replay", str(unknown), "--policy", "recorded", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output.strip().splitlines()[-1])
    assert report["window"] == 128_000 and report["requests_over_window"] == 1


def test_a_claude_session_that_went_past_200k_ran_with_the_1m_window(tmp_path: Path) -> None:
    """Opus 4.7 takes 1M tokens when asked: a recording whose real requests read 250k ran with it, and
    replayed at 200k would count requests the provider accepted as refused."""
    records = _claude_code_session(tmp_path / "s1.jsonl", "claude-opus-4-7").read_text().splitlines()
    last = json.loads(records[-1])
    last["message"]["usage"]["cache_read_input_tokens"] = 250_000
    (tmp_path / "s1.jsonl").write_text("\n".join([*records[:-1], json.dumps(last)]) + "\n", encoding="utf-8")
    result = runner.invoke(app, ["replay", str(tmp_path / "s1.jsonl"), "--policy", "recorded", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output.strip().splitlines()[-1])
    assert report["window"] == 1_000_000 and report["requests_over_window"] == 0


def test_a_codex_rollout_replays_at_the_window_codex_wrote_down(tmp_path: Path) -> None:
    """Codex writes the window it let a request fill (`model_context_window`) beside every usage: that,
    not the model table's 400k, is the window the session ran with."""
    def record(kind: str, payload: dict[str, object]) -> str:
        return json.dumps({"type": kind, "timestamp": "2026-03-01T10:00:00Z", "payload": payload})

    usage = {"input_tokens": 9_000, "cached_input_tokens": 8_000, "output_tokens": 40, "total_tokens": 9_040}
    lines = [
        record("session_meta", {"id": "s", "cli_version": "0.122.0"}),
        record("turn_context", {"model": "gpt-5.4"}),
        record("response_item", {"type": "message", "role": "user",
                                 "content": [{"type": "input_text", "text": "list the files"}]}),
        record("response_item", {"type": "message", "role": "assistant",
                                 "content": [{"type": "output_text", "text": "Three files."}]}),
        record("event_msg", {"type": "token_count", "info": {
            "total_token_usage": usage, "last_token_usage": usage, "model_context_window": 258_400}}),
    ]
    path = tmp_path / "rollout-2026-03-01T10-00-00-s.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = runner.invoke(app, ["replay", str(path), "--policy", "recorded", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output.strip().splitlines()[-1])
    assert report["window"] == 258_400 and report["billed_usd"] > 0
