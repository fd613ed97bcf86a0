"""A Codex `compacted` record is a boundary for `--policy recorded`: from it on the replay sends its summary
instead of what it covered, as Codex did. No shared Codex rollout holds one (checked: the word appears
there only inside a tool output), so the rollout is written here in Codex's format."""

from __future__ import annotations

import json
from pathlib import Path

from tests.codex_rollout import response_item, token_count

from nova.evaluation.replay import replay_session
from nova.sessions.importers import read_session_file


def test_a_codex_compaction_is_where_the_recorded_replay_starts_again(tmp_path: Path) -> None:
    path = tmp_path / "rollout.jsonl"
    records = [
        {"type": "session_meta", "payload": {"id": "s1", "cwd": "/repo", "instructions": "Be terse."}},
        {"type": "turn_context", "payload": {"model": "gpt-5.2-codex", "cwd": "/repo"}},
        response_item({"type": "message", "role": "user", "content": [{"type": "input_text",
                                                                "text": "fix the parser " + "word " * 2000}]}),
        response_item({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "fixed"}]}),
        token_count(9_100, {"input_tokens": 9_000, "cached_input_tokens": 0, "output_tokens": 100}),
        {"type": "compacted", "payload": {"message": "Summary: the parser in src/parse.py was fixed."}},
        {"type": "event_msg", "payload": {"type": "user_message", "message": "now add a test"}},
        response_item({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "now add a test"}]}),
        response_item({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "added"}]}),
        token_count(10_000, {"input_tokens": 850, "cached_input_tokens": 0, "output_tokens": 50}),
    ]
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    session = read_session_file(path)
    report = replay_session(session, window=200_000, policy="recorded")
    assert report.calls == 2 and report.recorded_calls == 2
    assert report.compactions == 1 and report.per_call[1].event == "compaction"
    # Each call measured by its recorded usage: the second one sent the summary, not the 9,000 tokens.
    assert [c.input_tokens for c in report.per_call] == [9_000, 850]
    assert report.peak_context_tokens == 9_000
    assert report.final_view[0].has("summary")
    assert "fix the parser" not in json.dumps([p.text for m in report.final_view for p in m.parts
                                               if hasattr(p, "text")])
    # `naive` keeps what the boundary covered as well as the summary: more than Codex ever sent after it.
    naive = replay_session(session, window=200_000, policy="naive")
    assert naive.per_call[1].input_tokens > 9_000


def test_a_remote_compaction_is_its_replacement_history_not_its_empty_message(tmp_path: Path) -> None:
    # Codex's remote compaction (Codex CLI 0.10x on OpenAI models): `message` is empty and the new history
    # is `replacement_history`, the kept messages and an encrypted summary item.
    path = tmp_path / "rollout.jsonl"
    kept_prompt = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix the parser"}]}
    records = [
        {"type": "session_meta", "payload": {"id": "s1", "cwd": "/repo"}},
        {"type": "turn_context", "payload": {"model": "gpt-5.3-codex", "cwd": "/repo"}},
        {"type": "event_msg", "payload": {"type": "user_message", "message": "fix the parser"}},
        response_item(kept_prompt),
        response_item({"type": "message", "role": "assistant", "content": [{"type": "output_text",
                                                                     "text": "read " + "word " * 2000}]}),
        token_count(9_100, {"input_tokens": 9_000, "cached_input_tokens": 0, "output_tokens": 100}),
        {"type": "compacted", "payload": {"message": "", "replacement_history": [
            kept_prompt, {"type": "compaction", "encrypted_content": "gAAAAB"}]}},
        {"type": "event_msg", "payload": {"type": "context_compacted"}},
        {"type": "event_msg", "payload": {"type": "user_message", "message": "now add a test"}},
        response_item({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "now add a test"}]}),
        response_item({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "added"}]}),
        token_count(10_000, {"input_tokens": 850, "cached_input_tokens": 0, "output_tokens": 50}),
    ]
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    session = read_session_file(path)
    [summary] = [m for m in session.messages if m.has("summary")]
    assert "fix the parser" in summary.text and "encrypted" in summary.text
    report = replay_session(session, window=400_000, policy="recorded")
    assert report.compactions == 1 and report.per_call[1].event == "compaction"
    # The prompt Codex kept is still in the view after the compaction; the long reply it dropped is not.
    shown = "\n".join(p.text for m in report.final_view for p in m.parts if hasattr(p, "text"))
    assert "fix the parser" in shown and "word word" not in shown
