"""Replays of imported sessions: every caller of `replay_messages` (the CLI, the benchmarks) gets the
fixed-prompt placeholder, and `nova replay` prints figures, not the context engine's warnings."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from nova.evaluation.replay import replay_messages
from nova.model import ToolSpec
from nova.sessions.importers import read_session_file
from nova.testing import shared_data_dir

AGENTLOGS = shared_data_dir() / "sessions" / "agentlogs"


def _claude_code(path: Path) -> Path:
    def record(kind: str, content: Any, mid: str = "") -> dict[str, Any]:
        message: dict[str, Any] = {"role": kind, "content": content}
        if kind == "assistant":
            message.update(id=mid, usage={"input_tokens": 3, "cache_read_input_tokens": 15000, "output_tokens": 7})
        return {"type": kind, "sessionId": "s1", "uuid": f"u-{mid or content}", "message": message,
                "timestamp": "2025-10-10T21:55:09.367Z"}

    records = [record("user", "go"), record("assistant", [{"type": "text", "text": "ok"}], "r1"),
               record("user", "more"), record("assistant", [{"type": "text", "text": "k"}], "r2")]
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_replay_messages_itself_stands_in_for_a_missing_fixed_prompt(tmp_path: Path) -> None:
    session = read_session_file(_claude_code(tmp_path / "s.jsonl"))
    assert session.system == ""
    # As the benchmarks call it: the recording's own (empty) system prompt and no tools.
    report = replay_messages(session.messages, system=session.system, window=32000, policy="naive")
    real = 3 + 15000  # the first response's input + cache read
    assert abs(report.per_call[0].input_tokens - real) <= real * 0.01
    assert report.placeholder_tokens > 14000 and report.to_json()["placeholder_tokens"] == report.placeholder_tokens
    # A caller that passes the tools has the whole fixed prompt: no placeholder.
    tools = (ToolSpec(name="bash", description="run a command", input_schema={"type": "object"}),)
    given = replay_messages(session.messages, system="You are an agent.", tools=tools, window=32000, policy="naive")
    assert given.placeholder_tokens == 0 and given.per_call[0].input_tokens < 200
    assert "placeholder_tokens" not in given.to_json()


def test_a_recorded_system_prompt_without_tools_gets_the_rest(tmp_path: Path) -> None:
    """Codex and OpenHands keep the system prompt but not the tool definitions: the placeholder stands in
    for what is missing; a system prompt the size of the real request needs none (counting error)."""
    session = read_session_file(_claude_code(tmp_path / "s.jsonl"))
    real = 3 + 15000
    short = replay_messages(session.messages, system="You are an agent.", window=32000, policy="naive")
    assert short.placeholder_tokens > 14000 and abs(short.per_call[0].input_tokens - real) <= real * 0.01
    whole = "word " * 14000  # about the real size, as a recording that kept everything
    full = replay_messages(session.messages, system=whole, window=32000, policy="naive")
    assert full.placeholder_tokens == 0


@pytest.mark.skipif(not AGENTLOGS.is_dir(), reason=f"shared session files absent ({AGENTLOGS})")
def test_replay_prints_no_context_warnings(tmp_path: Path) -> None:
    """The Cline file compacts and refills at 32k; those per-compaction warnings belong in the figures."""
    env = {**os.environ, "NOVA_HOME": str(tmp_path / "home"), "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, "-c", "import sys; from nova.cli.main import main; sys.exit(main())", "replay",
                           str(AGENTLOGS / "cline" / "crud.json"), "--window", "32000"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "compactions" in done.stdout and "WARNING" not in done.stderr
    assert "placeholder of" in done.stderr


def test_a_replay_of_another_agent_adds_no_environment_of_its_own(tmp_path: Path) -> None:
    from nova.evaluation.replay import replay_session

    path = _claude_code(tmp_path / "s.jsonl")
    unknown = replay_session(read_session_file(path), window=32000, policy="nova")
    assert not [m for m in unknown.final_view if m.origin == "context"]  # no "cwd: unknown" observation
    records = [{**json.loads(line), "cwd": "/home/ana/shop"} for line in path.read_text().splitlines()]
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    session = read_session_file(path)
    assert session.working_directory == "/home/ana/shop"  # Claude Code keeps it on every record
    # The recording's own prompt told its model where it ran: Nova's observation would say it again.
    known = replay_session(session, window=32000, policy="nova")
    assert not [m for m in known.final_view if m.origin == "context"]
    naive = replay_session(session, window=32000, policy="naive")
    assert known.input_tokens == naive.input_tokens
