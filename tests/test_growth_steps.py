"""The growth steps read from a Claude Code session hold everything the next request held: with parallel
tool calls, Claude Code writes one record per call and links each result to its own call's record, so a
root-to-leaf path passes through only some calls and results; the step still holds them all."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from nova.messages import TextPart, ToolResultPart, ToolUsePart
from nova.tokens.calibration import claude_code_steps


def _record(uuid: str, parent: str | None, kind: str, message: dict[str, Any]) -> str:
    return json.dumps({"type": kind, "uuid": uuid, "parentUuid": parent, "isSidechain": False,
                       "sessionId": "s", "timestamp": "2025-10-12T21:35:53.825Z", "message": message})


def _assistant(msg_id: str, block: dict[str, Any], real: int) -> dict[str, Any]:
    return {"id": msg_id, "role": "assistant", "model": "claude-sonnet-4-5-20250929", "content": [block],
            "usage": {"input_tokens": 3, "cache_read_input_tokens": real - 3, "output_tokens": 40}}


def _result(call: str, text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call, "content": text}]}


def test_parallel_calls_and_their_results_off_the_path_are_in_the_step(tmp_path: Path) -> None:
    lines = [
        _record("u0", None, "user", {"role": "user", "content": "read both files"}),
        _record("a1", "u0", "assistant", _assistant("msgA", {"type": "text", "text": "Reading both."}, 1000)),
        _record("a2", "a1", "assistant", _assistant("msgA", {"type": "tool_use", "id": "t1", "name": "Read",
                                                               "input": {"file_path": "one.py"}}, 1000)),
        _record("a3", "a2", "assistant", _assistant("msgA", {"type": "tool_use", "id": "t2", "name": "Read",
                                                               "input": {"file_path": "two.py"}}, 1000)),
        # Each result links to its own call's record; the next response links to the first result only.
        _record("r1", "a2", "user", _result("t1", "first file " * 50)),
        _record("r2", "a3", "user", _result("t2", "second file " * 300)),
        _record("b1", "r1", "assistant", _assistant("msgB", {"type": "text", "text": "Done."}, 2200)),
    ]
    path = tmp_path / "session.jsonl"
    path.write_text("\n".join(lines) + "\n")
    [step] = claude_code_steps(path)
    assert (step.previous_real, step.real) == (1000, 2200)
    reply, back = step.added
    assert [p.id for p in reply.parts if isinstance(p, ToolUsePart)] == ["t1", "t2"]
    results = [p for p in back.parts if isinstance(p, ToolResultPart)]
    assert [r.tool_use_id for r in results] == ["t1", "t2"]
    assert results[1].content.startswith("second file")


def _thinking_call(msg_id: str, call: str, real: int, output: int) -> dict[str, Any]:
    return {"id": msg_id, "role": "assistant", "model": "claude-sonnet-4-5-20250929",
            "content": [{"type": "thinking", "thinking": "Read it first.", "signature": "sig"},
                        {"type": "tool_use", "id": call, "name": "Read", "input": {"file_path": "one.py"}}],
            "usage": {"input_tokens": 3, "cache_read_input_tokens": real - 3, "output_tokens": output}}


def test_a_prompt_written_while_the_tools_ran_starts_a_turn_without_the_replys_thinking(tmp_path: Path) -> None:
    lines = [
        _record("u0", None, "user", {"role": "user", "content": "read one.py"}),
        _record("a1", "u0", "assistant", _thinking_call("msgA", "t1", 1000, 900)),
        _record("r1", "a1", "user", _result("t1", "print(1)")),
        _record("b1", "r1", "assistant", _thinking_call("msgB", "t2", 1950, 700)),
        _record("r2", "b1", "user", _result("t2", "print(2)")),
        _record("i2", "r2", "user", {"role": "user", "content": [{"type": "text", "text": "[Request interrupted by user]"}]}),
        _record("u2", "i2", "user", {"role": "user", "content": "use two.py instead"}),
        _record("c1", "u2", "assistant", _assistant("msgC", {"type": "text", "text": "Reading two.py."}, 2100)),
    ]
    path = tmp_path / "session.jsonl"
    path.write_text("\n".join(lines) + "\n")
    tool_loop, interrupted = claude_code_steps(path)
    # The result alone continues the turn: the reply's thinking (its output count less the visible
    # call) is input again. The prompt beside the next result opens a new turn: it is not.
    assert tool_loop.reasoning > 0 and not tool_loop.ends_turn
    assert interrupted.reasoning == 0 and interrupted.ends_turn


def test_a_step_whose_prompt_mentions_a_file_says_the_file_is_not_in_the_records(tmp_path: Path) -> None:
    lines = [
        _record("u0", None, "user", {"role": "user", "content": "hello"}),
        _record("a1", "u0", "assistant", _assistant("msgA", {"type": "text", "text": "Hi."}, 1000)),
        _record("u1", "a1", "user", {"role": "user", "content": "follow @docs/plan.md, and mail me@example.com"}),
        _record("b1", "u1", "assistant", _assistant("msgB", {"type": "text", "text": "Done."}, 3000)),
        _record("u2", "b1", "user", {"role": "user", "content": "thanks; @property stays"}),
        _record("c1", "u2", "assistant", _assistant("msgC", {"type": "text", "text": "Ok."}, 3050)),
    ]
    path = tmp_path / "session.jsonl"
    path.write_text("\n".join(lines) + "\n")
    mentioned, plain = claude_code_steps(path)
    assert mentioned.unrecorded == ("docs/plan.md",)
    assert plain.unrecorded == ()


def _attachment(uuid: str, parent: str, attachment: dict[str, Any]) -> str:
    return json.dumps({"type": "attachment", "uuid": uuid, "parentUuid": parent, "isSidechain": False,
                       "sessionId": "s", "timestamp": "2026-01-14T19:20:57.728Z", "attachment": attachment})


def test_what_newer_claude_code_attaches_is_in_the_step(tmp_path: Path) -> None:
    memory = "Agents register themselves in registry.ts. " * 40
    lines = [
        _record("u0", None, "user", {"role": "user", "content": "read the registry"}),
        _record("a1", "u0", "assistant", _assistant("msgA", {"type": "tool_use", "id": "t1", "name": "Read",
                                                               "input": {"file_path": "/repo/src/agents/registry.ts"}}, 1000)),
        _record("r1", "a1", "user", _result("t1", "export class AgentRegistry {}")),
        # Reading a file under src/agents loads src/agents/CLAUDE.md; the record holds it.
        _attachment("n1", "r1", {"type": "nested_memory", "path": "/repo/src/agents/CLAUDE.md",
                                 "content": {"path": "/repo/src/agents/CLAUDE.md", "type": "Project", "content": memory}}),
        _attachment("d1", "n1", {"type": "deferred_tools_delta", "addedNames": ["WebFetch"]}),
        _record("b1", "d1", "assistant", _assistant("msgB", {"type": "text", "text": "Read."}, 2000)),
        _record("u2", "b1", "user", {"role": "user", "content": "now follow @docs/plan.md"}),
        _attachment("f1", "u2", {"type": "file", "filename": "/repo/docs/plan.md",
                                 "content": {"type": "text", "file": {"filePath": "/repo/docs/plan.md", "content": "step one"}}}),
        _record("c1", "f1", "assistant", _assistant("msgC", {"type": "text", "text": "Following it."}, 2100)),
    ]
    path = tmp_path / "session.jsonl"
    path.write_text("\n".join(lines) + "\n")
    read, mention = claude_code_steps(path)
    texts = [p.text for p in read.added[-1].parts if isinstance(p, TextPart)]
    assert texts == [f"/repo/src/agents/CLAUDE.md\n{memory}"]
    assert all(p.harness for p in read.added[-1].parts if isinstance(p, TextPart))
    # The mentioned file is recorded this time: the step's input is known.
    assert mention.unrecorded == ()
    assert any("step one" in p.text for p in mention.added[-1].parts if isinstance(p, TextPart))
