"""`nova replay --price MODEL` is a fallback price, not a repricing: each call is priced at the model the
recording names for it, and --price only where the recording names none or names one the model table
does not know. The text report says which model priced how many calls."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from nova.cli.main import app
from nova.evaluation.replay import replay_session
from nova.sessions.importers import read_session_file

NAMED = "claude-sonnet-4-5-20250929"


def _record(kind: str, n: int, message: dict[str, Any]) -> dict[str, Any]:
    return {"type": kind, "uuid": f"u{n}", "parentUuid": f"u{n - 1}" if n > 1 else None, "sessionId": "s1",
            "timestamp": f"2025-10-06T10:{n:02d}:00.000Z", "cwd": "/repo", "version": "2.0.76", "message": message}


def _reply(n: int, model: str | None, tokens: int) -> dict[str, Any]:
    message: dict[str, Any] = {"id": f"msg{n}", "role": "assistant", "type": "message",
                               "content": [{"type": "text", "text": f"answer {n}"}],
                               "usage": {"input_tokens": 10, "cache_creation_input_tokens": 0,
                                         "cache_read_input_tokens": tokens, "output_tokens": 50}}
    if model is not None:
        message["model"] = model
    return _record("assistant", n, message)


def _write(tmp_path: Path, models: list[str | None]) -> Path:
    records: list[dict[str, Any]] = []
    for i, model in enumerate(models):
        records.append(_record("user", 2 * i + 1, {"role": "user", "content": f"question {i}"}))
        records.append(_reply(2 * i + 2, model, 12_000 + 500 * i))
    path = tmp_path / "s1.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_calls_naming_a_known_model_are_priced_at_it_whatever_price_says(tmp_path: Path) -> None:
    session = read_session_file(_write(tmp_path, [NAMED, NAMED, NAMED]))
    costs = {price: replay_session(session, window=200_000, policy="recorded", price_model=price)
             for price in ("claude-haiku-4-5", "claude-opus-4-1")}
    assert len({(r.cost_usd, r.output_cost_usd) for r in costs.values()}) == 1
    assert all(r.priced_by == ((NAMED, "named by the recording", 3),) for r in costs.values())


def test_price_stands_in_for_a_model_unnamed_or_unknown(tmp_path: Path) -> None:
    session = read_session_file(_write(tmp_path, [NAMED, None, "claude-nightly-x"]))
    without = replay_session(session, window=200_000, policy="recorded")
    assert without.cost_usd is None and without.unpriced_models == ("claude-nightly-x", "unknown model")
    assert without.priced_by == ((NAMED, "named by the recording", 1),)
    cheap = replay_session(session, window=200_000, policy="recorded", price_model="claude-haiku-4-5")
    dear = replay_session(session, window=200_000, policy="recorded", price_model="claude-opus-4-1")
    assert cheap.cost_usd is not None and dear.cost_usd is not None and cheap.cost_usd < dear.cost_usd
    assert cheap.priced_by == (
        (NAMED, "named by the recording", 1),
        ("claude-haiku-4-5", "--price: the call names no model", 1),
        ("claude-haiku-4-5", "--price: no price for claude-nightly-x", 1),
    )
    # The bill takes --price for the call naming no model only; the unknown model leaves it unknown.
    assert cheap.billed_usd is None and "claude-nightly-x" in cheap.unpriced_models


def test_the_text_report_says_which_model_priced_what(tmp_path: Path) -> None:
    path = _write(tmp_path, [NAMED, None, NAMED])
    result = CliRunner().invoke(app, ["replay", str(path), "--policy", "recorded", "--price", "claude-haiku-4-5"])
    assert result.exit_code == 0, result.output
    lines = [line.strip() for line in result.stdout.splitlines() if line.strip().startswith("priced:")]
    assert lines == [f"priced: 2 calls at {NAMED} (named by the recording), 1 call at claude-haiku-4-5 "
                     "(--price: the call names no model)"]
    helped = CliRunner().invoke(app, ["replay", "--help"], env={"COLUMNS": "200"})
    assert "Fallback price" in helped.stdout and "Price the figures as this model" not in helped.stdout


def test_an_unknown_cost_says_why_and_what_gives_one(tmp_path: Path) -> None:
    path = _write(tmp_path, [NAMED, None, "claude-nightly-x"])
    result = CliRunner().invoke(app, ["replay", str(path), "--policy", "recorded"])
    assert result.exit_code == 0, result.output
    # The line may wrap at the console's width.
    assert "cost unknown (no price for claude-nightly-x; calls that name no model: --price MODEL gives a " \
        "fallback)" in " ".join(result.stdout.split())
