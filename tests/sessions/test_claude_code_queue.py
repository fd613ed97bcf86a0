"""Claude Code 2.1 queues a background task's `<task-notification>` in the same queue as the prompts the
person types while tools run: a `remove` delivers the person's prompt beside the next results, and the
notification comes later as a user record of its own (Claude Code's text, not the person's). The prompt
behind a waiting notification is not lost."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from nova.messages import TextPart, person_entries
from nova.sessions.importers import read_session_file

NOTIFICATION = "<task-notification>\n<task-id>b1</task-id>\n<status>completed</status>\n</task-notification>"


def _record(kind: str, n: int, **fields: Any) -> dict[str, Any]:
    return {"type": kind, "uuid": f"r{n}", "parentUuid": f"r{n - 1}" if n > 1 else None, "sessionId": "s1",
            "timestamp": f"2026-02-11T20:{n:02d}:00.000Z", "cwd": "/repo", **fields}


def _call(n: int, call: str) -> dict[str, Any]:
    return _record("assistant", n, message={"id": f"msg{n}", "role": "assistant", "model": "claude-opus-4-6",
                                            "content": [{"type": "tool_use", "id": call, "name": "Bash",
                                                         "input": {"command": "make test"}}],
                                            "usage": {"input_tokens": 3, "output_tokens": 9}})


def _result(n: int, call: str) -> dict[str, Any]:
    return _record("user", n, message={"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": call, "content": "ok"}]})


def _queue(operation: str, n: int, content: str | None = None) -> dict[str, Any]:
    return {"type": "queue-operation", "operation": operation, "sessionId": "s1",
            "timestamp": f"2026-02-11T20:{n:02d}:30.000Z", **({"content": content} if content else {})}


def test_a_remove_delivers_the_typed_prompt_not_the_waiting_notification(tmp_path: Path) -> None:
    records = [
        _record("user", 1, message={"role": "user", "content": "run the tests in the background"}),
        _call(2, "t1"), _result(3, "t1"),
        _queue("enqueue", 3, NOTIFICATION),
        _call(4, "t2"),
        _queue("enqueue", 4, "also fix the lint"),
        _queue("remove", 4),
        _result(5, "t2"),
        _record("assistant", 6, message={"id": "msg6", "role": "assistant", "model": "claude-opus-4-6",
                                         "content": [{"type": "text", "text": "fixing the lint too"}],
                                         "usage": {"input_tokens": 3, "output_tokens": 5}}),
        _record("user", 7, message={"role": "user", "content": NOTIFICATION}),
    ]
    path = tmp_path / "s1.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    messages = read_session_file(path).messages
    [holder] = [m for m in messages if any(text == "also fix the lint" for _, text in person_entries(m))]
    assert [r.tool_use_id for r in holder.tool_results()] == ["t2"]
    texts = [text for m in messages for _, text in person_entries(m)]
    assert texts == ["run the tests in the background", "also fix the lint"]
    # The notification is Claude Code's, not the person's: in the conversation once, marked harness.
    [notice] = [p for m in messages for p in m.parts if isinstance(p, TextPart) and p.text == NOTIFICATION]
    assert notice.harness
