"""NovaSession against the real OpenAI Agents SDK, driven by the SDK's own ScriptedModel (never the network)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest

pytest.importorskip("agents", reason="the openai-agents extra is not installed")

from agents import Agent, Runner, function_tool
from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message, function_call
from agents.usage import Usage as AgentsUsage
from tests.integrations.workload import SUMMARY_MARK, Answer, Workload

from nova.integrations.openai_agents import NovaSession, _to_nova, pairing_violations
from nova.model import ToolSpec
from nova.tokens import count_message, count_system, count_tools

pytestmark = pytest.mark.slow


def _user_texts(items: list[Any]) -> str:
    out = []
    for item in items:
        if isinstance(item, Mapping) and item.get("role") == "user":
            content = item.get("content")
            out.append(content if isinstance(content, str) else json.dumps(content))
    return "\n".join(out)


class Recorder:
    def __init__(self, work: Workload) -> None:
        self.work = work
        self.sizes: list[int] = []
        self.violations: list[str] = []
        self.lost_prompts: list[str] = []
        self.prompts_so_far: list[str] = []
        self.summaries = 0
        self.call = 0

    def size_of(self, call: ModelCall) -> int:
        counter = self.work.counter
        tools = [ToolSpec(t.name, t.description, t.params_json_schema) for t in call.tools]
        return (count_system(call.system_instructions or "", counter) + count_tools(tools, counter)
                + sum(count_message(_to_nova([item]), counter) for item in call.input))

    def __call__(self, call: ModelCall) -> ModelStep:
        used = self.size_of(call)
        self.call += 1
        usage = AgentsUsage(requests=1, input_tokens=used, output_tokens=20, total_tokens=used + 20)
        items = list(call.input)
        if SUMMARY_MARK in _user_texts(items[-1:]):
            self.summaries += 1
            return ModelStep(output=[assistant_message(self.work.summary())], usage=usage)
        self.sizes.append(used)
        self.violations += pairing_violations(items)
        seen = _user_texts(items)
        self.lost_prompts += [p for p in self.prompts_so_far if p not in seen]
        last = items[-1]
        output = str(last.get("output")) if isinstance(last, Mapping) and last.get("type") == "function_call_output" \
            else None
        action = self.work.next_action(output)
        if isinstance(action, Answer):
            return ModelStep(output=[assistant_message(action.text, item_id=f"msg-{self.call}")], usage=usage)
        return ModelStep(output=[function_call(action.name, action.args, call_id=f"call-{self.call}")], usage=usage)


class Run:
    def __init__(self, **kw: Any) -> None:
        self.__dict__.update(kw)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    work = Workload()
    recorder = Recorder(work)
    home = tmp_path_factory.mktemp("openai-agents") / "home"
    session = NovaSession.open(window=work.window, home=home)

    @function_tool
    def fetch(n: int) -> str:
        """One chunk of the build log."""
        return work.output(n)

    model = ScriptedModel([ModelStep.respond(recorder) for _ in range(work.steps * 2)])
    agent: Agent[Any] = Agent(name="logs", instructions="You read build logs.", model=model,
                              tools=[fetch, session.read_back_tool])
    for prompt in work.prompts():
        recorder.prompts_so_far.append(prompt)
        Runner.run_sync(agent, prompt, session=session, run_config=session.run_config(), max_turns=1000)
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
