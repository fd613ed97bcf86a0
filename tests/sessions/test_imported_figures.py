"""What `nova sessions import` and `nova sessions show` say of real recordings of other agents: each figure
the recording has, and nothing it lacks shown as 0."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nova.cli.main import app
from nova.testing import shared_data_dir

runner = CliRunner()


def _shared(relative: str) -> Path:
    path = shared_data_dir() / "sessions" / relative
    if not path.is_file():
        pytest.skip(f"no shared session data at {path} (set NOVA_SHARED_DATA)")
    return path


def _import(path: Path) -> dict[str, object]:
    result = runner.invoke(app, ["sessions", "import", str(path), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert isinstance(data, dict)
    return data


def test_a_compaction_with_no_call_after_it_has_no_size_after(nova_home: Path) -> None:
    """Claude Code's `/compact` as the recording's last act: no call measured the view after it, so the
    boundary's size after is unknown, not 0 tokens."""
    imported = _import(_shared("agentlogs/claude-code/compact.jsonl"))
    shown = runner.invoke(app, ["sessions", "show", str(imported["session_id"])], env={"COLUMNS": "200"})
    assert shown.exit_code == 0, shown.output
    line = next(x for x in shown.output.splitlines() if "compaction (" in x)
    assert "→ 0 tokens" not in line and "15,808 tokens → size after not recorded" in line, line
    exported = runner.invoke(app, ["sessions", "export", str(imported["session_id"]), "--format", "md"])
    assert "→ 0 tokens" not in exported.output and "size after not recorded" in exported.output


@pytest.mark.parametrize("relative", ["agentlogs/claude-code/compact.jsonl",
                                      "codemie/claude-code/session-624a4a58.jsonl",
                                      "agentlogs/claude-code/subagent.jsonl"])
def test_import_counts_the_messages_the_session_holds(nova_home: Path, relative: str) -> None:
    """A summary the recorded agent wrote becomes a compaction boundary, not a message: the count the
    import prints is the one `nova sessions list` and `show` give, the sub-agents' too."""
    imported = _import(_shared(relative))
    sessions = [(imported["session_id"], imported["messages"])]
    sessions += [(c["session_id"], c["messages"]) for c in imported.get("children", [])]  # type: ignore[attr-defined]
    for session_id, count in sessions:
        shown = json.loads(runner.invoke(app, ["sessions", "show", str(session_id), "--json"]).output)
        assert shown["messages"] == count


def test_a_recording_without_usage_has_unknown_cost_never_zero(nova_home: Path) -> None:
    """A Codex rollout with no token counts: its 20 responses were calls all the same, so the session's
    cost, tokens billed and context are unknown (null in JSON), never $0 and 0 tokens."""
    imported = _import(_shared("codemie/codex/rollout-2026-05-11T13-28-45-019e1695-0522-7c83-8b39-0dd379793f80.jsonl"))
    sid = str(imported["session_id"])
    shown = json.loads(runner.invoke(app, ["sessions", "show", sid, "--json"]).output)
    assert shown["cost_usd"] is None and shown["tokens_billed"] is None and shown["context_tokens"] is None
    assert shown["calls"]["turn"]["calls"] == 20 and shown["calls"]["turn"]["cost_usd"] is None
    (row,) = json.loads(runner.invoke(app, ["sessions", "list", "--json"]).output)
    assert row["cost_usd"] is None and row["tokens_billed"] is None
    text = runner.invoke(app, ["sessions", "show", sid], env={"COLUMNS": "200"}).output
    assert "$0.0000" not in text and "0 tokens" not in text
    assert "context not recorded" in text and "tokens billed not recorded" in text and "cost unknown" in text
    listed = runner.invoke(app, ["sessions", "list"], env={"COLUMNS": "120"}).output
    assert "$0.00" not in listed and "unknown" in listed


def test_a_replay_without_a_simulated_cache_has_no_hit_rate(nova_home: Path) -> None:
    """A recording that names no model gets no provider cache to simulate: its hit rate is not measured,
    so the replay says n/a (null in --json), never 0.0 %."""
    path = _shared("codemie/codex/rollout-2026-05-11T13-28-45-019e1695-0522-7c83-8b39-0dd379793f80.jsonl")
    text = runner.invoke(app, ["replay", str(path)], env={"COLUMNS": "300"})
    assert text.exit_code == 0, text.output
    line = next(x for x in text.stdout.splitlines() if "cache (" in x)
    assert "cache (none)" in line and "hit rate n/a" in line and "0.0%" not in line, line
    data = json.loads(runner.invoke(app, ["replay", str(path), "--json"]).stdout)
    assert data.get("provider_cache") is None and data.get("cache_hit_rate") is None


def test_a_recording_with_one_call_without_usage_shows_what_the_others_were_billed(
        nova_home: Path, tmp_path: Path) -> None:
    """One reply of two recorded no usage: the session said "tokens billed not recorded" beside a calls
    line of 17,010 tokens. It shows what the calls with usage were billed, marked as a lower bound."""
    def record(kind: str, uuid: str, content: object, usage: object = None) -> dict[str, object]:
        message: dict[str, object] = {"role": kind, "content": content}
        if kind == "assistant":
            message.update(id=f"r-{uuid}", model="claude-sonnet-4-5", usage=usage)
        return {"type": kind, "sessionId": "s1", "uuid": uuid, "message": message,
                "timestamp": "2025-10-10T21:55:09.367Z"}

    use = [{"type": "tool_use", "id": "c1", "name": "Read", "input": {"file_path": "/a.py"}}]
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in [
        record("user", "u1", "hello"),
        record("assistant", "u2", use, {"input_tokens": 10, "cache_read_input_tokens": 17000, "output_tokens": 0}),
        record("user", "u3", [{"type": "tool_result", "tool_use_id": "c1", "content": "x = 1"}]),
        record("assistant", "u4", [{"type": "text", "text": "done"}], {}),
    ]), encoding="utf-8")
    sid = str(_import(path)["session_id"])
    text = runner.invoke(app, ["sessions", "show", sid], env={"COLUMNS": "300"}).output
    assert "17,010 tokens billed by the calls with usage (1 recorded none)" in text, text
    (row,) = json.loads(runner.invoke(app, ["sessions", "list", "--json"]).output)
    assert row["tokens_billed"] is None and row["tokens_billed_recorded"] == 17010 and row["unmeasured_calls"] == 1
    listed = runner.invoke(app, ["sessions", "list"], env={"COLUMNS": "120"}).output
    assert "17,010+" in listed and "some calls recorded no usage" in listed, listed
