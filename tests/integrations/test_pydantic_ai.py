"""NovaCapability against the real pydantic-ai, driven by its own FunctionModel (never the network)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("pydantic_ai", reason="the pydantic-ai extra is not installed")

from pydantic_ai import Agent
from pydantic_ai import messages as pm
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage
from tests.integrations.workload import SUMMARY_MARK, Answer, Workload

from nova.integrations.pydantic_ai import (
    NovaCapability,
    _to_nova,
    pairing_violations,
)
from nova.sessions.session import Session
from nova.tokens import count_message, count_system


def _user_texts(messages: list[pm.ModelMessage]) -> str:
    out = []
    for m in messages:
        if isinstance(m, pm.ModelRequest):
            for p in m.parts:
                if isinstance(p, pm.UserPromptPart):
                    out.append(p.content if isinstance(p.content, str)
                               else " ".join(c for c in p.content if isinstance(c, str)))
    return "\n".join(out)


class Recorder:
    """The fake model: answers from the workload and checks every request it is sent."""

    def __init__(self, work: Workload) -> None:
        self.work = work
        self.sizes: list[int] = []
        self.violations: list[str] = []
        self.lost_prompts: list[str] = []
        self.prompts_so_far: list[str] = []
        self.summaries = 0
        self.cache_points: list[int] = []

    def size_of(self, messages: list[pm.ModelMessage], info: AgentInfo) -> int:
        counter = self.work.counter
        return (count_system(info.instructions or "", counter)
                + sum(count_message(_to_nova(m), counter) for m in messages))

    def __call__(self, messages: list[pm.ModelMessage], info: AgentInfo) -> pm.ModelResponse:
        used = self.size_of(messages, info)
        usage = RequestUsage(input_tokens=used, output_tokens=20)
        last = messages[-1]
        if isinstance(last, pm.ModelRequest) and SUMMARY_MARK in _user_texts([last]):
            self.summaries += 1
            return pm.ModelResponse(parts=[pm.TextPart(self.work.summary())], usage=usage)
        self.sizes.append(used)
        self.violations += pairing_violations(messages)
        self.cache_points.append(sum(isinstance(c, pm.CachePoint) for m in messages if isinstance(m, pm.ModelRequest)
                                     for p in m.parts if isinstance(p, pm.UserPromptPart)
                                     and not isinstance(p.content, str) for c in p.content))
        seen = _user_texts(messages)
        self.lost_prompts += [p for p in self.prompts_so_far if p not in seen]
        output = None
        if isinstance(last, pm.ModelRequest):
            returns = [p for p in last.parts if isinstance(p, pm.ToolReturnPart)]
            output = str(returns[-1].content) if returns else None
        action = self.work.next_action(output)
        if isinstance(action, Answer):
            return pm.ModelResponse(parts=[pm.TextPart(action.text)], usage=usage)
        return pm.ModelResponse(parts=[pm.ToolCallPart(action.name, action.args)], usage=usage)


def _agent(work: Workload, recorder: Recorder, capability: NovaCapability | None) -> Agent[None, str]:
    agent: Agent[None, str] = Agent(FunctionModel(recorder), instructions="You read build logs.",
                                    capabilities=[capability] if capability else [])

    @agent.tool_plain
    def fetch(n: int) -> str:
        """One chunk of the build log."""
        return work.output(n)

    return agent


class Run:
    def __init__(self, work: Workload, recorder: Recorder, capability: NovaCapability, history: list[pm.ModelMessage],
                 home: Path, session_id: str) -> None:
        self.work, self.recorder, self.capability, self.history = work, recorder, capability, history
        self.home, self.session_id = home, session_id


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """The scripted 300-step run, once for the module's checks."""
    work = Workload()
    recorder = Recorder(work)
    home = tmp_path_factory.mktemp("pydantic-ai") / "home"
    session = Session.create(home, provider="pydantic-ai", model="function")
    capability = NovaCapability.open(window=work.window, session=session)
    agent = _agent(work, recorder, capability)
    history: list[pm.ModelMessage] = []
    for prompt in work.prompts():
        recorder.prompts_so_far.append(prompt)
        # Each turn's caller marks its prompt for caching: Nova keeps one cache point, on the last prompt.
        result = agent.run_sync([prompt, pm.CachePoint()], message_history=history)
        history = result.all_messages()
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
