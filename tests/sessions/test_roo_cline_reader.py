"""Roo Code's and Cline's task files: `api_conversation_history.json` (Anthropic Messages plus Roo's own
fields: `ts`, `isSummary` / `condenseId` / `condenseParent`, `isTruncationMarker`, reasoning items
without a role) and the `ui_messages.json` beside it, whose `api_req_started` entries carry the usage."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from nova.evaluation.replay import replay_messages
from nova.history.invariants import check_tool_pairing
from nova.messages import SummaryPart
from nova.model import usage_of
from nova.sessions.export import import_sessions
from nova.sessions.importers import read_session_file
from nova.sessions.schema import BoundaryRecord
from nova.sessions.transcript import Transcript

TASK = Path(__file__).parent.parent / "fixtures" / "sessions" / "roo" / "task-7c1e"
HISTORY = TASK / "api_conversation_history.json"


def test_roo_history_reads_past_reasoning_items_and_markers() -> None:
    imported = read_session_file(HISTORY)
    assert imported.format == "anthropic"
    assert [m.role for m in imported.messages] == ["user", "assistant", "user", "assistant", "user", "user",
                                                   "assistant", "user"]
    assert imported.meta["reasoning_items"] == 1 and imported.meta["truncation_markers"] == 1
    assert imported.meta["source_counts"] == {"responses": 3, "tool_calls": 3, "tool_results": 3}
    assert check_tool_pairing(imported.messages) == []
    # `ts` is epoch milliseconds.
    assert imported.messages[0].created_at == 1748959800.0 and imported.messages[1].created_at == 1748959802.0


def test_roo_condensing_becomes_a_summary_covering_what_it_replaced(nova_home: Path) -> None:
    messages = read_session_file(HISTORY).messages
    summary = messages[5]
    part = summary.parts[0]
    assert isinstance(part, SummaryPart) and part.text.startswith("## Conversation Summary")
    assert part.covers == tuple(m.id for m in messages[1:5])
    assert summary.metadata["compaction"]["source"] == "roo"
    result = import_sessions(HISTORY, nova_home)
    log = nova_home / "sessions" / result.session_id / "transcript.jsonl"
    boundaries = [r for r in Transcript(log).iter_records() if isinstance(r, BoundaryRecord)]
    assert len(boundaries) == 1 and boundaries[0].covers == part.covers


def test_usage_comes_from_ui_messages_matched_by_time() -> None:
    imported = read_session_file(HISTORY)
    assert imported.meta["usage_from"] == "time"
    responses = [m for m in imported.messages if m.role == "assistant"]
    usages = [usage_of(m) for m in responses]
    assert [u.context_tokens if u else None for u in usages] == [12 + 9100, 9 + 350 + 9100, 6 + 180 + 2000]
    # The request that failed (retried 100 ms later) is nobody's usage.
    assert [m.metadata["cost_usd"] for m in responses] == [0.0354, 0.0059, 0.0023]
    # So a replay starts at the size the real first request had.
    report = replay_messages(imported.messages, system=imported.system, window=32000, policy="naive")
    assert abs(report.per_call[0].input_tokens - 9112) <= 9112 * 0.01


def test_cline_usage_from_ui_messages_in_order(tmp_path: Path) -> None:
    """Cline's messages carry no `ts`: with as many finished requests as responses, they pair in order."""
    history = json.loads(HISTORY.read_text(encoding="utf-8"))
    plain = [{"role": m["role"], "content": m["content"]} for m in history
             if "role" in m and not m.get("isSummary") and not m.get("isTruncationMarker")]
    ui = [e for e in json.loads((TASK / "ui_messages.json").read_text(encoding="utf-8"))
          if e.get("say") != "api_req_started" or json.loads(e["text"])["tokensOut"]]
    (tmp_path / "api_conversation_history.json").write_text(json.dumps(plain), encoding="utf-8")
    (tmp_path / "ui_messages.json").write_text(json.dumps(ui), encoding="utf-8")
    imported = read_session_file(tmp_path / "api_conversation_history.json")
    assert imported.meta["usage_from"] == "order"
    first = usage_of(imported.messages[1])
    assert first is not None and first.context_tokens == 9112 and first.output_tokens == 80
    # Without the sibling file nothing is invented.
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy(tmp_path / "api_conversation_history.json", alone)
    bare = read_session_file(alone / "api_conversation_history.json")
    assert "usage_from" not in bare.meta and usage_of(bare.messages[1]) is None
