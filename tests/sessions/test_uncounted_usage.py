"""A recording whose usage counts a few tokens for a request that held tens of thousands (early Claude
Code wrote each call's uncached input with its cache fields at 0) is not trusted as a measure: that usage
is set aside when the file is read, those calls are replayed as estimated, and the bill is unknown rather
than a tenth of what the session cost. Usage that can have counted its request is kept as it was."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from nova.evaluation.replay import billed_usd, replay_session
from nova.messages import Message, SummaryPart, ToolResultPart, ToolUsePart
from nova.model import Usage, usage_of
from nova.sessions.importers import read_session_file
from nova.sessions.readers.usage_check import UNCOUNTED_USAGE, set_aside_uncounted_usage


def _reply(id: str, tokens: int, *calls: ToolUsePart) -> Message:
    return Message(role="assistant", parts=calls, id=id,
                   metadata={"usage": Usage(input_tokens=tokens, output_tokens=40).to_dict()})


def _results(id: str, call: str, chars: int) -> Message:
    return Message(role="user", parts=(ToolResultPart(call, "x" * chars),), id=id)


def test_usage_under_a_token_per_ten_characters_sent_is_set_aside() -> None:
    read = ToolUsePart("c1", "Read", {"file_path": "/repo/big.py"})
    history = [Message.user("look at big.py", id="u1"), _reply("a1", 9_000, read), _results("r1", "c1", 40_000),
               _reply("a2", 4), Message.user("and again", id="u2"), _reply("a3", 12_000)]
    kept, moved = set_aside_uncounted_usage(history)
    assert moved == 1
    assert usage_of(kept[3]) is None and kept[3].metadata[UNCOUNTED_USAGE] == history[3].metadata["usage"]
    assert [usage_of(m) for i, m in enumerate(kept) if i != 3] == [usage_of(m) for i, m in enumerate(history) if i != 3]
    assert set_aside_uncounted_usage(kept) == (kept, 0)  # nothing left to set aside


def test_a_recorded_compaction_starts_the_count_again() -> None:
    summary = Message(role="user", parts=(SummaryPart("short summary"),), id="s1")
    history = [Message.user("x" * 50_000, id="u1"), _reply("a1", 12_000), summary, _reply("a2", 300)]
    _, moved = set_aside_uncounted_usage(history)
    assert moved == 0  # 300 tokens may well be the summary and the system prompt


def _record(kind: str, n: int, message: dict[str, Any]) -> dict[str, Any]:
    return {"type": kind, "uuid": f"r{n}", "parentUuid": f"r{n - 1}" if n > 1 else None, "sessionId": "s1",
            "timestamp": f"2025-05-15T20:{n:02d}:00.000Z", "cwd": "/repo", "version": "0.2.106", "message": message}


def test_a_claude_code_file_with_such_usage_has_no_bill(tmp_path: Path) -> None:
    records = [_record("user", 1, {"role": "user", "content": "explain the parser " + "in detail " * 2_000})]
    for n in range(2, 8, 2):
        records.append(_record("assistant", n, {
            "id": f"msg{n}", "role": "assistant", "model": "claude-3-7-sonnet-20250219", "type": "message",
            "content": [{"type": "text", "text": "Looking at it. " * 50}],
            "usage": {"input_tokens": 4, "output_tokens": 90, "cache_creation_input_tokens": 0,
                      "cache_read_input_tokens": 0}}))
        records.append(_record("user", n + 1, {"role": "user", "content": "go on"}))
    path = tmp_path / "s1.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    session = read_session_file(path)
    replies = [m for m in session.messages if m.role == "assistant"]
    assert all(usage_of(m) is None and UNCOUNTED_USAGE in m.metadata for m in replies)
    assert billed_usd(session.messages) == (None, ())
    report = replay_session(session, window=200_000, policy="recorded")
    assert report.billed_usd is None and report.uncounted_usage_calls == 3
    assert report.to_json()["uncounted_usage_calls"] == 3
    assert report.peak_context_tokens > 5_000  # estimated, not the 4 tokens the records say


def test_a_compaction_the_file_does_not_mark_keeps_its_smaller_usage() -> None:
    # The agent compacted where its file has no boundary: later requests are far smaller than the
    # history before them, and their usage is right.
    read = ToolUsePart("c1", "Read", {"file_path": "/repo/big.py"})
    history = [Message.user("look at big.py", id="u1"), _reply("a1", 120_000, read), _results("r1", "c1", 400_000),
               _reply("a2", 150_000), Message.user("go on", id="u2"), _reply("a3", 26_000),
               Message.user("and the tests", id="u3"), _reply("a4", 27_500)]
    assert set_aside_uncounted_usage(history) == (history, 0)


def test_one_short_figure_among_real_ones_is_set_aside_alone() -> None:
    # A figure under what its call answered, but far from nothing (a harness that sent less of a tool's
    # output than it recorded): that call's usage goes, the others' stay.
    read = ToolUsePart("c1", "Read", {"file_path": "/repo/big.py"})
    history = [Message.user("look at big.py", id="u1"), _reply("a1", 30_000, read), _results("r1", "c1", 400_000),
               _reply("a2", 32_000), Message.user("go on", id="u2"), _reply("a3", 33_000)]
    kept, moved = set_aside_uncounted_usage(history)
    assert moved == 1 and usage_of(kept[3]) is None and usage_of(kept[5]) is not None
