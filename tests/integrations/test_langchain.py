"""NovaMiddleware against the real LangChain v1 agent (LangGraph underneath), driven by a subclass of
LangChain's own GenericFakeChatModel that answers from the workload (never the network)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langchain.agents", reason="the langchain extra is not installed")

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from tests.integrations.drive_langchain import Recorder, build_agent, scripted_run
from tests.integrations.workload import Workload

from nova.integrations.langchain import STATE_KEY, NovaMiddleware, pairing_violations

pytestmark = pytest.mark.slow


class Run:
    def __init__(self, **kw: Any) -> None:
        self.__dict__.update(kw)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    work = Workload()
    home = tmp_path_factory.mktemp("langchain") / "home"
    nova = NovaMiddleware.open(window=work.window, home=home)
    recorder, messages = scripted_run(work, [nova])
    assert nova.engine.session is not None
    session_id = nova.engine.session.id
    nova.engine.session.close()
    return Run(work=work, recorder=recorder, nova=nova, messages=messages, home=home, session_id=session_id)


def test_every_call_of_a_run_five_times_the_window_fits_it(run: Run) -> None:
    assert run.work.total_output_tokens() >= 5 * run.work.window
    assert len(run.recorder.sizes) == run.work.steps
    assert max(run.recorder.sizes) < run.work.window
    stats = run.nova.engine.stats
    assert stats.compactions >= 3 and stats.spills >= 3
    assert run.recorder.summaries == stats.compactions


def test_no_tool_call_loses_its_message_and_no_user_message_is_lost(run: Run) -> None:
    assert run.recorder.violations == []
    assert run.recorder.lost_prompts == []
    assert pairing_violations(run.messages) == []
    outputs = [m for m in run.messages if isinstance(m, ToolMessage) and m.name == "fetch"]
    assert len(outputs) == run.work.steps - run.work.turns - len(run.work.read_backs)
    assert all("<persisted-output>" not in m.text for m in outputs)


def test_a_spilled_output_is_read_back_through_the_registered_tool(run: Run) -> None:
    reads = [m for m in run.messages if isinstance(m, ToolMessage) and m.name == "read_saved_output"]
    assert run.work.read_backs and len(reads) == len(run.work.read_backs)
    assert all("MARKER-" in m.text for m in reads)


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


def test_a_resumed_thread_pins_its_task_state_again(tmp_path: Path) -> None:
    work = Workload(steps=12, turns=2)
    saver = InMemorySaver()
    thread = {"configurable": {"thread_id": "t1"}, "recursion_limit": 100}
    first = NovaMiddleware.open(window=work.window, home=tmp_path / "home")
    first.command("/goal report every failing test id")
    first.command("/constraint keep port 8080 closed")
    state = build_agent(work, Recorder(work), [first], saver).invoke({"messages": [HumanMessage("start")]}, thread)
    assert state[STATE_KEY]["goal"] == "report every failing test id"
    # A new process: a fresh middleware, the same thread from the checkpointer.
    recorder = Recorder(work)
    seen: list[str] = []
    answer = recorder.__call__

    def spy(messages: list[BaseMessage]) -> AIMessage:
        seen.append("\n".join(m.text for m in messages))
        return answer(messages)

    second = NovaMiddleware.open(window=work.window, home=tmp_path / "home")
    build_agent(work, spy, [second], saver).invoke({"messages": [HumanMessage("go on")]}, thread)  # type: ignore[arg-type]
    assert second.engine.task_state.goal == "report every failing test id"
    assert all("keep port 8080 closed" in text for text in seen)


def test_the_async_agent_compacts_with_its_own_model_too(tmp_path: Path) -> None:
    import asyncio

    work = Workload(steps=80, turns=2)
    recorder = Recorder(work)
    nova = NovaMiddleware.open(window=work.window, home=tmp_path / "home")
    agent = build_agent(work, recorder, [nova])

    async def turns() -> list[BaseMessage]:
        messages: list[BaseMessage] = []
        for prompt in work.prompts():
            recorder.prompts_so_far.append(prompt)
            state = await agent.ainvoke({"messages": [*messages, HumanMessage(prompt)]}, {"recursion_limit": 500})
            messages = list(state["messages"])
        return messages

    messages = asyncio.run(turns())
    assert nova.engine.stats.compactions >= 1
    assert recorder.summaries == nova.engine.stats.compactions
    assert max(recorder.sizes) < work.window
    assert recorder.violations == [] and recorder.lost_prompts == []
    assert pairing_violations(messages) == []
