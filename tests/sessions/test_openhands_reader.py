"""OpenHands event streams, read from fixtures written in the shape OpenHands serialises events
(`event_to_dict`: `action` + `args` or `observation` + `content` + `extras`, `source`, `cause`,
`tool_call_metadata` with the litellm `model_response`): a trajectory, an evaluation `output.jsonl` of
several runs, and the GitHub resolver's `output.jsonl` (runs named by `issue`, no `instance_id`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from nova.cli.commands.replay import replay_command
from nova.cli.commands.sessions import app as sessions_app
from nova.errors import SessionImportError
from nova.history.invariants import check_tool_pairing
from nova.history.tool_paths import paths_of
from nova.model import usage_of
from nova.sessions.importers import read_session_file
from nova.sessions.repair import repair_history

FIXTURES = Path(__file__).parent.parent / "fixtures" / "sessions" / "openhands"


def _replay_app() -> typer.Typer:
    app = typer.Typer()
    app.command("replay")(replay_command)
    app.callback()(lambda: None)
    return app


def test_trajectory_reassembles_responses_and_pairs_observations() -> None:
    imported = read_session_file(FIXTURES / "trajectory.json")
    assert imported.format == "openhands" and imported.system.startswith("You are OpenHands agent")
    messages = imported.messages
    assert [m.role for m in messages] == ["user", "assistant", "user"] * 1 + ["assistant", "user"] * 3 + ["assistant"]
    # Two calls of one model response are one assistant message; their observations arrived B then A.
    first = messages[1]
    assert first.text == "Let me look at the repository layout and the failing module first."
    assert [(c.id, c.name) for c in first.tool_uses()] == [("toolu_01A", "execute_bash"),
                                                           ("toolu_01B", "str_replace_editor")]
    assert [r.tool_use_id for r in messages[2].tool_results()] == ["toolu_01A", "toolu_01B"]
    assert messages[2].tool_results()[0].content == "__init__.py  ops.py  test_ops.py"
    # The arguments are the model's own (from the response), not the action's bookkeeping args.
    assert first.tool_uses()[0].input == {"command": "ls /workspace/calc"}
    # A `think` call's argument is not the response's text: that response had none.
    assert messages[3].text == "" and messages[3].tool_uses()[0].input["thought"].startswith("divide()")
    usage = usage_of(first)
    assert usage is not None and usage.context_tokens == 8421 and usage.output_tokens == 121
    assert imported.meta["source_counts"] == {"responses": 5, "tool_calls": 6, "tool_results": 5}
    assert imported.meta["ignored_events"] == {"recall": 2, "agent_state_changed": 2}
    assert not imported.skipped


def test_trajectory_edit_is_a_write_and_finish_is_the_only_open_call() -> None:
    messages = read_session_file(FIXTURES / "trajectory.json").messages
    calls = [c for m in messages for c in m.tool_uses()]
    edit = next(c for c in calls if c.input.get("command") == "str_replace")
    assert paths_of(edit).writes == ("/workspace/calc/ops.py",)
    # `finish` has no observation in OpenHands: the recording ends on it, and replay's repair closes it.
    assert [v.detail for v in check_tool_pairing(messages)] == ["tool_use toolu_05A has 0 results next"]
    repaired, repair = repair_history(messages)
    assert check_tool_pairing(repaired) == [] and repair.changed


def test_output_jsonl_imports_every_run_as_its_own_session(nova_home: Path) -> None:
    imported = read_session_file(FIXTURES / "output.jsonl")
    runs = imported.runs()
    assert [r.meta["run"] for r in runs] == ["example__calc-101", "example__calc-102"]
    assert [len(r.messages) for r in runs] == [10, 2] and not imported.skipped
    assert runs[1].messages[1].text == "I need the failing test's name to go on."
    result = CliRunner().invoke(sessions_app, ["import", str(FIXTURES / "output.jsonl"), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [(d["run"], d["messages"]) for d in data] == [("example__calc-101", 10), ("example__calc-102", 2)]
    assert len({d["session_id"] for d in data}) == 2
    assert {p.name for p in (nova_home / "sessions").iterdir()} >= {d["session_id"] for d in data}
    plain = CliRunner().invoke(sessions_app, ["import", str(FIXTURES / "output.jsonl")])
    assert "(example__calc-102) as session" in plain.output


def test_resolver_output_run_is_named_by_its_issue() -> None:
    imported = read_session_file(FIXTURES / "resolver_output.jsonl")
    assert imported.meta["run"] == "example/calc#7" and "instance_id" not in imported.meta
    assert sum(len(m.tool_uses()) for m in imported.messages) == 6 and not imported.siblings


def test_replay_picks_a_run_with_instance_and_says_which_by_default() -> None:
    app = _replay_app()
    path = str(FIXTURES / "output.jsonl")
    default = CliRunner().invoke(app, ["replay", path, "--policy", "naive", "--json"])
    assert default.exit_code == 0, default.output
    assert "holds 2 runs" in default.stderr and "replaying example__calc-101" in default.stderr
    assert json.loads(default.stdout.strip().splitlines()[-1])["calls"] == 5
    second = CliRunner().invoke(app, ["replay", path, "--policy", "naive", "--json", "--instance", "example__calc-102"])
    assert second.exit_code == 0, second.output
    assert json.loads(second.stdout.strip().splitlines()[-1])["calls"] == 1
    wrong = CliRunner().invoke(app, ["replay", path, "--instance", "nope"])
    assert wrong.exit_code == 2 and "example__calc-102" in wrong.stderr


def test_a_torn_line_is_skipped_and_strict_refuses(tmp_path: Path) -> None:
    lines = (FIXTURES / "output.jsonl").read_text(encoding="utf-8").splitlines()
    path = tmp_path / "output.jsonl"
    path.write_text(lines[0] + "\n" + lines[1][:200] + "\n", encoding="utf-8")
    imported = read_session_file(path)
    assert [s.where for s in imported.skipped] == ["line 2"] and not imported.siblings
    with pytest.raises(SessionImportError, match="1 record"):
        read_session_file(path, strict=True)


def test_actions_without_the_model_response_still_read(tmp_path: Path) -> None:
    """Trajectories exported without `model_response` keep `function_name`/`tool_call_id` and the
    `thought` of the response's first action."""
    events = json.loads((FIXTURES / "trajectory.json").read_text(encoding="utf-8"))
    for event in events:
        if "tool_call_metadata" in event:
            event["tool_call_metadata"].pop("model_response")
    path = tmp_path / "trajectory.json"
    path.write_text(json.dumps(events), encoding="utf-8")
    messages = read_session_file(path).messages
    assert messages[1].text == "Let me look at the repository layout and the failing module first."
    assert messages[1].tool_uses()[0].input["command"] == "ls /workspace/calc"
    # Each call is its own response when the response ids are gone; results still pair.
    assert check_tool_pairing(repair_history(messages)[0]) == []


def test_replay_starts_at_the_real_first_request() -> None:
    """The trajectory keeps the system prompt but not the tool definitions the model was sent."""
    result = CliRunner().invoke(_replay_app(), ["replay", str(FIXTURES / "trajectory.json"), "--policy", "naive",
                                                "--json"])
    assert result.exit_code == 0, result.output
    first = json.loads(result.stdout.strip().splitlines()[-1])["per_call"][0]["input_tokens"]
    assert abs(first - 8421) <= 8421 * 0.01 and "lacks its tool definitions" in result.stderr


def test_condensation_with_a_summary_becomes_a_summary_and_boundary(tmp_path: Path, nova_home: Path) -> None:
    """OpenHands' summarizing condenser forgets a range of events and leaves a summary in their place."""
    from nova.messages import SummaryPart
    from nova.sessions.export import import_sessions
    from nova.sessions.schema import BoundaryRecord
    from nova.sessions.transcript import Transcript

    events = json.loads((FIXTURES / "trajectory.json").read_text(encoding="utf-8"))
    condensation = {"id": 99, "timestamp": "2025-06-03T14:10:11.000000", "source": "agent",
                    "message": "Summary: Listed calc, read ops.py, noted the missing zero check.",
                    "action": "condensation",
                    "args": {"forgotten_event_ids": None, "forgotten_events_start_id": 5, "forgotten_events_end_id": 10,
                             "summary": "Listed calc, read ops.py, noted the missing zero check.",
                             "summary_offset": 1}}
    at = next(i for i, e in enumerate(events) if e["id"] == 11)
    path = tmp_path / "trajectory.json"
    path.write_text(json.dumps([*events[:at], condensation, *events[at:]]), encoding="utf-8")
    imported = read_session_file(path)
    messages = imported.messages
    summary = next(m for m in messages if m.has("summary"))
    part = summary.parts[0]
    assert isinstance(part, SummaryPart) and part.text.startswith("Listed calc")
    # The two responses and their results made from events 5..10 are what it covers.
    assert part.covers == tuple(m.id for m in messages[1:5])
    assert summary.metadata["compaction"]["source"] == "openhands" and "condensation" not in imported.meta["ignored_events"]
    result = import_sessions(path, nova_home)
    log = nova_home / "sessions" / result.session_id / "transcript.jsonl"
    assert [r.covers for r in Transcript(log).iter_records() if isinstance(r, BoundaryRecord)] == [part.covers]
