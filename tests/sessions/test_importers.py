"""Importers: every real trajectory in the shared data imports and round-trips through a Nova session."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nova.messages import ToolResultPart, ToolUsePart, iter_tool_pairs, to_dict
from nova.sessions.export import import_session, iter_jsonl
from nova.sessions.importers import SessionImportError, detect_format, read_session_file
from nova.sessions.repair import repair_history
from nova.sessions.session import Session
from nova.testing import shared_data_dir

TRAJECTORIES = shared_data_dir() / "trajectories"
REAL = sorted(TRAJECTORIES.glob("*/*.traj*")) if TRAJECTORIES.is_dir() else []
needs_data = pytest.mark.skipif(
    not REAL, reason=f"shared trajectories not found at {TRAJECTORIES} (set NOVA_SHARED_DATA)"
)


@needs_data
def test_all_shared_trajectories_are_present() -> None:
    assert len(REAL) == 22


@needs_data
@pytest.mark.parametrize("path", REAL, ids=[p.name for p in REAL])
def test_real_trajectory_imports_and_round_trips(path: Path, nova_home: Path, tmp_path: Path) -> None:
    imported = read_session_file(path)
    assert imported.format == ("swe-agent" if path.suffix == ".traj" else "mini-swe-agent")
    assert imported.messages and imported.system
    calls = [u for m in imported.messages for u in m.tool_uses()]
    assert calls and all(r is not None for _, r in iter_tool_pairs(imported.messages))
    if imported.format == "mini-swe-agent":
        assert all(c.name == "bash" and c.input["command"] for c in calls)
        usage = [m.metadata["usage"] for m in imported.messages if m.role == "assistant"]
        assert usage and all(u["input_tokens"] >= 0 for u in usage)
    repaired, _ = repair_history(imported.messages)
    assert sum(len(m.tool_uses()) for m in repaired) == len(calls)
    # What the reader counted in the source is what it imported (the replay report prints both).
    assert imported.meta["source_counts"] == {"responses": sum(m.role == "assistant" for m in imported.messages),
                                              "tool_calls": len(calls),
                                              "tool_results": sum(len(m.tool_results()) for m in imported.messages)}

    session_id, count = import_session(path, nova_home)
    assert count == len(imported.messages)
    exported = tmp_path / "export.jsonl"
    session = Session.open(nova_home, session_id, readonly=True)
    exported.write_bytes(b"".join(iter_jsonl(session)))
    session.close()
    again = read_session_file(exported)
    assert again.format == "nova"
    assert [to_dict(m) for m in again.messages] == [to_dict(m) for m in imported.messages]
    assert again.system == imported.system and again.meta == imported.meta


@needs_data
def test_mini_usage_is_normalized() -> None:
    path = next(p for p in REAL if p.name.endswith(".traj.json"))
    raw = json.loads(path.read_text())
    first = next(m for m in raw["messages"] if m["role"] == "assistant")
    u = first["extra"]["response"]["usage"]
    cached = u["prompt_tokens_details"]["cached_tokens"]
    msg = next(m for m in read_session_file(path).messages if m.role == "assistant")
    assert msg.metadata["usage"]["input_tokens"] == u["prompt_tokens"] - cached
    assert msg.metadata["usage"]["cache_read_tokens"] == cached


def test_openai_chat_list(tmp_path: Path) -> None:
    path = tmp_path / "chat.json"
    path.write_text(json.dumps([
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": [{"type": "text", "text": "list files"}]},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "ls", "arguments": "{\"path\": \".\"}"}},
            {"id": "b", "type": "function", "function": {"name": "ls", "arguments": "not json"}}]},
        {"role": "tool", "tool_call_id": "a", "content": "x.py"},
        {"role": "tool", "tool_call_id": "b", "content": "err"},
        {"role": "assistant", "content": "done"},
    ]))
    s = read_session_file(path)
    assert s.format == "openai" and s.system == "be brief"
    assert [m.role for m in s.messages] == ["user", "assistant", "user", "assistant"]
    assert s.messages[1].tool_uses()[1].input == {"__invalid_arguments__": "not json"}
    assert [r.tool_use_id for r in s.messages[2].tool_results()] == ["a", "b"]


def test_claude_code_jsonl(tmp_path: Path) -> None:
    base = {"sessionId": "abc", "cwd": "/w", "isSidechain": False}
    records = [
        {**base, "type": "summary", "summary": "x"},
        {**base, "type": "user", "timestamp": "2025-01-01T00:00:00Z", "message": {"role": "user", "content": "hi"}},
        {**base, "type": "assistant", "message": {"id": "r1", "role": "assistant", "model": "claude", "content": [
            {"type": "thinking", "thinking": "hmm", "signature": "s"}]}},
        {**base, "type": "assistant", "message": {"id": "r1", "role": "assistant", "content": [
            {"type": "text", "text": "looking"}]}},
        {**base, "type": "assistant", "message": {"id": "r1", "role": "assistant", "content": [
            {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}],
            "usage": {"input_tokens": 3, "output_tokens": 4, "cache_read_input_tokens": 100,
                      "cache_creation_input_tokens": 7}}},
        {**base, "type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "a.py"}]}]}},
        {**base, "type": "user", "isSidechain": True, "message": {"role": "user", "content": "sub-agent"}},
    ]
    path = tmp_path / "session.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    s = read_session_file(path)
    assert s.format == "claude-code" and s.meta["sessionId"] == "abc"
    assert [m.role for m in s.messages] == ["user", "assistant", "user"]
    assistant = s.messages[1]
    assert [p.kind for p in assistant.parts] == ["text", "tool_use"]
    assert assistant.metadata["usage"] == {"input_tokens": 3, "output_tokens": 4, "cache_read_tokens": 100,
                                           "cache_write_tokens": 7, "reasoning_tokens": 0,
                                           "cache_write_1h_tokens": 0}
    assert isinstance(s.messages[2].parts[0], ToolResultPart) and s.messages[2].parts[0].content == "a.py"
    assert isinstance(assistant.parts[1], ToolUsePart)


def test_unknown_and_missing_files(tmp_path: Path) -> None:
    with pytest.raises(SessionImportError, match="does not exist"):
        read_session_file(tmp_path / "nope.json")
    bad = tmp_path / "bad.json"
    bad.write_text('{"hello": 1}')
    with pytest.raises(SessionImportError, match="not a recognised session format"):
        detect_format(bad)
    odd = tmp_path / "odd.json"
    odd.write_text(json.dumps({"messages": [{"role": "wizard", "content": "x"}]}))
    with pytest.raises(SessionImportError, match="could not be read"):
        read_session_file(odd)


@needs_data
def test_replay_text_report_shows_source_against_imported_for_a_trajectory() -> None:
    import typer
    from typer.testing import CliRunner

    from nova.cli.commands.replay import replay_command

    app = typer.Typer()
    app.command("replay")(replay_command)
    app.callback()(lambda: None)
    path = next(p for p in REAL if p.name.startswith("django__django-11087"))
    result = CliRunner().invoke(app, ["replay", str(path), "--policy", "naive"])
    assert result.exit_code == 0, result.output
    assert "source / imported: responses 44/44, tool_calls 41/41, tool_results 41/41" in result.stdout


def test_an_empty_file_is_said_to_be_empty(tmp_path: Path) -> None:
    # Not thirteen readers' reasons why zero bytes are not their format.
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    with pytest.raises(SessionImportError, match=r"empty\.jsonl is empty") as raised:
        read_session_file(empty)
    assert "Tried" not in str(raised.value)


def test_a_binary_file_and_a_folder_without_a_session_say_what_to_give(tmp_path: Path) -> None:
    binary = tmp_path / "program"
    binary.write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 8)
    with pytest.raises(SessionImportError, match=r"program is a binary file, not a recorded session: give"):
        read_session_file(binary)
    folder = tmp_path / "photos"
    folder.mkdir()
    (folder / "a.txt").write_text("not a session\n")
    with pytest.raises(SessionImportError, match=r"photos is a folder with no session in it: give a session file"):
        read_session_file(folder)
