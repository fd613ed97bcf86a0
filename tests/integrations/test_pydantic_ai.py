"""NovaCapability against the real pydantic-ai, driven by its own FunctionModel (never the network)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("pydantic_ai", reason="the pydantic-ai extra is not installed")

from pydantic_ai import messages as pm
from tests.integrations.drive_pydantic_ai import Recorder, scripted_run
from tests.integrations.workload import Workload

from nova.integrations.pydantic_ai import NovaCapability, pairing_violations
from nova.sessions.session import Session


class Run:
    def __init__(self, work: Workload, recorder: Recorder, capability: NovaCapability, history: list[pm.ModelMessage],
                 home: Path, session_id: str) -> None:
        self.work, self.recorder, self.capability, self.history = work, recorder, capability, history
        self.home, self.session_id = home, session_id


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """The scripted 300-step run, once for the module's checks."""
    work = Workload()
    home = tmp_path_factory.mktemp("pydantic-ai") / "home"
    session = Session.create(home, provider="pydantic-ai", model="function")
    capability = NovaCapability.open(window=work.window, session=session)
    # Each turn's caller marks its prompt for caching: Nova keeps one cache point, on the last prompt.
    recorder, history = scripted_run(work, capability)
    session.close()
    return Run(work, recorder, capability, history, home, session.id)


pytestmark = pytest.mark.slow


def test_every_call_of_a_run_five_times_the_window_fits_it(run: Run) -> None:
    assert run.work.total_output_tokens() >= 5 * run.work.window
    assert len(run.recorder.sizes) == run.work.steps
    assert max(run.recorder.sizes) < run.work.window
    stats = run.capability.engine.stats
    assert stats.compactions >= 3 and stats.spills >= 3
    # The summaries were written by the run's own model (the FunctionModel answered them).
    assert run.recorder.summaries == stats.compactions


def test_no_tool_call_loses_its_return_and_no_user_message_is_lost(run: Run) -> None:
    assert run.recorder.violations == []
    assert run.recorder.lost_prompts == []
    # The run's own history is the raw record: whole, every output as the tool returned it.
    assert pairing_violations(run.history) == []
    returns = [p for m in run.history if isinstance(m, pm.ModelRequest) for p in m.parts
               if isinstance(p, pm.ToolReturnPart) and p.tool_name == "fetch"]
    assert len(returns) == run.work.steps - run.work.turns - len(run.work.read_backs)
    assert all("<persisted-output>" not in str(p.content) for p in returns)


def test_a_spilled_output_is_read_back_through_the_registered_tool(run: Run) -> None:
    assert run.work.read_backs
    reads = [p for m in run.history if isinstance(m, pm.ModelRequest) for p in m.parts
             if isinstance(p, pm.ToolReturnPart) and p.tool_name == "read_saved_output"]
    assert len(reads) == len(run.work.read_backs)
    # The marker sits past the preview: only the saved file has it.
    assert all("MARKER-" in str(p.content) and "<persisted-output>" not in str(p.content) for p in reads)


def test_cache_points_stay_within_the_providers_limit(run: Run) -> None:
    # Six turns each added a cache point; the views carried at most one (plus instructions and tools: 3 of 4).
    assert max(run.recorder.cache_points) == 1
    assert sum(isinstance(c, pm.CachePoint) for m in run.history if isinstance(m, pm.ModelRequest)
               for p in m.parts if isinstance(p, pm.UserPromptPart) and not isinstance(p.content, str)
               for c in p.content) == run.work.turns


def test_the_run_replays_and_explains_itself_with_the_cli(run: Run) -> None:
    from typer.testing import CliRunner

    from nova.cli.main import app

    directory = run.home / "sessions" / run.session_id
    result = CliRunner().invoke(app, ["replay", str(directory / "transcript.jsonl"), "--window",
                                      str(run.work.window), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output.strip().splitlines()[-1])
    assert report["calls"] == run.work.steps + 0 and report["invariant_violations"] == 0
    assert report["requests_over_window"] == 0
    explained = CliRunner(env={"NOVA_HOME": str(run.home)}).invoke(app, ["context", run.session_id, "--json"])
    assert explained.exit_code == 0, explained.output
    context = json.loads(explained.output)
    assert 0 < context["used"] < run.work.window
    assert any(s["source"] == "pydantic-ai: instructions" for s in context["segments"])


def test_a_system_prompt_survives_the_compaction_that_folds_its_request(tmp_path: Path) -> None:
    from pydantic_ai import Agent
    from pydantic_ai.models.function import FunctionModel
    from tests.integrations.drive_pydantic_ai import Recorder

    work = Workload(steps=80, turns=2)
    recorder = Recorder(work)
    seen: list[bool] = []

    def model(messages: list[pm.ModelMessage], info: object) -> pm.ModelResponse:
        first = messages[0]
        seen.append(isinstance(first, pm.ModelRequest)
                    and any(isinstance(p, pm.SystemPromptPart) and p.content == "You read build logs."
                            for p in first.parts))
        return recorder(messages, info)  # type: ignore[arg-type]

    capability = NovaCapability.open(window=work.window, home=tmp_path / "home", summarizer="extractive")
    agent: Agent[None, str] = Agent(FunctionModel(model), system_prompt="You read build logs.",
                                    capabilities=[capability])

    @agent.tool_plain
    def fetch(n: int) -> str:
        """One chunk of the build log."""
        return work.output(n)

    history: list[pm.ModelMessage] = []
    for prompt in work.prompts():
        recorder.prompts_so_far.append(prompt)
        history = agent.run_sync(prompt, message_history=history).all_messages()
    assert capability.engine.stats.compactions >= 1 and recorder.summaries == 0  # extractive: no model call
    assert all(seen) and max(recorder.sizes) < work.window
    assert recorder.violations == [] and recorder.lost_prompts == []
