"""`nova replay FILE --at-recorded-compaction`: Nova compacts where the recorded agent did, and both summaries
are shown side by side with the transcript's facts each keeps (`--json` the figures, `--dump-view` Nova's
view right after its compaction)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nova.cli.main import app
from nova.evaluation.facts import kept, read_claude_code
from nova.messages import from_dict
from nova.testing import shared_data_dir

runner = CliRunner()
ANCHOR = shared_data_dir() / "sessions" / "codemie" / "claude-code" / "session-624a4a58.jsonl"
needs_anchor = pytest.mark.skipif(not ANCHOR.is_file(), reason=f"shared data absent ({ANCHOR}); set NOVA_SHARED_DATA")


@needs_anchor
def test_the_figures_and_the_view_right_after_novas_compaction(tmp_path: Path) -> None:
    dumped = tmp_path / "view.json"
    result = runner.invoke(app, ["replay", str(ANCHOR), "--at-recorded-compaction", "--window", "200000", "--json",
                                 "--dump-view", str(dumped)])
    assert result.exit_code == 0, result.output
    figures = json.loads(result.output)
    assert figures["boundary_line"] == 158 and figures["trigger"] == "auto" and figures["nova_compactions"] >= 1
    view = figures["kept"]["nova_view"]
    assert view["user_request"] == {"kept": 10, "total": 10}
    assert view["file_written"] == {"kept": 3, "total": 3}
    assert view["all"]["kept"] >= figures["kept"]["recorded_summary"]["all"]["kept"]
    assert figures["nova_summary_tokens"] <= figures["recorded_summary_tokens"]
    # The dumped view is the one the figures score: it starts with Nova's summary (the opening message holds
    # Claude Code's caveat, harness text, so it is folded too), and it holds every request typed before the
    # boundary.
    document = json.loads(dumped.read_text(encoding="utf-8"))
    messages = [from_dict(m) for m in document["messages"]]
    assert messages[0].origin == "summary"
    recorded = read_claude_code(ANCHOR)
    assert recorded is not None
    text = "\n".join(m.text for m in messages) + "\n" + "\n".join(
        r.content for m in messages for r in m.tool_results())
    assert all(kept(f, text) for f in recorded.facts if f.kind == "user_request")


@needs_anchor
def test_the_text_report_puts_the_two_summaries_side_by_side() -> None:
    result = runner.invoke(app, ["replay", str(ANCHOR), "--at-recorded-compaction", "--window", "200000"],
                           env={"COLUMNS": "160"})
    assert result.exit_code == 0, result.output
    columns = [line for line in result.output.splitlines() if " | " in line]
    assert columns and "recorded summary (claude-code)" in columns[0] and "Nova's summary" in columns[0]
    assert any("This session is being continued" in line.split(" | ")[0] for line in columns)
    assert any("[Previous conversation summary]" in line.split(" | ")[1] for line in columns)
    assert "user_request" in result.output and "10/10" in result.output


def test_a_recording_without_a_compaction_is_refused_with_the_reason(tmp_path: Path) -> None:
    path = tmp_path / "plain.jsonl"
    path.write_text(json.dumps({"type": "user", "sessionId": "s", "uuid": "u1",
                                "message": {"role": "user", "content": "hi"}}) + "\n", encoding="utf-8")
    result = runner.invoke(app, ["replay", str(path), "--at-recorded-compaction"])
    assert result.exit_code == 1
    assert "no compaction by the recorded agent" in result.output


def test_a_compaction_of_another_agent_is_named_not_denied(tmp_path: Path) -> None:
    # A Codex rollout that compacted: this comparison reads Claude Code's records only, and says so.
    path = tmp_path / "rollout.jsonl"
    records = [{"type": "session_meta", "payload": {"id": "s1", "cwd": "/repo"}},
               {"type": "response_item", "payload": {"type": "message", "role": "user",
                                                     "content": [{"type": "input_text", "text": "fix it"}]}},
               {"type": "response_item", "payload": {"type": "message", "role": "assistant",
                                                     "content": [{"type": "output_text", "text": "fixed"}]}},
               {"type": "compacted", "payload": {"message": "the parser was fixed"}}]
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    result = runner.invoke(app, ["replay", str(path), "--at-recorded-compaction"])
    assert result.exit_code == 1
    assert "the recorded codex agent compacted" in result.output and "--policy recorded" in result.output


def test_an_imported_session_is_compared_from_the_file_it_was_imported_from(tmp_path: Path, nova_home: Path) -> None:
    """`nova replay ID` takes an imported session's id, but with --at-recorded-compaction the id of a Claude
    Code session that compacted was refused: "no compaction by the recorded agent"."""
    from tests.evaluation.test_facts import transcript

    from nova.sessions.export import import_sessions

    path = transcript(tmp_path)
    session_id = import_sessions(path, nova_home).session_id
    by_id = runner.invoke(app, ["replay", session_id, "--at-recorded-compaction", "--json"])
    assert by_id.exit_code == 0, by_id.output
    by_file = runner.invoke(app, ["replay", str(path), "--at-recorded-compaction", "--json"])
    assert json.loads(by_id.stdout) == json.loads(by_file.stdout)
    # The file gone, the error says which it was and what the comparison needs.
    path.unlink()
    gone = runner.invoke(app, ["replay", session_id, "--at-recorded-compaction"])
    assert gone.exit_code == 1 and f"was imported from {path}, which is no longer there" in gone.output


def test_an_imported_compaction_of_another_agent_is_named(tmp_path: Path, nova_home: Path) -> None:
    from nova.sessions.export import import_sessions

    path = tmp_path / "rollout.jsonl"
    records = [{"type": "session_meta", "payload": {"id": "s1", "cwd": "/repo"}},
               {"type": "response_item", "payload": {"type": "message", "role": "user",
                                                     "content": [{"type": "input_text", "text": "fix it"}]}},
               {"type": "response_item", "payload": {"type": "message", "role": "assistant",
                                                     "content": [{"type": "output_text", "text": "fixed"}]}},
               {"type": "compacted", "payload": {"message": "the parser was fixed"}}]
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    session_id = import_sessions(path, nova_home).session_id
    result = runner.invoke(app, ["replay", session_id, "--at-recorded-compaction"])
    assert result.exit_code == 1
    assert "imported from a codex recording" in result.output and "--policy recorded" in result.output


def test_other_policies_do_not_go_with_it(tmp_path: Path) -> None:
    result = runner.invoke(app, ["replay", str(tmp_path / "x.jsonl"), "--at-recorded-compaction", "--policy",
                                 "truncate"])
    assert result.exit_code == 2 and "--at-recorded-compaction" in result.output
