"""Replay of the 20 real trajectories through Nova at 32k and 64k windows."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from nova.cli.commands.replay import replay_command
from nova.context.summarize import is_user_message
from nova.evaluation.replay import replay_messages, view_text
from nova.sessions.importers import read_session_file
from nova.testing import shared_data_dir
from nova.tokens import counter_for_model

FOLDER = shared_data_dir() / "trajectories" / "mini-swe-agent-gemini3"
FILES = sorted(FOLDER.glob("*.traj.json"))
pytestmark = pytest.mark.skipif(not FILES, reason=f"trajectories not found under {FOLDER}")


@pytest.fixture(scope="module")
def sessions() -> list[object]:
    return [read_session_file(f) for f in FILES]


# The 64k replay (the same 20 files, less to compact) is in the slow tier; 32k, the tighter, is not.
@pytest.mark.parametrize("window", [32000, pytest.param(64000, marks=pytest.mark.slow)])
def test_nova_replay_of_all_trajectories(sessions: list, window: int) -> None:
    logging.getLogger("nova.agent").setLevel(logging.ERROR)
    assert len(sessions) == 20
    counter = counter_for_model("gemini-3-pro")
    for session in sessions:
        report = replay_messages(session.messages, system=session.system, window=window, policy="nova",
                                 counter=counter)
        name = session.source_path.name
        assert report.invariant_violations == 0, (name, report.violations[:3])
        assert report.peak_context_tokens <= window, name
        assert report.breaker_trips == 0, name
        text = view_text(report.final_view)
        lost = [m.id for m in session.messages if is_user_message(m) and m.text not in text]
        assert not lost, (name, lost)


def test_replay_command_json_has_exactly_the_documented_keys(tmp_path: Path) -> None:
    app = typer.Typer()
    app.command("replay")(replay_command)
    app.callback()(lambda: None)
    dump = tmp_path / "view.json"
    result = CliRunner().invoke(app, ["replay", str(FILES[0]), "--window", "32000", "--policy", "truncate",
                                      "--json", "--dump-view", str(dump)])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output.strip().splitlines()[-1])
    core = {"policy", "window", "calls", "input_tokens", "output_tokens", "peak_context_tokens",
            "compactions", "snips", "spills", "breaker_trips", "invariant_violations",
            "requests_over_window", "per_call", "view_changes"}
    # The recording names its model and has usage: each call is priced at that model and the real bill
    # is beside the simulated cost, with no --price needed.
    cost = {"cost_usd", "billed_usd", "output_cost_usd", "price_model", "provider_cache", "cache_hit_rate",
            "cache_read_tokens", "cache_write_tokens", "uncached_input_tokens", "summary_calls",
            "summary_input_tokens", "summary_output_tokens"}
    assert set(data) == core | cost
    assert data["billed_usd"] > 0 and data["cost_usd"] > 0
    assert data["policy"] == "truncate" and data["window"] == 32000
    assert all(set(c) - {"over_window"} == {"input_tokens", "event", "composition", "cache_read_tokens",
                                            "cache_write_tokens"} for c in data["per_call"])
    # The view's composition by kind adds up to each call's input; truncate's cuts are listed.
    assert all(sum(c["composition"].values()) == c["input_tokens"] for c in data["per_call"])
    assert data["view_changes"] and {c["event"] for c in data["view_changes"]} == {"truncate"}
    assert data["requests_over_window"] == sum(c.get("over_window", False) for c in data["per_call"])
    # Deterministic: the same input gives the same JSON, byte for byte.
    again = CliRunner().invoke(app, ["replay", str(FILES[0]), "--window", "32000", "--policy", "truncate", "--json"])
    assert again.output.strip().splitlines()[-1] == result.output.strip().splitlines()[-1]
    assert len(data["per_call"]) == data["calls"]
    view = json.loads(dump.read_text())
    assert set(view) == {"system", "tools", "messages"}


def test_replay_command_rejects_unknown_policy() -> None:
    app = typer.Typer()
    app.command("replay")(replay_command)
    app.callback()(lambda: None)
    result = CliRunner().invoke(app, ["replay", str(FILES[0]), "--policy", "magic"])
    assert result.exit_code == 2


def test_the_text_says_when_the_receipts_price_summary_calls_the_cost_leaves_out(tmp_path: Path) -> None:
    """A replay's receipts price the model summary a live Nova would ask for; its cost counts those calls
    only with `--summarizer model-estimate`, and the line says so instead of "summary calls 0"."""
    app = typer.Typer()
    app.command("replay")(replay_command)
    app.callback()(lambda: None)
    common = ["replay", str(FILES[0]), "--window", "32000", "--provider-cache", "anthropic", "--price",
              "claude-sonnet-4-5"]
    plain = CliRunner().invoke(app, common, env={"COLUMNS": "240"})
    assert plain.exit_code == 0, plain.output
    assert "compaction 1: " in plain.output and "summary call " in plain.output
    assert "summary calls not counted (--summarizer model-estimate counts the" in plain.output
    counted = CliRunner().invoke(app, [*common, "--summarizer", "model-estimate"], env={"COLUMNS": "240"})
    assert counted.exit_code == 0, counted.output
    assert "summary calls not counted" not in counted.output and "summary calls 0" not in counted.output
