"""The session readers: detection by confidence, Claude Code as written today, Cline and OpenCode, and
the same exit code for a bad file in `nova sessions import` and `nova replay`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from nova.cli.commands.replay import replay_command
from nova.cli.commands.sessions import app as sessions_app
from nova.errors import SessionImportError
from nova.evaluation.replay import replay_messages
from nova.history.invariants import check_tool_pairing
from nova.messages import ImagePart, SummaryPart, TextPart, ToolResultPart, person_entries
from nova.sessions.export import import_sessions
from nova.sessions.importers import read_session_file
from nova.sessions.schema import BoundaryRecord
from nova.sessions.transcript import Transcript
from nova.testing import shared_data_dir

AGENTLOGS = shared_data_dir() / "sessions" / "agentlogs"
needs_data = pytest.mark.skipif(not AGENTLOGS.is_dir(), reason=f"shared session files absent ({AGENTLOGS})")


def _jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def _cc(kind: str, content: Any, *, mid: str = "", uuid: str = "", **extra: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"role": kind, "content": content}
    if kind == "assistant":
        message.update(id=mid, model="claude-sonnet-4-5",
                       usage={"input_tokens": 3, "cache_read_input_tokens": 15000, "output_tokens": 7})
    return {"type": kind, "sessionId": "s1", "uuid": uuid or f"u-{id(content)}", "message": message,
            "timestamp": "2025-10-10T21:55:09.367Z", **extra}


def _use(call: str) -> list[dict[str, Any]]:
    return [{"type": "tool_use", "id": call, "name": "Read", "input": {"file_path": f"/{call}.py"}}]


def _result(call: str, content: Any = None) -> list[dict[str, Any]]:
    return [{"type": "tool_result", "tool_use_id": call, "content": content or f"out {call}"}]


SNAPSHOT = {"type": "file-history-snapshot", "messageId": "x", "snapshot": {}, "isSnapshotUpdate": False}
SUMMARY = {"type": "summary", "summary": "A title", "leafUuid": "u9"}


# -- the real files --------------------------------------------------------------------------------------
def test_unknown_jsonl_names_every_format_and_why(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "x.jsonl", [{"kind": "note"}, {"kind": "note"}])
    with pytest.raises(SessionImportError) as caught:
        read_session_file(path)
    message = str(caught.value)
    for reason in ("claude-code: record 1: `type` is None", "codex: record 1: `type` is None",
                   "pi: record 1: `type` is None", "openai: expected one JSON document, found 2 JSON lines"):
        assert reason in message


@needs_data
def test_real_claude_code_compaction_subagent_and_image() -> None:
    compact = read_session_file(AGENTLOGS / "claude-code" / "compact.jsonl")
    summaries = [m for m in compact.messages if m.has("summary")]
    assert len(summaries) == 1 and summaries[0].metadata["compaction"]["trigger"] == "manual"
    assert any(m.metadata.get("is_meta") for m in compact.messages)
    sub = read_session_file(AGENTLOGS / "claude-code" / "subagent.jsonl")
    task = next(p for m in sub.messages for p in m.tool_uses() if p.name == "Task")
    assert len(sub.children) == 1 and sub.children[0].meta["parent_tool_use_id"] == task.id
    images = read_session_file(AGENTLOGS / "claude-code" / "images.jsonl")
    assert any(isinstance(p, ImagePart) and p.data for m in images.messages for p in m.parts)
    cline = read_session_file(AGENTLOGS / "cline" / "crud.json")
    assert cline.format == "anthropic" and sum(len(m.tool_uses()) for m in cline.messages) == 38


@needs_data
def test_real_codex_and_pi_files() -> None:
    codex = read_session_file(AGENTLOGS / "codex" / "crud.jsonl")
    assert codex.format == "codex" and codex.system.startswith("You are Codex")
    assert [p.name for m in codex.messages for p in m.tool_uses()] == ["exec_command", "exec_command", "apply_patch",
                                                                       "exec_command"]
    assert all("usage" in m.metadata for m in codex.messages if m.role == "assistant")
    branched = read_session_file(AGENTLOGS / "pi" / "branched.jsonl")
    texts = " ".join(getattr(p, "text", "") for m in branched.messages for p in m.parts)
    # The branch that was abandoned ("now write a second haiku") is not in the conversation read.
    assert branched.format == "pi" and "limerick" in texts and "second haiku" not in texts
    assert branched.meta["abandoned_entries"] == 4


# -- Claude Code, synthetic --------------------------------------------------------------------------------
def test_detection_looks_past_snapshot_and_summary_records(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "s.jsonl", [SNAPSHOT, SUMMARY, SNAPSHOT, _cc("user", "hello"),
                                         _cc("assistant", [{"type": "text", "text": "hi"}], mid="r1")])
    imported = read_session_file(path)
    assert imported.format == "claude-code" and [m.role for m in imported.messages] == ["user", "assistant"]


def test_parallel_calls_with_interleaved_results_are_one_response(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "s.jsonl", [
        _cc("user", "go"),
        _cc("assistant", _use("A"), mid="r1"), _cc("assistant", _use("B"), mid="r1"),
        _cc("user", _result("A")), _cc("assistant", _use("C"), mid="r1"),
        _cc("user", _result("B")), _cc("user", _result("C")),
        _cc("assistant", [{"type": "text", "text": "done"}], mid="r2"),
    ])
    messages = read_session_file(path).messages
    assert [m.role for m in messages] == ["user", "assistant", "user", "assistant"]
    assert [p.id for p in messages[1].tool_uses()] == ["A", "B", "C"]
    assert [p.tool_use_id for p in messages[2].tool_results()] == ["A", "B", "C"]
    assert messages[1].metadata["usage"]["cache_read_tokens"] == 15000
    assert check_tool_pairing(messages) == []


def test_is_meta_kept_and_compaction_becomes_summary_and_boundary(tmp_path: Path, nova_home: Path) -> None:
    path = _jsonl(tmp_path / "s.jsonl", [
        _cc("user", "Caveat: local command output", isMeta=True), _cc("user", "first request"),
        _cc("assistant", [{"type": "text", "text": "ok"}], mid="r1"),
        {"type": "system", "subtype": "compact_boundary", "sessionId": "s1", "uuid": "b",
         "compactMetadata": {"trigger": "auto", "preTokens": 15808}},
        _cc("user", "This session is being continued ... summary", isCompactSummary=True),
        _cc("user", "next request"),
    ])
    messages = read_session_file(path).messages
    assert messages[0].metadata == {"is_meta": True} and isinstance(messages[0].parts[0], TextPart)
    summary = messages[3]
    assert isinstance(summary.parts[0], SummaryPart) and summary.metadata["compaction"]["tokens_before"] == 15808
    assert summary.parts[0].covers == tuple(m.id for m in messages[:3])
    result = import_sessions(path, nova_home)
    records = list(Transcript(nova_home / "sessions" / result.session_id / "transcript.jsonl").iter_records())
    boundaries = [r for r in records if isinstance(r, BoundaryRecord)]
    assert len(boundaries) == 1 and boundaries[0].trigger == "auto" and boundaries[0].tokens_before == 15808


def test_image_inside_a_tool_result_is_kept(tmp_path: Path) -> None:
    shot = [{"type": "text", "text": "Took a screenshot"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBOR"}}]
    path = _jsonl(tmp_path / "s.jsonl", [_cc("user", "look"), _cc("assistant", _use("A"), mid="r1"),
                                         _cc("user", _result("A", shot))])
    results = read_session_file(path).messages[2]
    assert isinstance(results.parts[0], ToolResultPart) and results.parts[0].content == "Took a screenshot"
    assert results.parts[1] == ImagePart(media_type="image/png", data="iVBOR")


def test_subagent_file_is_its_own_session_never_empty(tmp_path: Path, nova_home: Path) -> None:
    path = _jsonl(tmp_path / "agent-1234.jsonl", [
        _cc("user", "sub task", isSidechain=True, agentId="1234"),
        _cc("assistant", [{"type": "text", "text": "sub answer"}], mid="r9", isSidechain=True, agentId="1234"),
    ])
    imported = read_session_file(path)
    assert len(imported.messages) == 2 and imported.meta["sidechain"] and imported.meta["parent_session"] == "s1"
    empty = _jsonl(tmp_path / "only-snapshots.jsonl", [SNAPSHOT, SUMMARY])
    result = CliRunner().invoke(sessions_app, ["import", str(empty)])
    assert result.exit_code == 1 and "no conversation" in result.output


def test_inline_sidechain_becomes_linked_child_session(tmp_path: Path, nova_home: Path) -> None:
    task = [{"type": "tool_use", "id": "T", "name": "Task", "input": {"prompt": "check it", "description": "d"}}]
    path = _jsonl(tmp_path / "s.jsonl", [
        _cc("user", "go"), _cc("assistant", task, mid="r1"),
        _cc("user", "check it", uuid="c1", isSidechain=True, parentUuid=None),
        _cc("assistant", [{"type": "text", "text": "checked"}], mid="r2", uuid="c2", isSidechain=True,
            parentUuid="c1"),
        _cc("user", _result("T", "checked")),
    ])
    result = import_sessions(path, nova_home)
    assert result.messages == 3 and len(result.children) == 1 and result.children[0][1] == 2
    child_log = nova_home / "sessions" / result.children[0][0] / "transcript.jsonl"
    assert '"parent_tool_use_id": "T"' in child_log.read_text() or '"parent_tool_use_id":"T"' in child_log.read_text()
    # Linked as a sub-agent Nova ran: the parent lists it, the child names its parent.
    shown = CliRunner().invoke(sessions_app, ["show", result.session_id, "--json"])
    assert [s["id"] for s in json.loads(shown.stdout)["sub_agents"]] == [result.children[0][0]]
    child = CliRunner().invoke(sessions_app, ["show", result.children[0][0]])
    assert f"sub-agent of session {result.session_id}" in child.stdout


def test_unreadable_line_is_skipped_and_strict_refuses(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps(_cc("user", "go")) + "\n{torn\n", encoding="utf-8")
    imported = read_session_file(path)
    assert [s.where for s in imported.skipped] == ["line 2"]
    with pytest.raises(SessionImportError, match="1 record"):
        read_session_file(path, strict=True)


def test_import_warns_about_skipped_records_and_strict_refuses(tmp_path: Path, nova_home: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps(_cc("user", "go")) + "\n{torn\n", encoding="utf-8")
    loose = CliRunner().invoke(sessions_app, ["import", str(path), "--json"])
    assert loose.exit_code == 0 and json.loads(loose.stdout)["skipped"] == 1 and "line 2" in loose.stderr
    strict = CliRunner().invoke(sessions_app, ["import", str(path), "--strict"])
    assert strict.exit_code == 1 and "1 record(s) could not be read" in strict.output


# -- other formats -------------------------------------------------------------------------------------
def test_anthropic_message_list_is_never_read_as_openai(tmp_path: Path) -> None:
    path = tmp_path / "api_conversation_history.json"
    path.write_text(json.dumps([
        {"role": "user", "content": [{"type": "text", "text": "<task>read it</task>"}]},
        {"role": "assistant", "content": _use("A") + _use("B")},
        {"role": "user", "content": [{"type": "text", "text": "[read_file for 'a] b.py'] Result:\nA"},
                                     {"type": "text", "text": "[read_file for 'b.py'] Result:\nB"}]},
    ]))
    imported = read_session_file(path)
    assert imported.format == "anthropic"
    assert [r.tool_use_id for r in imported.messages[2].tool_results()] == ["A", "B"]
    assert check_tool_pairing(imported.messages) == []


def test_opencode_export_reads_instead_of_key_error(tmp_path: Path) -> None:
    path = tmp_path / "export.json"
    path.write_text(json.dumps({"info": {"id": "ses"}, "messages": [
        {"info": {"role": "user"}, "parts": [{"type": "text", "text": "make it"}]},
        {"info": {"role": "assistant", "tokens": {"input": 10, "output": 2, "cache": {"read": 5}}},
         "parts": [{"type": "tool", "callID": "c1", "tool": "write",
                    "state": {"status": "completed", "input": {"filePath": "a"}, "output": ""}}]},
    ]}))
    imported = read_session_file(path)
    assert imported.format == "opencode" and imported.messages[1].tool_uses()[0].name == "write"
    assert check_tool_pairing(imported.messages) == []


def test_opencode_call_still_running_has_no_result(tmp_path: Path) -> None:
    """An export made while a tool ran: its call has no output yet, so no (empty) result is made up."""
    path = tmp_path / "export.json"
    path.write_text(json.dumps({"info": {"id": "ses"}, "messages": [
        {"info": {"role": "user"}, "parts": [{"type": "text", "text": "run it"}]},
        {"info": {"role": "assistant"}, "parts": [
            {"type": "tool", "callID": "c1", "tool": "bash", "state": {"status": "completed", "input": {"command": "ls"},
                                                                       "output": "a.py"}},
            {"type": "tool", "callID": "c2", "tool": "bash", "state": {"status": "running", "input": {"command": "make"}}}]},
    ]}))
    imported = read_session_file(path)
    assert [r.tool_use_id for m in imported.messages for r in m.tool_results()] == ["c1"]
    assert imported.meta["source_counts"] == {"responses": 1, "tool_calls": 2, "tool_results": 1}


def test_unknown_file_names_every_format_and_why(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text(json.dumps({"messages": [{"content": "no role"}]}))
    with pytest.raises(SessionImportError) as caught:
        read_session_file(path)
    message = str(caught.value)
    assert "openai: message 0: no `role` field" in message and "opencode: messages[0]: no `info` object" in message


def test_import_and_replay_exit_alike_on_a_bad_file(tmp_path: Path, nova_home: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"hello": 1}')
    replay = typer.Typer()
    replay.command("replay")(replay_command)
    replay.callback()(lambda: None)
    imported = CliRunner().invoke(sessions_app, ["import", str(bad)])
    replayed = CliRunner().invoke(replay, ["replay", str(bad)])
    assert imported.exit_code == replayed.exit_code == 1


def test_a_file_with_no_conversation_is_refused_by_import_and_replay(tmp_path: Path, nova_home: Path) -> None:
    empty = tmp_path / "api_conversation_history.json"
    empty.write_text("[]")
    replay = typer.Typer()
    replay.command("replay")(replay_command)
    replay.callback()(lambda: None)
    imported = CliRunner().invoke(sessions_app, ["import", str(empty)])
    replayed = CliRunner().invoke(replay, ["replay", str(empty)])
    assert imported.exit_code == replayed.exit_code == 1
    assert "holds no conversation" in imported.output and "holds no conversation" in replayed.output
    assert not (nova_home / "sessions").exists() or not any((nova_home / "sessions").iterdir())


def test_replay_repairs_like_resume_and_says_so(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "s.jsonl", [_cc("user", "go"), _cc("assistant", _use("A"), mid="r1")])
    report = replay_messages(read_session_file(path).messages, window=32000, policy="naive")
    assert report.invariant_violations == 0 and "interrupted" in report.repaired
    assert report.to_json()["repaired"] == report.repaired


def test_replay_starts_at_the_real_size_with_a_fixed_prompt_placeholder(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "s.jsonl", [_cc("user", "go"), _cc("assistant", [{"type": "text", "text": "ok"}], mid="r1"),
                                         _cc("user", "more"), _cc("assistant", [{"type": "text", "text": "k"}], mid="r2")])
    replay = typer.Typer()
    replay.command("replay")(replay_command)
    replay.callback()(lambda: None)
    result = CliRunner().invoke(replay, ["replay", str(path), "--policy", "naive", "--json"])
    assert result.exit_code == 0, result.output
    first = json.loads(result.stdout.strip().splitlines()[-1])["per_call"][0]["input_tokens"]
    real = 3 + 15000  # the first response's input + cache read
    assert abs(first - real) <= real * 0.01


def test_import_from_claude_code_finds_the_projects_sessions(tmp_path: Path, nova_home: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    project = tmp_path / "work" / "my.app"
    project.mkdir(parents=True)
    config = tmp_path / "claude"
    sessions = config / "projects" / ("-" + "-".join(str(project).strip("/").replace(".", "/").split("/")))
    sessions.mkdir(parents=True)
    _jsonl(sessions / "aaa.jsonl", [SNAPSHOT, _cc("user", "go", cwd=str(project)),
                                    _cc("assistant", [{"type": "text", "text": "ok"}], mid="r1")])
    _jsonl(sessions / "agent-1.jsonl", [_cc("user", "sub", isSidechain=True),
                                        _cc("assistant", [{"type": "text", "text": "k"}], mid="r2", isSidechain=True)])
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    result = CliRunner().invoke(sessions_app, ["import", "--from", "claude-code", "--project", str(project), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [Path(d["source_path"]).name for d in data] == ["aaa.jsonl", "agent-1.jsonl"]
    assert [d["messages"] for d in data] == [2, 2]
    # A project Claude Code never saw is one clear error.
    missing = CliRunner().invoke(sessions_app, ["import", "--from", "claude-code", "--project", str(tmp_path)])
    assert missing.exit_code == 1 and "no Claude Code sessions" in missing.output


def test_mini_swe_agent_2_blocks_tool_calls_and_exit(tmp_path: Path) -> None:
    path = tmp_path / "run.traj.json"
    path.write_text(json.dumps({"trajectory_format": "mini-swe-agent-1.1", "info": {"mini_version": "2.0.0"},
                                "messages": [
        {"role": "system", "content": "you run bash"},
        {"role": "user", "content": "fix it"},
        {"role": "assistant", "content": "THOUGHT\n```mswea_bash_command\nls\n```"},
        {"role": "user", "content": "<output>a.py</output>"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": '{"command": "cat a.py"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "print(1)"},
        {"role": "exit", "content": "Submitted", "extra": {"exit_status": "Submitted"}},
    ]}))
    imported = read_session_file(path)
    assert imported.format == "mini-swe-agent"
    assert [p.input["command"] for m in imported.messages for p in m.tool_uses()] == ["ls", "cat a.py"]
    assert check_tool_pairing(imported.messages) == [] and imported.meta["exit"]["exit_status"] == "Submitted"


def test_aider_chat_history(tmp_path: Path) -> None:
    path = tmp_path / ".aider.chat.history.md"
    path.write_text("# aider chat started at 2025-01-02 10:00:00\n\n> /usr/bin/aider --model sonnet\n"
                    "> Added app.py to the chat.\n\n#### add a greet function\n#### with a name\n\n"
                    "Here is the change:\n\napp.py\n```python\n<<<<<<< SEARCH\n=======\ndef greet(n): ...\n"
                    ">>>>>>> REPLACE\n```\n\n> Applied edit to app.py\n> Commit 1a2b3c feat: greet\n\n"
                    "#### thanks\n\nYou're welcome.\n", encoding="utf-8")
    imported = read_session_file(path)
    assert imported.format == "aider" and [m.role for m in imported.messages] == ["user", "assistant", "user",
                                                                                   "assistant"]
    assert imported.messages[0].text == "add a greet function\nwith a name"
    assert "def greet" in imported.messages[1].text and "Applied edit" not in imported.messages[1].text
    assert imported.meta["files_edited"] == ["app.py"]


@needs_data
def test_replay_reports_source_against_imported_counts() -> None:
    replay = typer.Typer()
    replay.command("replay")(replay_command)
    replay.callback()(lambda: None)
    result = CliRunner().invoke(replay, ["replay", str(AGENTLOGS / "claude-code" / "crud.jsonl"), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout.strip().splitlines()[-1])
    assert data["import"]["source"] == data["import"]["imported"] == {"responses": 10, "tool_calls": 9,
                                                                      "tool_results": 9}
    assert data["invariant_violations"] == 0


def test_subagent_in_its_own_file_is_a_child_of_its_session(tmp_path: Path, nova_home: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    config = tmp_path / "claude"
    sessions = config / "projects" / str(project).replace("/", "-")
    (sessions / "s1" / "subagents").mkdir(parents=True)
    task = [{"type": "tool_use", "id": "T", "name": "Task", "input": {"prompt": "look", "description": "d"}}]
    _jsonl(sessions / "s1.jsonl", [
        _cc("user", "go", cwd=str(project)), _cc("assistant", task, mid="r1"),
        {**_cc("user", _result("T", "looked")), "toolUseResult": {"status": "completed", "agentId": "a1b2"}},
    ])
    _jsonl(sessions / "s1" / "subagents" / "agent-a1b2.jsonl", [
        _cc("user", "look", isSidechain=True, agentId="a1b2"),
        _cc("assistant", [{"type": "text", "text": "looked"}], mid="r2", isSidechain=True, agentId="a1b2"),
    ])
    imported = read_session_file(sessions / "s1.jsonl")
    assert len(imported.children) == 1 and imported.children[0].meta["parent_tool_use_id"] == "T"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    result = CliRunner().invoke(sessions_app, ["import", "--from", "claude-code", "--project", str(project), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    # One session with its child; the sub-agent's file is not imported a second time on its own.
    assert len(data) == 1 and data[0]["children"][0]["messages"] == 2


def test_a_folder_of_sessions_is_imported_file_by_file(tmp_path: Path, nova_home: Path) -> None:
    """A copied Claude Code project folder was refused as "a folder with no session in it"."""
    folder = tmp_path / "claude-code"
    (folder / "s1" / "subagents").mkdir(parents=True)
    task = [{"type": "tool_use", "id": "T", "name": "Task", "input": {"prompt": "look", "description": "d"}}]
    _jsonl(folder / "s1.jsonl", [
        _cc("user", "go"), _cc("assistant", task, mid="r1"),
        {**_cc("user", _result("T", "looked")), "toolUseResult": {"status": "completed", "agentId": "a1b2"}},
    ])
    _jsonl(folder / "s1" / "subagents" / "agent-a1b2.jsonl", [
        _cc("user", "look", isSidechain=True, agentId="a1b2"),
        _cc("assistant", [{"type": "text", "text": "looked"}], mid="r2", isSidechain=True, agentId="a1b2"),
    ])
    _jsonl(folder / "s2.jsonl", [_cc("user", "hello"), _cc("assistant", [{"type": "text", "text": "hi"}], mid="r3")])
    (folder / "broken.json").write_text("{not json", encoding="utf-8")
    # A Cline task folder inside is one session: its UI log is not tried on its own.
    task = folder / "task-1"
    task.mkdir()
    (task / "api_conversation_history.json").write_text(json.dumps(
        [{"role": "user", "content": [{"type": "text", "text": "hello"}]},
         {"role": "assistant", "content": [{"type": "text", "text": "hi"}]}]), encoding="utf-8")
    (task / "ui_messages.json").write_text("[]", encoding="utf-8")
    result = CliRunner().invoke(sessions_app, ["import", str(folder), "--json"])
    # The broken file is said and the others imported; the sub-agent only as s1's child.
    assert result.exit_code == 1 and "broken.json" in result.stderr and "ui_messages" not in result.stderr
    data = json.loads(result.stdout)
    assert [Path(d["source_path"]).name for d in data] == ["s1.jsonl", "s2.jsonl", "task-1"]
    assert data[0]["children"][0]["messages"] == 2
    # Replay takes one session, and says how to name one.
    with pytest.raises(SessionImportError, match=r"folder of 5 sessions, not one: name one"):
        read_session_file(folder)


def test_a_folder_walk_passes_over_files_that_are_no_session(tmp_path: Path, nova_home: Path) -> None:
    """A project folder's package.json and tsconfig.json were each refused with an error listing thirteen
    formats: a walk passes over what is no session (JSON of no format, empty, a Claude Code file of titles
    only) in one note, while a file named alone is still refused, saying what it looked like."""
    folder = tmp_path / "project"
    (folder / "web").mkdir(parents=True)
    (folder / "package.json").write_text(json.dumps({"name": "app", "version": "1.0.0", "private": True}))
    (folder / "web" / "tsconfig.json").write_text(json.dumps({"compilerOptions": {"strict": True}}))
    (folder / "numbers.json").write_text("[1, 2, 3]")
    (folder / "empty.jsonl").write_text("")
    _jsonl(folder / "titles.jsonl", [SUMMARY, SUMMARY])
    _jsonl(folder / "s1.jsonl", [_cc("user", "hello"), _cc("assistant", [{"type": "text", "text": "hi"}], mid="r1")])
    runner = CliRunner()
    result = runner.invoke(sessions_app, ["import", str(folder), "--json"])
    assert result.exit_code == 0, result.output
    assert [Path(d["source_path"]).name for d in json.loads(result.stdout)] == ["s1.jsonl"]
    assert result.stderr.splitlines() == [
        "nova: note: skipped 5 files that are not sessions (empty.jsonl, numbers.json, package.json and 2 more); "
        "name one to see why"]
    # Named alone, each is refused with what it looked like.
    named = runner.invoke(sessions_app, ["import", str(folder / "package.json")])
    assert named.exit_code == 1
    assert "not a recognised session format (one JSON document, an object with keys name, version, private)" \
        in named.stderr
    titles = runner.invoke(sessions_app, ["import", str(folder / "titles.jsonl")])
    assert titles.exit_code == 1 and "a Claude Code file with no conversation in it (2 summary)" in titles.stderr
    # A folder of nothing else has no session to import.
    (folder / "s1.jsonl").unlink()
    nothing = runner.invoke(sessions_app, ["import", str(folder)])
    assert nothing.exit_code == 1 and not nothing.stdout
    assert nothing.stderr.startswith(f"nova: error: no session in {folder}: its 5 files (")


def test_a_folder_walk_takes_swe_agent_and_aider_sessions_too(tmp_path: Path, nova_home: Path) -> None:
    """A folder of SWE-agent `.traj` files imported nothing: the walk tried `.json` and `.jsonl` only."""
    folder = tmp_path / "runs"
    (folder / "app").mkdir(parents=True)
    (folder / "fix-1.traj").write_text(json.dumps({"history": [
        {"role": "system", "content": "You are a software engineer."},
        {"role": "user", "content": "fix the bug"},
        {"role": "assistant", "content": "Done."}]}), encoding="utf-8")
    (folder / "app" / ".aider.chat.history.md").write_text(
        "# aider chat started at 2025-01-02 10:00:00\n\n#### add a greet function\n\nHere it is.\n", encoding="utf-8")
    (folder / "app" / "README.md").write_text("# app\n", encoding="utf-8")  # Markdown that is no history
    result = CliRunner().invoke(sessions_app, ["import", str(folder), "--json"])
    assert result.exit_code == 0 and not result.stderr, result.output
    assert [Path(d["source_path"]).name for d in json.loads(result.stdout)] == [".aider.chat.history.md", "fix-1.traj"]


def test_newer_claude_code_attachments_are_read_where_the_model_read_them(tmp_path: Path) -> None:
    def attachment(uuid: str, body: dict[str, Any]) -> dict[str, Any]:
        return {"type": "attachment", "sessionId": "s1", "uuid": uuid, "attachment": body,
                "timestamp": "2026-01-14T19:20:57.728Z"}

    path = _jsonl(tmp_path / "s.jsonl", [
        _cc("user", "read the registry", uuid="u0"),
        _cc("assistant", _use("t1"), mid="m1", uuid="a1"),
        _cc("user", _result("t1"), uuid="r1"),
        attachment("n1", {"type": "nested_memory", "path": "/repo/src/CLAUDE.md",
                          "content": {"path": "/repo/src/CLAUDE.md", "type": "Project", "content": "Use pnpm."}}),
        attachment("q1", {"type": "queued_command", "prompt": "and the tests too"}),
        attachment("d1", {"type": "deferred_tools_delta", "addedNames": ["WebFetch"]}),
        _cc("assistant", [{"type": "text", "text": "Done."}], mid="m2", uuid="a2"),
    ])
    session = read_session_file(path)
    results = session.messages[2]
    texts = [p for p in results.parts if isinstance(p, TextPart)]
    assert [p.text for p in texts] == ["/repo/src/CLAUDE.md\nUse pnpm.", "and the tests too"]
    # The CLAUDE.md is Claude Code's; the queued prompt is the person's.
    assert [p.harness for p in texts] == [True, False]
    assert session.meta["ignored_records"] == {"attachment:deferred_tools_delta": 1}


def _codex_usage_first(path: Path) -> Path:
    """A Codex 0.39 rollout: each response's `token_count` (and `agent_message`) comes before its items."""
    def event(payload: dict[str, Any]) -> dict[str, Any]:
        return {"type": "event_msg", "timestamp": "2025-09-19T09:02:27Z", "payload": payload}

    def item(payload: dict[str, Any]) -> dict[str, Any]:
        return {"type": "response_item", "timestamp": "2025-09-19T09:02:27Z", "payload": payload}

    def usage(total: int, last: int) -> dict[str, Any]:
        return event({"type": "token_count", "info": {
            "total_token_usage": {"input_tokens": total, "output_tokens": 10, "total_tokens": total + 10},
            "last_token_usage": {"input_tokens": last, "cached_input_tokens": 0, "output_tokens": 10}}})

    records: list[dict[str, Any]] = [
        {"type": "session_meta", "timestamp": "2025-09-19T09:02:12Z", "payload": {"id": "s", "cli_version": "0.39.0"}},
        item({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "bump go"}]}),
        event({"type": "user_message", "message": "bump go"}),
        {"type": "turn_context", "timestamp": "2025-09-19T09:02:12Z", "payload": {"model": "gpt-5-codex"}},
        event({"type": "agent_message", "message": "Looking."}),
        usage(5645, 5645),
        item({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Looking."}]}),
        item({"type": "function_call", "name": "shell", "arguments": "{}", "call_id": "c1"}),
        item({"type": "function_call_output", "call_id": "c1", "output": "go 1.22"}),
        event({"type": "agent_message", "message": "Done."}),
        usage(11467, 5822),
        item({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Done."}]}),
    ]
    return _jsonl(path, records)


def test_codex_039_usage_written_before_its_response_belongs_to_that_response(tmp_path: Path) -> None:
    """Codex 0.39 wrote each response's token_count before its items: read as a later Codex writes it,
    every call took the next call's usage, the first figure was lost and the last call had none."""
    session = read_session_file(_codex_usage_first(tmp_path / "rollout-old.jsonl"))
    replies = [m for m in session.messages if m.role == "assistant"]
    assert [m.metadata["usage"]["input_tokens"] for m in replies] == [5645, 5822]
    assert [m.text for m in replies] == ["Looking.", "Done."]
    assert check_tool_pairing(session.messages) == []


def test_claude_code_empty_usage_counts_as_no_usage(tmp_path: Path) -> None:
    """`"usage": {}` on a last reply read as a call of 0 tokens: the session's context was 0 at its end."""
    last = _cc("assistant", _use("c2"), mid="r2", uuid="u3")
    last["message"]["usage"] = {}
    path = _jsonl(tmp_path / "s.jsonl", [
        _cc("user", "hello", uuid="u1"), _cc("assistant", _use("c1"), mid="r1", uuid="u2"),
        _cc("user", _result("c1"), uuid="u2b"), last, _cc("user", _result("c2"), uuid="u4")])
    replies = [m for m in read_session_file(path).messages if m.role == "assistant"]
    assert [("usage" in m.metadata) for m in replies] == [True, False]


def test_claude_code_compaction_runs_are_children_of_their_session(tmp_path: Path, nova_home: Path) -> None:
    """Claude Code 2.1 writes each compaction's summary call to `<sessionId>/subagents/agent-acompact-*.jsonl`
    with no Task call naming it: a folder import listed each as a session of its own, next to the one it
    summarised. The session takes them as children, marked as compaction summaries."""
    path = _jsonl(tmp_path / "s1.jsonl", [_cc("user", "go", uuid="u1"),
                                          _cc("assistant", [{"type": "text", "text": "ok"}], mid="r1", uuid="u2")])
    run = tmp_path / "s1" / "subagents" / "agent-acompact-9f3e.jsonl"
    run.parent.mkdir(parents=True)
    _jsonl(run, [
        _cc("user", "Your task is to create a detailed summary of the conversation so far", uuid="a1",
            isSidechain=True, agentId="acompact-9f3e"),
        _cc("assistant", [{"type": "text", "text": "<summary>go</summary>"}], mid="r9", uuid="a2",
            isSidechain=True, agentId="acompact-9f3e", parentUuid="a1"),
    ])
    (child,) = read_session_file(path).children
    assert child.meta["compaction_run"] is True and child.source_path == run
    listed = CliRunner().invoke(sessions_app, ["import", str(tmp_path)])
    assert listed.exit_code == 0, listed.output
    assert "compaction summary: 2 messages as session" in listed.output
    assert listed.output.count("Imported ") == 1, listed.output  # the run's file is not a session of its own


def test_a_sub_agents_file_imported_without_its_session_says_so(tmp_path: Path, nova_home: Path) -> None:
    """A sub-agent's own file whose session's file is missing imported as a session with nothing to say
    it is a sub-agent's run."""
    run = _jsonl(tmp_path / "agent-a1b2.jsonl", [
        _cc("user", "check the parser", uuid="a1", isSidechain=True, agentId="a1b2"),
        _cc("assistant", [{"type": "text", "text": "checked"}], mid="r1", uuid="a2", isSidechain=True,
            agentId="a1b2", parentUuid="a1"),
    ])
    result = CliRunner().invoke(sessions_app, ["import", str(run)])
    assert result.exit_code == 0, result.output
    assert "sub-agent's own file; the session that ran it (s1) was not imported with it" in result.output
    parent = _jsonl(tmp_path / "s1.jsonl", [_cc("user", "go", uuid="u1"),
                                            _cc("assistant", [{"type": "text", "text": "ok"}], mid="r0", uuid="u2")])
    assert "note:" not in CliRunner().invoke(sessions_app, ["import", str(parent)]).output


def test_a_queued_task_notification_is_the_harness_not_the_person(tmp_path: Path) -> None:
    """Claude Code queues a background task's `<task-notification>` like a typed prompt (`queued_command`
    with `commandMode: task-notification`). Read as the person's words, every monitor event was carried
    through each compaction as something the user asked."""
    note = ("<task-notification>\n<task-id>b1</task-id>\n<summary>Monitor event: \"fetch\"</summary>\n"
            "<event>page 2: +50</event>\n</task-notification>")
    path = _jsonl(tmp_path / "s.jsonl", [
        _cc("user", "fetch the PRs", uuid="u0"),
        _cc("assistant", _use("t1"), mid="m1", uuid="a1"),
        _cc("user", _result("t1"), uuid="r1"),
        {"type": "attachment", "sessionId": "s1", "uuid": "q1", "timestamp": "2026-04-26T22:16:15.132Z",
         "attachment": {"type": "queued_command", "prompt": note, "commandMode": "task-notification"}},
        _cc("assistant", [{"type": "text", "text": "Still fetching."}], mid="m2", uuid="a2"),
    ])
    session = read_session_file(path)
    typed = [text for m in session.messages for _, text in person_entries(m)]
    assert typed == ["fetch the PRs"]
    assert any(isinstance(p, TextPart) and p.text == note and p.harness for m in session.messages for p in m.parts)


def test_a_result_written_before_the_response_that_called_it_answers_that_call(tmp_path: Path) -> None:
    """Claude Code 2.1 sometimes appends a tool's result a line before the response that called it; read
    in file order, the call had no result (a pairing violation) and the result answered nothing."""
    path = _jsonl(tmp_path / "s.jsonl", [
        _cc("user", "edit the config", uuid="u0"),
        _cc("assistant", [{"type": "thinking", "thinking": "", "signature": "x"}], mid="m1", uuid="a0",
            parentUuid="u0"),
        _cc("user", _result("t1"), uuid="r1", parentUuid="a1"),
        _cc("assistant", _use("t1"), mid="m1", uuid="a1", parentUuid="a0"),
        _cc("assistant", [{"type": "text", "text": "Edited."}], mid="m2", uuid="a2", parentUuid="r1"),
    ])
    session = read_session_file(path)
    assert check_tool_pairing(session.messages) == []
    assert [m.role for m in session.messages] == ["user", "assistant", "user", "assistant"]
    assert session.meta["source_counts"]["responses"] == 2
