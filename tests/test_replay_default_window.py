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
