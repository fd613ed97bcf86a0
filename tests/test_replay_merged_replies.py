"""A recording's model replies in a row (an older Gemini CLI chat, which did not record the tool calls
between them) were each a call: the replay used to merge them into one call while the bill priced all."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from nova.cli.main import app

runner = CliRunner()


def _chat(path: Path) -> Path:
    def reply(i: int, tokens: dict[str, int]) -> dict[str, object]:
        return {"id": f"g{i}", "timestamp": f"2025-10-11T13:00:{10 + i:02d}Z", "type": "gemini",
                "content": f"step {i} done", "model": "gemini-2.5-pro", "tokens": tokens}

    used = [{"input": 8_000 + 1_000 * i, "output": 50, "cached": 0, "thoughts": 10, "tool": 0,
             "total": 8_060 + 1_000 * i} for i in range(4)]
    zero = {"input": 0, "output": 0, "cached": 0, "thoughts": 0, "tool": 0, "total": 0}
    messages = [{"id": "u1", "timestamp": "2025-10-11T13:00:00Z", "type": "user", "content": "rename the tool"},
                reply(0, used[0]), reply(1, used[1]), reply(2, zero), reply(3, used[2]), reply(4, used[3])]
    path.write_text(json.dumps({"sessionId": "s", "projectHash": "h", "messages": messages}), encoding="utf-8")
    return path


def test_replies_in_a_row_are_each_a_call_and_the_bill_says_which_it_covers(tmp_path: Path) -> None:
    path = _chat(tmp_path / "session-2025-10-11T13-00-abcd.json")
    result = runner.invoke(app, ["replay", str(path), "--policy", "recorded", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output.strip().splitlines()[-1])
    assert report["calls"] == 5
    # The four calls that record usage are the bill; the one with all zeros recorded none.
    expected = sum((8_000 + 1_000 * i) * 1.25 + 60 * 10.0 for i in range(4)) / 1e6
    assert abs(report["billed_usd"] - expected) < 1e-6
    text = runner.invoke(app, ["replay", str(path), "--policy", "recorded"])
    assert "the recorded usage of 4 of the 5 calls" in text.output and "1 records none" in text.output
