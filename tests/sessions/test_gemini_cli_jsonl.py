"""Newer Gemini CLI writes a chat as an append-only JSON-lines log (`chats/session-*.jsonl`): a metadata
line, each message again in full whenever it changes, `$set` patches and `$rewindTo` truncations. It is
read as the chat Gemini CLI loads from it, by the same reader as the older whole-chat file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from nova.model import usage_of
from nova.sessions.importers import read_session_file

T = "2026-09-10T18:13:{:02d}.000Z"


def _log(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def _call(status: str, output: str | None = None) -> dict[str, Any]:
    call: dict[str, Any] = {"id": "c1", "name": "run_shell_command", "args": {"command": "ls"}, "status": status}
    if output is not None:
        call["result"] = [{"functionResponse": {"id": "c1", "name": "run_shell_command",
                                                "response": {"output": output}}}]
    return call


def test_the_log_is_folded_into_the_chat_gemini_cli_loads(tmp_path: Path) -> None:
    path = _log(tmp_path / "session-2026-09-10T18-13-g1.jsonl", [
        {"sessionId": "g1", "projectHash": "abc", "startTime": T.format(0), "lastUpdated": T.format(0)},
        {"id": "u1", "timestamp": T.format(1), "type": "user", "content": [{"text": "list the files"}]},
        {"id": "m1", "timestamp": T.format(2), "type": "gemini", "content": "", "model": "gemini-2.5-pro",
         "toolCalls": [_call("executing")]},
        {"$set": {"lastUpdated": T.format(3)}},
        # The same message again once its call returned, now with its usage: the last copy is the message.
        {"id": "m1", "timestamp": T.format(2), "type": "gemini", "content": "", "model": "gemini-2.5-pro",
         "toolCalls": [_call("success", "a.py")], "tokens": {"input": 1000, "output": 20, "cached": 200,
                                                             "thoughts": 5, "tool": 0, "total": 1025}},
        {"id": "m2", "timestamp": T.format(4), "type": "gemini", "content": "One file: a.py.", "model": "gemini-2.5-pro"},
        {"id": "u2", "timestamp": T.format(5), "type": "user", "content": [{"text": "delete it"}]},
        {"id": "m3", "timestamp": T.format(6), "type": "gemini", "content": "Deleting.", "model": "gemini-2.5-pro"},
        # The person rewound to before "delete it": it and what followed are not in the chat.
        {"$rewindTo": "u2"},
    ])
    session = read_session_file(path)
    assert session.format == "gemini-cli"
    assert [m.role for m in session.messages] == ["user", "assistant", "user", "assistant"]
    call = session.messages[1]
    assert [u.id for u in call.tool_uses()] == ["c1"]
    assert [r.content for r in session.messages[2].tool_results()] == ["a.py"]
    usage = usage_of(call)
    assert usage is not None and usage.context_tokens == 1000
    assert "delete it" not in json.dumps([m.text for m in session.messages])
    assert session.meta["model"] == "gemini-2.5-pro"


def test_a_set_of_messages_starts_the_chat_anew(tmp_path: Path) -> None:
    path = _log(tmp_path / "session-2026-09-10T18-13-g2.jsonl", [
        {"sessionId": "g2", "projectHash": "abc", "startTime": T.format(0)},
        {"id": "u1", "timestamp": T.format(1), "type": "user", "content": "first try"},
        {"$set": {"messages": [{"id": "u9", "timestamp": T.format(2), "type": "user", "content": "start over"}]}},
        {"id": "m1", "timestamp": T.format(3), "type": "gemini", "content": "Starting over."},
    ])
    session = read_session_file(path)
    assert [m.text for m in session.messages] == ["start over", "Starting over."]
