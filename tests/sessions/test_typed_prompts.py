"""Every prompt a person typed is imported as theirs, in order, from each format's real shared files: read
here from the raw file by that format's own record of what was typed, then compared with the user
entries of the import (`nova.messages.person_entries`) — which hold nothing the harness wrote."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from nova.messages import person_entries
from nova.model import usage_of
from nova.sessions.importers import read_session_file
from nova.testing import shared_data_dir
from nova.tokens import anchor_from_usage

SESSIONS = shared_data_dir() / "sessions"
needs_data = pytest.mark.skipif(not SESSIONS.is_dir(), reason=f"shared data absent ({SESSIONS}); set NOVA_SHARED_DATA")
LOCAL = ("<local-command-stdout>", "<local-command-stderr>", "Caveat: The messages below", "[Request interrupted")


def entries(path: Path) -> list[str]:
    return [text for m in read_session_file(path).messages for _, text in person_entries(m)]


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def claude_code_typed(path: Path) -> list[str]:
    """User records that are text (not tool results, not isMeta, not the summary, not a local command's
    output or a bare /clear), and the queued prompts delivered while tools ran (`remove`)."""
    typed: list[str] = []
    queue: list[str] = []
    for r in _lines(path):
        if r.get("isSidechain"):
            continue
        if r.get("type") == "queue-operation":
            if r.get("operation") == "enqueue":
                queue.append(r["content"])
            elif r.get("operation") == "remove" and queue:
                typed.append(queue.pop(0))
            elif r.get("operation") == "dequeue" and queue:
                queue.pop(0)
            elif r.get("operation") == "popAll":
                queue.clear()
            continue
        if r.get("type") != "user" or r.get("isMeta") or r.get("isCompactSummary"):
            continue
        content = r["message"]["content"]
        texts = [content] if isinstance(content, str) else [b["text"] for b in content if b.get("type") == "text"]
        for text in texts:
            bare_command = text.startswith("<command-name>/") and "<command-args></command-args>" in text
            if text.strip() and not text.startswith(LOCAL) and not bare_command:
                typed.append(text)
    return typed


@needs_data
@pytest.mark.parametrize("name", ["session-624a4a58.jsonl", "session-196820da.jsonl", "session-3fe1b6bc.jsonl",
                                  "session-9eda1058.jsonl"])
def test_claude_code_imports_every_typed_and_queued_prompt(name: str) -> None:
    path = SESSIONS / "codemie" / "claude-code" / name
    imported = entries(path)
    assert imported == claude_code_typed(path)
    assert not [t for t in imported if t.startswith(LOCAL)]


@needs_data
def test_a_prompt_queued_during_a_tool_loop_sits_beside_the_results_the_model_read_it_with() -> None:
    session = read_session_file(SESSIONS / "codemie" / "claude-code" / "session-624a4a58.jsonl")
    queued = "no, add conversationId field, but set value from sessionId"
    [holder] = [m for m in session.messages if any(text == queued for _, text in person_entries(m))]
    assert holder.has("tool_result")  # delivered with the Edit's result, as Claude Code delivered it
    # An entry of its own, under the id of the record that queued it (line 191), not the results message's.
    assert person_entries(holder) == [("m00191", queued)] and holder.id != "m00191"
    # And taken back into the input box unsent (popAll): not a prompt.
    other = read_session_file(SESSIONS / "codemie" / "claude-code" / "session-3fe1b6bc.jsonl")
    assert other.meta["withdrawn_prompts"] == 1
    assert "check 019b7f07-4a68-7d10-a8ef-8454269f439d" not in [t for m in other.messages for _, t in person_entries(m)]


@needs_data
@pytest.mark.parametrize("path", sorted((SESSIONS / "codemie" / "codex").glob("*.jsonl"))
                         + sorted((SESSIONS / "agentlogs" / "codex").glob("*.jsonl")), ids=lambda p: p.name)
def test_codex_imports_every_user_message_event(path: Path) -> None:
    typed = [r["payload"]["message"] for r in _lines(path)
             if r.get("type") == "event_msg" and r["payload"].get("type") == "user_message"]
    imported = entries(path)
    assert len(imported) == len(typed)
    for got, want in zip(imported, typed, strict=True):
        assert want.strip() in got
    assert not [t for t in imported if t.startswith(("# AGENTS.md", "<environment_context>"))]


@needs_data
@pytest.mark.parametrize("path", sorted((SESSIONS / "agentlogs" / "opencode").glob("*.json")), ids=lambda p: p.name)
def test_opencode_imports_every_typed_text(path: Path) -> None:
    doc = json.loads(path.read_text(encoding="utf-8"))
    typed = ["\n\n".join(p["text"] for p in m["parts"] if p.get("type") == "text" and not p.get("synthetic"))
             for m in doc["messages"] if m["info"]["role"] == "user"]
    assert entries(path) == [t for t in typed if t.strip()]


@needs_data
def test_cline_imports_the_task_and_the_feedback_but_not_its_environment_details() -> None:
    path = SESSIONS / "agentlogs" / "cline" / "crud.json"
    typed = [b["text"] for m in json.loads(path.read_text(encoding="utf-8")) if m["role"] == "user"
             for b in m["content"] if b.get("type") == "text" and b["text"].lstrip().startswith(("<task>", "<feedback>"))]
    assert len(typed) == 2 and entries(path) == typed


@needs_data
@pytest.mark.parametrize("path", sorted((SESSIONS / "agentlogs" / "pi").glob("*.jsonl")), ids=lambda p: p.name)
def test_pi_imports_every_prompt_on_the_branch_it_ends_on(path: Path) -> None:
    records = {r["id"]: r for r in _lines(path) if r.get("type") != "session"}
    at: str | None = list(records)[-1]
    branch = []
    while at is not None:
        branch.append(records[at])
        at = records[at].get("parentId")
    typed = [b["text"] for r in reversed(branch) if r.get("type") == "message" and r["message"]["role"] == "user"
             for b in r["message"]["content"] if b.get("type") == "text"]
    assert typed and entries(path) == typed
    # The command the person ran is imported for the model, but as pi's record of it, not a request.
    assert not [t for t in entries(path) if t.startswith("I ran `")]


@needs_data
@pytest.mark.parametrize("path", sorted((SESSIONS / "codemie" / "gemini-cli").glob("*.json")), ids=lambda p: p.name)
def test_gemini_cli_imports_every_prompt_and_each_call_with_its_result(path: Path) -> None:
    doc = json.loads(path.read_text(encoding="utf-8"))
    typed = [m["content"] for m in doc["messages"] if m["type"] == "user"]
    session = read_session_file(path)
    assert session.format == "gemini-cli"
    assert entries(path) == typed
    calls = [c for m in doc["messages"] for c in m.get("toolCalls") or ()]
    assert [u.id for m in session.messages for u in m.tool_uses()] == [c["id"] for c in calls]
    assert {r.tool_use_id for m in session.messages for r in m.tool_results()} == {c["id"] for c in calls}


def test_a_gemini_cli_replys_thoughts_are_reasoning_within_its_output(tmp_path: Path) -> None:
    # Gemini's `output` leaves the thoughts out (total = input + output + thoughts): billed as output,
    # never sent back.
    chat = {"sessionId": "s", "projectHash": "h", "startTime": "2026-01-16T11:01:00Z", "messages": [
        {"id": "1", "timestamp": "2026-01-16T11:01:00Z", "type": "user", "content": "hi"},
        {"id": "2", "timestamp": "2026-01-16T11:01:05Z", "type": "gemini", "content": "Hello.", "model": "gemini-3-pro",
         "tokens": {"input": 2752, "output": 55, "cached": 0, "thoughts": 156, "tool": 0, "total": 2963}},
    ]}
    path = tmp_path / "session-2026-01-16T11-01-s.json"
    path.write_text(json.dumps(chat), encoding="utf-8")
    reply = read_session_file(path).messages[-1]
    usage = usage_of(reply)
    assert usage is not None and (usage.output_tokens, usage.reasoning_tokens) == (211, 156)
    assert anchor_from_usage(reply.id, usage).total == 2752 + 55


def _write_lines(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    return path


def test_a_codex_compaction_is_a_summary_covering_what_came_before(tmp_path: Path) -> None:
    def item(payload: dict[str, Any]) -> dict[str, Any]:
        return {"type": "response_item", "timestamp": "2026-01-01T00:00:00Z", "payload": payload}

    path = _write_lines(tmp_path / "rollout.jsonl", [
        {"type": "session_meta", "payload": {"id": "s1", "cwd": "/repo"}},
        item({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix the parser"}]}),
        item({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}]}),
        {"type": "compacted", "payload": {"message": "Summary: the parser in src/parse.py was fixed."}},
        {"type": "event_msg", "payload": {"type": "user_message", "message": "now add a test"}},
    ])
    messages = read_session_file(path).messages
    [summary] = [m for m in messages if m.metadata.get("compaction")]
    assert summary.metadata["compaction"]["source"] == "codex" and summary.has("summary")
    assert summary.parts[0].covers == tuple(m.id for m in messages[: messages.index(summary)])  # type: ignore[union-attr]
    assert [t for m in messages for _, t in person_entries(m)] == ["fix the parser", "now add a test"]


def test_an_opencode_and_a_pi_compaction_are_summaries_not_requests(tmp_path: Path) -> None:
    opencode = tmp_path / "session.json"
    opencode.write_text(json.dumps({"info": {"id": "ses"}, "messages": [
        {"info": {"id": "m1", "role": "user"}, "parts": [{"type": "text", "text": "rename the flag"}]},
        {"info": {"id": "m2", "role": "assistant"}, "parts": [{"type": "text", "text": "renamed"}]},
        {"info": {"id": "m3", "role": "user"}, "parts": [{"type": "compaction"}]},
        {"info": {"id": "m4", "role": "assistant", "summary": True}, "parts": [{"type": "text", "text": "Renamed --x."}]},
        {"info": {"id": "m5", "role": "user"}, "parts": [{"type": "text", "text": "thanks", "synthetic": False},
                                                         {"type": "text", "text": "<file>", "synthetic": True}]},
    ]}), encoding="utf-8")
    messages = read_session_file(opencode).messages
    assert [m.metadata["compaction"]["source"] for m in messages if m.metadata.get("compaction")] == ["opencode"]
    assert [t for m in messages for _, t in person_entries(m)] == ["rename the flag", "thanks"]
    pi = _write_lines(tmp_path / "pi.jsonl", [
        {"type": "session", "version": 3, "id": "p1", "cwd": "/repo"},
        {"type": "message", "id": "a", "parentId": None, "message": {"role": "user", "content": "write haiku.txt"}},
        {"type": "message", "id": "b", "parentId": "a", "message": {"role": "assistant",
                                                                      "content": [{"type": "text", "text": "ok"}]}},
        {"type": "compaction", "id": "c", "parentId": "b", "summary": "Wrote haiku.txt.", "tokensBefore": 9000},
        {"type": "message", "id": "d", "parentId": "c", "message": {"role": "user", "content": "and a limerick"}},
    ])
    messages = read_session_file(pi).messages
    [summary] = [m for m in messages if m.metadata.get("compaction")]
    assert summary.metadata["compaction"]["tokens_before"] == 9000 and summary.text == "Wrote haiku.txt."
    assert [t for m in messages for _, t in person_entries(m)] == ["write haiku.txt", "and a limerick"]
