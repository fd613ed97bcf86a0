"""NovaSession against the real OpenAI Agents SDK, driven by the SDK's own ScriptedModel (never the network)."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("agents", reason="the openai-agents extra is not installed")

from tests.integrations.drive_openai_agents import scripted_run
from tests.integrations.workload import Workload

from nova.integrations.openai_agents import NovaSession, pairing_violations

pytestmark = pytest.mark.slow


class Run:
    def __init__(self, **kw: Any) -> None:
        self.__dict__.update(kw)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    work = Workload()
    home = tmp_path_factory.mktemp("openai-agents") / "home"
    session = NovaSession.open(window=work.window, home=home)
    recorder = scripted_run(work, session, run_config=session.run_config(), tools=[session.read_back_tool])
    items = list(session._items)
    session_id = session.session_id
    session.close()
    return Run(work=work, recorder=recorder, session=session, items=items, home=home, session_id=session_id)


def test_every_call_of_a_run_five_times_the_window_fits_it(run: Run) -> None:
    assert run.work.total_output_tokens() >= 5 * run.work.window
    assert len(run.recorder.sizes) == run.work.steps
    assert max(run.recorder.sizes) < run.work.window
    stats = run.session.engine.stats
    assert stats.compactions >= 3 and stats.spills >= 3
    assert run.recorder.summaries == stats.compactions


def test_no_call_loses_its_output_and_no_user_message_is_lost(run: Run) -> None:
    assert run.recorder.violations == []
    assert run.recorder.lost_prompts == []
    assert pairing_violations(run.items) == []
    outputs = [i for i in run.items if i.get("type") == "function_call_output"]
    assert len(outputs) == run.work.steps - run.work.turns
    assert all("<persisted-output>" not in str(i["output"]) for i in outputs)


def test_a_spilled_output_is_read_back_through_the_registered_tool(run: Run) -> None:
    assert run.work.read_backs
    names = {i["call_id"]: i["name"] for i in run.items if i.get("type") == "function_call"}
    reads = [i for i in run.items if i.get("type") == "function_call_output" and names[i["call_id"]] == "read_saved_output"]
    assert len(reads) == len(run.work.read_backs)
    assert all("MARKER-" in str(i["output"]) for i in reads)


def test_the_session_reopens_with_every_item(run: Run) -> None:
    reopened = NovaSession.open(window=run.work.window, home=run.home, session_id=run.session_id)
    try:
        import asyncio

        assert asyncio.run(reopened.get_items()) == run.items
    finally:
        reopened.close()


def test_the_run_replays_with_the_cli(run: Run) -> None:
    from typer.testing import CliRunner

    from nova.cli.main import app

    transcript = run.home / "sessions" / run.session_id / "transcript.jsonl"
    result = CliRunner().invoke(app, ["replay", str(transcript), "--window", str(run.work.window), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output.strip().splitlines()[-1])
    assert report["calls"] == run.work.steps and report["invariant_violations"] == 0
    explained = CliRunner(env={"NOVA_HOME": str(run.home)}).invoke(app, ["context", run.session_id, "--json"])
    assert explained.exit_code == 0, explained.output
    assert 0 < json.loads(explained.output)["used"] < run.work.window
