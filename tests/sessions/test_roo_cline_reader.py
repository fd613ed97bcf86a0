"""Roo Code's and Cline's task files: `api_conversation_history.json` (Anthropic Messages plus Roo's own
fields: `ts`, `isSummary` / `condenseId` / `condenseParent`, `isTruncationMarker`, reasoning items
without a role) and the `ui_messages.json` beside it, whose `api_req_started` entries carry the usage."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from nova.evaluation.replay import replay_messages
from nova.history.invariants import check_tool_pairing
from nova.messages import SummaryPart
from nova.model import usage_of
from nova.sessions.export import import_sessions
from nova.sessions.importers import SessionImportError, read_session_file
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


def _cline_history(cached: list[int]) -> list[dict[str, object]]:
    """A Cline history whose responses carry `metrics.tokens` (Cline 3.x): `cached` is each call's cache
    reads and writes together."""
    history: list[dict[str, object]] = [{"role": "user", "content": [{"type": "text", "text": "<task>tidy</task>"}]}]
    for i, total in enumerate(cached):
        history.append({"role": "assistant", "content": [{"type": "text", "text": f"step {i}"}],
                        "modelInfo": {"modelId": "claude-sonnet-4-5-20250929", "providerId": "anthropic"},
                        "metrics": {"tokens": {"prompt": 10, "completion": 50, "cached": total}}})
        history.append({"role": "user", "content": [{"type": "text", "text": f"[TASK RESUMPTION] {i}"}]})
    return history


def test_cline_metrics_cached_is_reads_and_writes_split_as_a_warm_cache_splits_them(tmp_path: Path) -> None:
    path = tmp_path / "api_conversation_history.json"
    path.write_text(json.dumps(_cline_history([9_000, 12_000, 12_500])), encoding="utf-8")
    imported = read_session_file(path)
    # Text blocks only, but `modelInfo` and `metrics` are Cline's: not read as an OpenAI chat list.
    assert imported.format == "anthropic"
    usages = [usage_of(m) for m in imported.messages if m.role == "assistant"]
    assert [(u.cache_read_tokens, u.cache_write_tokens) if u else None for u in usages] == [
        (0, 9_000), (9_000, 3_000), (12_000, 500)]
    assert imported.meta["cache_split_estimated"] == 3


def test_cline_ui_messages_replace_the_estimated_split(tmp_path: Path) -> None:
    path = tmp_path / "api_conversation_history.json"
    path.write_text(json.dumps(_cline_history([9_000, 12_000])), encoding="utf-8")
    # The cache went cold before the second call: it read nothing and wrote everything again.
    ui = [{"ts": 1, "type": "say", "say": "api_req_started",
           "text": json.dumps({"tokensIn": 10, "tokensOut": 50, "cacheWrites": w, "cacheReads": r, "cost": c})}
          for w, r, c in ((9_000, 0, 0.035), (12_000, 0, 0.046))]
    (tmp_path / "ui_messages.json").write_text(json.dumps(ui), encoding="utf-8")
    imported = read_session_file(path)
    responses = [m for m in imported.messages if m.role == "assistant"]
    second = usage_of(responses[1])
    assert second is not None and (second.cache_read_tokens, second.cache_write_tokens) == (0, 12_000)
    assert [m.metadata["cost_usd"] for m in responses] == [0.035, 0.046]
    assert imported.meta["usage_from"] == "order" and "cache_split_estimated" not in imported.meta


def test_a_cline_task_folder_is_read_as_its_conversation_and_named_after_the_task(tmp_path: Path) -> None:
    task = tmp_path / "tasks" / "1769064454592"
    task.mkdir(parents=True)
    (task / "api_conversation_history.json").write_text(json.dumps(_cline_history([9_000])), encoding="utf-8")
    (task / "ui_messages.json").write_text("[]", encoding="utf-8")
    imported = read_session_file(task)
    assert imported.format == "anthropic" and imported.title == "1769064454592"
    assert imported.source_path == task / "api_conversation_history.json"
    # The UI log beside it is not the conversation: the refusal names the file to give instead.
    with pytest.raises(SessionImportError, match=r"give .*api_conversation_history\.json"):
        read_session_file(task / "ui_messages.json")
