"""Every model call an agent makes is charged once, with its purpose (nova.agent.calls): a turn's steps,
a compaction summary, memory recall and extraction, a sub-agent's calls. Real sessions on disk and the
real agent assembly; the model is a `nova.testing` fake that answers each purpose as a model would and
counts what it was asked."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nova.agent.builder import AgentOptions, build_agent
from nova.agent.calls import CallMeter, calls_report
from nova.memory.store import Memory, MemoryStore
from nova.messages import Message
from nova.model import CALL_PURPOSES, CallCount, CallPurpose, ModelRequest, Usage
from nova.present.figures import calls_brief, calls_line
from nova.providers.pricing import cost_usd
from nova.sessions.meta import read_meta
from nova.sessions.session import Session
from nova.settings import load_settings
from nova.testing import FunctionProvider, call, last_message, reply

PRICED = "claude-sonnet-4-5"
USAGE = {
    "turn": Usage(input_tokens=1_000, output_tokens=50),
    "memory_recall": Usage(input_tokens=300, output_tokens=10),
    "memory_extraction": Usage(input_tokens=700, output_tokens=40),
    "compaction": Usage(input_tokens=5_000, output_tokens=400),
    "child": Usage(input_tokens=800, output_tokens=30),
}


def purpose_of(request: ModelRequest) -> str:
    """What the fake model was asked for, read from the request as a model would read it."""
    if request.metadata.get("purpose") in ("memory_recall", "memory_extraction"):
        return str(request.metadata["purpose"])
    if "Your context window is being compacted" in last_message(request).text:
        return "compaction"
    if "You are a sub-agent" in last_message(request).text:
        return "child"
    return "turn"


class PurposeModel:
    """Answers each purpose as a model would, with a known usage; counts the requests by purpose."""

    def __init__(self, *, delegate: bool = False) -> None:
        self.seen: list[str] = []
        self.delegate = delegate
        self.provider = FunctionProvider(self.answer)

    def answer(self, request: ModelRequest) -> reply:
        purpose = purpose_of(request)
        self.seen.append(purpose)
        usage = USAGE[purpose]
        if purpose == "memory_recall":
            return reply('["build-command"]', usage=usage)
        if purpose == "memory_extraction":
            return reply("NO_MEMORIES", usage=usage)
        if purpose == "compaction":
            return reply("## Task\nKeep going.\n## Next step\nRun the tests.", usage=usage)
        if purpose == "child":
            return reply("The notes say 42.", usage=usage)
        delegated = any("[sub-agent" in part.content for m in request.messages for part in m.tool_results())
        if self.delegate and not delegated:
            return reply(tool_calls=[call("task", prompt="read notes.txt and report the number", mode="isolated")],
                         usage=usage)
        return reply("Done.", usage=usage)


def _project(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / "notes.txt").write_text("the answer is 42\n")
    return root


def _remember(nova_home: Path, project: Path) -> None:
    """One reviewed project memory, so recall has something to choose from (and asks the model)."""
    now = datetime.now(UTC)
    MemoryStore.for_workspace(home=nova_home, cwd=project).write(Memory(
        name="build-command", description="how to build this project", type="project",
        body="Build with `make all`.", created=now, updated=now))


def _agent(nova_home: Path, project: Path, model: PurposeModel, *, name: str = PRICED,
           history: list[Message] | None = None):  # type: ignore[no-untyped-def]
    settings = load_settings(home=nova_home, overrides={"provider": "anthropic", "model": name})
    session = Session.create(nova_home, title="calls", cwd=project, provider="anthropic", model=name)
    agent = build_agent(settings, model.provider, AgentOptions(cwd=project, yes=True), session=session,
                        session_id=session.id, session_dir=session.dir, history=history or [])
    return agent, session


def _close(agent, session: Session) -> None:  # type: ignore[no-untyped-def]
    agent.close()  # waits for the extraction and the recall still running
    session.close()


def test_a_turn_with_recall_and_extraction_charges_each_call_once_with_its_purpose(
        nova_home: Path, tmp_path: Path) -> None:
    project = _project(tmp_path)
    _remember(nova_home, project)
    model = PurposeModel()
    agent, session = _agent(nova_home, project, model)
    agent.run_turn("how do I build this?")
    _close(agent, session)
    assert sorted(model.seen) == ["memory_extraction", "memory_recall", "turn"]
    meta = read_meta(session.dir)
    calls = meta.calls
    assert {p: c.calls for p, c in calls.items()} == {"turn": 1, "memory_extraction": 1, "memory_recall": 1}
    for purpose, count in calls.items():
        assert count.usage == USAGE[purpose]
        assert count.cost_usd == pytest.approx(cost_usd(USAGE[purpose], PRICED))
    # The session's totals are the sum of every call, side calls included.
    assert meta.usage == USAGE["turn"] + USAGE["memory_recall"] + USAGE["memory_extraction"]
    assert meta.cost_known and meta.cost_usd == pytest.approx(sum(c.cost_usd for c in calls.values()))
    # The context figure is the turn's, not the short excerpt the extraction read after it.
    assert meta.last_context_tokens != USAGE["memory_extraction"].context_tokens
    assert agent.meter.tally() == calls  # the run's own tally says the same


def test_a_compaction_summary_is_charged_as_compaction(nova_home: Path, tmp_path: Path) -> None:
    project = _project(tmp_path)
    history: list[Message] = []
    for i in range(12):
        history += [Message.user(f"step {i}: " + "look at the logs " * 200),
                    Message.assistant(f"step {i} done: " + "the log says ok " * 200)]
    model = PurposeModel()
    agent, session = _agent(nova_home, project, model, history=history)
    assert agent.compact()
    _close(agent, session)
    assert model.seen == ["compaction"]
    calls = read_meta(session.dir).calls
    assert list(calls) == ["compaction"] and calls["compaction"].calls == 1
    assert calls["compaction"].usage == USAGE["compaction"]


def test_a_sub_agents_calls_are_charged_to_its_parent_as_subagent(nova_home: Path, tmp_path: Path) -> None:
    project = _project(tmp_path)
    model = PurposeModel(delegate=True)
    agent, session = _agent(nova_home, project, model)
    agent.run_turn("what number do the notes hold?")
    _close(agent, session)
    assert model.seen.count("child") == 1 and model.seen.count("turn") == 2
    meta = read_meta(session.dir)
    calls = meta.calls
    assert calls["subagent"].calls == 1 and calls["subagent"].usage == USAGE["child"]
    assert calls["turn"].calls == 2
    # Every request the model saw is one call of the parent's tally.
    assert sum(c.calls for c in calls.values()) == len(model.seen)
    with Session.open(nova_home, session.id, readonly=True) as parent:
        (child,) = parent.store.list_children(session.id)
    # The sub-agent's own record counts its own call as a turn of its own.
    assert {p: c.calls for p, c in read_meta(nova_home / "sessions" / child.id).calls.items()} == {"turn": 1}


def test_an_unpriced_model_leaves_every_purposes_cost_unknown_never_zero(nova_home: Path, tmp_path: Path) -> None:
    project = _project(tmp_path)
    _remember(nova_home, project)
    model = PurposeModel()
    agent, session = _agent(nova_home, project, model, name="mystery-local-model")
    agent.run_turn("how do I build this?")
    _close(agent, session)
    meta = read_meta(session.dir)
    assert not meta.cost_known and meta.extra["unpriced_calls"] == 3
    report = calls_report(meta.calls)
    assert {p: r["cost_usd"] for p, r in report.items()} == dict.fromkeys(report, None)
    assert "$0.0000" not in calls_line(meta.calls) and "cost unknown" in calls_line(meta.calls)
    from nova.cli.commands.sessions import app

    runner = CliRunner()
    shown = json.loads(runner.invoke(app, ["show", session.id, "--json"]).stdout)
    assert shown["cost_usd"] is None
    assert shown["calls"]["memory_extraction"] == report["memory_extraction"]
    assert shown["calls"]["memory_extraction"]["tokens"] == 740
    text = runner.invoke(app, ["show", session.id]).stdout
    assert "calls: turn 1 call (1,050 tokens, cost unknown)" in text and "memory 1 call (740 tokens" in text


def test_sessions_show_lists_the_calls_by_purpose(nova_home: Path) -> None:
    from nova.cli.commands.sessions import app

    session = Session.create(nova_home, title="priced", provider="anthropic", model=PRICED)
    session.add_cost(USAGE["turn"], 0.01)
    session.add_cost(USAGE["memory_extraction"], 0.002, "memory_extraction")
    session.add_cost(USAGE["child"], None, "subagent", calls=3)
    session.close()
    runner = CliRunner()
    data = json.loads(runner.invoke(app, ["show", session.id, "--json"]).stdout)
    assert list(data["calls"]) == ["turn", "memory_extraction", "subagent"]
    assert data["calls"]["turn"] == {"calls": 1, "tokens": 1_050, "usage": USAGE["turn"].to_dict(),
                                     "cost_usd": 0.01, "unpriced_calls": 0}
    assert data["calls"]["subagent"]["calls"] == 3 and data["calls"]["subagent"]["cost_usd"] is None
    assert data["cost_usd"] is None  # one purpose unpriced: the whole is unknown
    text = runner.invoke(app, ["show", session.id]).stdout
    assert ("calls: turn 1 call (1,050 tokens, $0.0100) · memory 1 call (740 tokens, $0.0020) · sub-agent 3 calls "
            "(830 tokens, cost unknown)") in text


def test_the_meter_counts_only_answered_calls_and_never_meters_twice() -> None:
    from nova.agent.calls import MeteredProvider

    provider = FunctionProvider(lambda request: reply("ok", usage=Usage(input_tokens=10, output_tokens=2)))
    meter = CallMeter(provider, model=PRICED)
    turn = meter.provider_for("turn")
    again = CallMeter(turn, model=PRICED)  # a metered provider handed to another meter
    assert again.inner is provider and not isinstance(again.inner, MeteredProvider)
    request = ModelRequest(model=PRICED, messages=[Message.user("hi")])
    events = list(turn.stream(request))
    assert len(events) >= 2
    assert meter.tally() == {"turn": CallCount(calls=1, usage=Usage(input_tokens=10, output_tokens=2),
                                               cost_usd=cost_usd(Usage(input_tokens=10, output_tokens=2), PRICED) or 0)}
    with pytest.raises(ValueError, match="unknown call purpose"):
        meter.provider_for("gossip")  # type: ignore[arg-type]
    assert calls_brief(meter.tally()) == "1 model call"


@pytest.mark.parametrize("purpose", CALL_PURPOSES)
def test_every_purpose_reads_back_from_meta_json(nova_home: Path, purpose: CallPurpose) -> None:
    session = Session.create(nova_home, title=purpose, provider="anthropic", model=PRICED)
    session.add_cost(Usage(input_tokens=5, output_tokens=1), 0.5, purpose)
    session.close()
    assert read_meta(session.dir).calls == {purpose: CallCount(calls=1, usage=Usage(input_tokens=5, output_tokens=1),
                                                               cost_usd=0.5)}


def test_a_summary_asked_of_a_frameworks_model_is_charged_as_compaction(tmp_path: Path) -> None:
    """Inside another framework (nova.integrations) the summary goes through the framework's model: it is
    still a call Nova makes, charged to the session beside the framework's own calls."""
    from nova.integrations._engine import ContextEngine, summarizer_choice
    from nova.integrations._mirror import Mirror
    from nova.model import ModelResponse

    from .integrations.test_engine import _Codec

    session = Session.create(tmp_path / "home", provider="langchain", model=PRICED)
    summarizer, provider = summarizer_choice("model", framework="langchain", model=PRICED)
    assert provider is not None
    asked: list[ModelRequest] = []

    def framework_model(request: ModelRequest) -> ModelResponse:
        asked.append(request)
        return ModelResponse(message=Message.assistant("## Task\nKeep the ports closed."), usage=USAGE["compaction"],
                             model=PRICED)

    provider.bind(framework_model)
    engine = ContextEngine(framework="langchain", window=8_000, session=session, summarizer=summarizer, model=PRICED)
    mirror: Mirror[str] = Mirror(engine, _Codec())
    history: list[str] = []
    for turn in range(12):
        history.append(f"u:request {turn}: keep the port 80{turn} closed")
        for step in range(4):
            history += [f"c:{turn}-{step}", f"r:{turn}-{step}:" + f"line {step} of turn {turn} " * 60]
        mirror.follow(history)
        engine.prepare(system="", tools=[])
    session.close()
    assert asked, "no summary was asked of the framework's model"
    calls = read_meta(session.dir).calls
    assert calls["compaction"].calls == len(asked)
    assert calls["compaction"].usage == Usage(input_tokens=5_000 * len(asked), output_tokens=400 * len(asked))


def test_the_footer_names_what_ran_beside_the_turn() -> None:
    usage = Usage(input_tokens=10, output_tokens=2)
    tally: dict[CallPurpose, CallCount] = {"turn": CallCount(calls=3, usage=usage, cost_usd=None),
                                           "compaction": CallCount(calls=1, usage=usage, cost_usd=None)}
    assert calls_brief(tally) == "4 model calls: 3 turn, 1 summary"
    assert calls_brief({}) == ""
