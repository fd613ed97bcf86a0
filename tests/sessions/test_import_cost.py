"""An imported session is priced as `nova replay` bills it: a format that records each call's price
keeps it, and one that only names the model per call (Claude Code, Codex) has its usage priced at that
model's list price, so `nova sessions show` gives a cost instead of "cost unknown"; an imported
compaction shows the sizes the recorded calls measured around it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.codex_rollout import response_item, token_count

from nova.model import Usage
from nova.providers.pricing import cost_usd
from nova.sessions.export import import_session
from nova.sessions.schema import BoundaryRecord
from nova.sessions.session import Session


def _claude_code(path: Path, models: list[str]) -> Path:
    """A Claude Code JSONL transcript of one prompt and a call per model (the ~/.claude/projects shape)."""
    records: list[dict[str, object]] = [
        {"type": "user", "uuid": "u0", "parentUuid": None, "sessionId": "s1", "timestamp": "2026-01-01T10:00:00Z",
         "cwd": "/repo", "message": {"role": "user", "content": "tidy the module"}}]
    for i, model in enumerate(models, 1):
        records.append({"type": "assistant", "uuid": f"a{i}", "parentUuid": f"u{i - 1}", "sessionId": "s1",
                        "timestamp": f"2026-01-01T10:0{i}:00Z", "cwd": "/repo",
                        "message": {"id": f"msg-{i}", "role": "assistant", "model": model,
                                    "content": [{"type": "text", "text": f"step {i}"}],
                                    "usage": {"input_tokens": 10, "cache_read_input_tokens": 1000 * i,
                                              "cache_creation_input_tokens": 200, "output_tokens": 30}}})
        records.append({"type": "user", "uuid": f"u{i}", "parentUuid": f"a{i}", "sessionId": "s1",
                        "timestamp": f"2026-01-01T10:0{i}:30Z", "cwd": "/repo",
                        "message": {"role": "user", "content": f"go on {i}"}})
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_claude_code_calls_are_priced_at_the_model_each_names(nova_home: Path, tmp_path: Path) -> None:
    models = ["claude-sonnet-4-5-20250929", "claude-haiku-4-5-20251001", "claude-sonnet-4-5-20250929"]
    session_id, _ = import_session(_claude_code(tmp_path / "s1.jsonl", models), nova_home)
    expected = sum(cost_usd(Usage(input_tokens=10, cache_read_tokens=1000 * i, cache_write_tokens=200,
                                  output_tokens=30), model) or 0.0 for i, model in enumerate(models, 1))
    with Session.open(nova_home, session_id, readonly=True) as session:
        meta = session.meta
    assert meta.model == "claude-sonnet-4-5-20250929"
    assert meta.cost_known and meta.cost_usd == pytest.approx(expected)


def test_a_model_without_a_price_leaves_the_cost_unknown(nova_home: Path, tmp_path: Path) -> None:
    session_id, _ = import_session(_claude_code(tmp_path / "s1.jsonl", ["house-model-7"]), nova_home)
    with Session.open(nova_home, session_id, readonly=True) as session:
        meta = session.meta
    assert meta.model == "house-model-7" and not meta.cost_known


def test_an_imported_compaction_says_the_sizes_the_recorded_calls_measured(nova_home: Path, tmp_path: Path) -> None:
    # A Codex compaction records no size: before it is the last call's context, after it the next call's.
    records: list[dict[str, object]] = [
        {"type": "session_meta", "payload": {"id": "s1", "cwd": "/repo"}},
        {"type": "turn_context", "payload": {"model": "gpt-5.3-codex", "cwd": "/repo"}},
        response_item({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix it"}]}),
        response_item({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "reading"}]}),
        token_count(150_010, {"input_tokens": 150_000, "cached_input_tokens": 140_000, "output_tokens": 10}),
        {"type": "compacted", "payload": {"message": "the parser was fixed"}},
        response_item({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}]}),
        token_count(162_015, {"input_tokens": 12_000, "cached_input_tokens": 0, "output_tokens": 5}),
    ]
    path = tmp_path / "rollout.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    session_id, _ = import_session(path, nova_home)
    with Session.open(nova_home, session_id, readonly=True) as session:
        [boundary] = [r for r in session.transcript.iter_records() if isinstance(r, BoundaryRecord)]
    assert (boundary.tokens_before, boundary.tokens_after) == (150_000, 12_000)
