"""The agent loop never crashes on model output, classifies provider errors and records what happened."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from nova import events as ev
from nova.agent.loop import Agent
from nova.agent.parts import ModelBinding, RunLimits, Toolbox
from nova.context.budget import ContextBudget
from nova.context.extensions import Extension, ViewRequest
from nova.errors import AuthError, ContextOverflow, Overloaded, QuotaExceeded, RateLimited
from nova.messages import Message, ToolResultPart, ToolUsePart
from nova.model import CallPurpose, Usage
from nova.sessions.link import SessionLink
from nova.sessions.recorder import BoundaryRecord, SessionRecorder
from nova.settings import CompactionConfig, PermissionsConfig
from nova.testing import InstantClock, ScriptedProvider, call, last_message, reply
from nova.tokens import TokenLedger, counter_for_model
from nova.tools import default_registry
from nova.tools.permissions import PermissionPolicy


class RecordingSink:
    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.events: list[tuple[str, Mapping[str, Any]]] = []
        self.flushes = 0
        self.costs: list[float | None] = []
        self.context_sizes: list[int] = []

    def record_message(self, message: Message, usage: Usage | None = None) -> None:
        self.messages.append(message)

    def record_event(self, name: str, data: Mapping[str, Any]) -> None:
        self.events.append((name, data))

    def add_cost(self, usage: Usage, cost_usd: float | None, purpose: CallPurpose = "turn", *,
                 calls: int = 1) -> None:
        self.costs.append(cost_usd)

    def note_context_size(self, tokens: int) -> None:
        self.context_sizes.append(tokens)

    def flush(self) -> None:
        self.flushes += 1

    def update_message_content(self, message_id: str, message: Message) -> None:
        self.events.append(("message_content_updated", {"message_id": message_id}))

    def record_compact_boundary(self, boundary: BoundaryRecord) -> str:
        self.events.append(("compact_boundary", {"covers": boundary.covers}))
        return boundary.id


BUDGET = ContextBudget.derive(CompactionConfig(), 200_000)


def make_agent(tmp_path: Path, provider: ScriptedProvider, *, yes: bool = True,
               permissions: PermissionsConfig | None = None, session: SessionRecorder | None = None,
               max_steps: int = 50, clock: InstantClock | None = None, **kw: Any) -> tuple[Agent, list[ev.Event]]:
    seen: list[ev.Event] = []
    bus = ev.EventBus()
    bus.subscribe(seen.append)
    agent = Agent(
        model=ModelBinding(provider=provider, name="claude-sonnet-4-5"),
        toolbox=Toolbox(tools=default_registry(), cwd=tmp_path,
                        policy=PermissionPolicy(permissions or PermissionsConfig(), interactive=False, yes=yes)),
        budget=BUDGET,
        ledger=TokenLedger(counter_for_model("claude-sonnet-4-5")),
        session=SessionLink(recorder=session, bus=bus),
        limits=RunLimits(max_steps=max_steps),
        clock=clock or InstantClock(),
        **kw,
    )
    return agent, seen


def results_of(agent: Agent) -> list[ToolResultPart]:
    return [r for m in agent.history for r in m.tool_results()]


def assert_paired(history: list[Message]) -> None:
    for i, message in enumerate(history):
        uses = {u.id for u in message.tool_uses()}
        if uses:
            answered = [r.tool_use_id for r in history[i + 1].tool_results()]
            assert sorted(answered) == sorted(uses)


def test_tool_loop_runs_real_tools_and_ends_on_text(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("alpha\nbeta\n")
    provider = ScriptedProvider([
        reply("Reading.", [call("read_file", path="notes.txt")]),
        reply("It says alpha and beta."),
    ])
    agent, seen = make_agent(tmp_path, provider)
    result = agent.run_turn("what is in notes.txt?")
    assert result.text == "It says alpha and beta."
    assert result.steps == 2 and result.stop_reason == "end_turn"
    [tool_result] = results_of(agent)
    assert "alpha" in tool_result.content and not tool_result.is_error
    # The second request carried the tool result back to the model.
    assert last_message(provider.requests[1]).tool_results()[0].content == tool_result.content
    types = [e.type for e in seen]
    assert types[0] == "turn_started" and types[-1] == "turn_finished"
    assert "tool_call_started" in types and "tool_call_finished" in types
    assert_paired(agent.history)


def test_unknown_tool_comes_back_as_error_result(tmp_path: Path) -> None:
    provider = ScriptedProvider([reply("", [call("teleport", where="mars")]), reply("ok")])
    agent, _ = make_agent(tmp_path, provider)
    agent.run_turn("go")
    [result] = results_of(agent)
    assert result.is_error and "unknown tool 'teleport'" in result.content and "read_file" in result.content


def test_arguments_that_are_not_json_come_back_as_error_result(tmp_path: Path) -> None:
    provider = ScriptedProvider([reply("", raw_tool_calls=[("c1", "bash", '{"command": "ls"')]), reply("ok")])
    agent, _ = make_agent(tmp_path, provider)
    agent.run_turn("go")
    [result] = results_of(agent)
    assert result.tool_use_id == "c1" and result.is_error and "not a valid JSON object" in result.content


def test_missing_required_argument_is_an_error_result(tmp_path: Path) -> None:
    provider = ScriptedProvider([reply("", [call("read_file")]), reply("ok")])
    agent, _ = make_agent(tmp_path, provider)
    agent.run_turn("go")
    [result] = results_of(agent)
    assert result.is_error and "path" in result.content


def test_a_tool_that_raises_does_not_end_the_session(tmp_path: Path) -> None:
    class Exploding:
        name = "explode"
        description = "always fails"
        input_schema: Mapping[str, Any] = {"type": "object", "properties": {}}
        read_only = True

        def run(self, input: Mapping[str, Any], ctx: Any) -> Any:
            raise RuntimeError("kaboom")

    provider = ScriptedProvider([reply("", [call("explode")]), reply("recovered")])
    agent, _ = make_agent(tmp_path, provider)
    agent.tools.register(Exploding())
    result = agent.run_turn("go")
    assert result.text == "recovered"
    [tool_result] = results_of(agent)
    assert tool_result.is_error and "RuntimeError: kaboom" in tool_result.content


def test_parallel_calls_are_all_answered_in_one_message(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("A")
    provider = ScriptedProvider([
        reply("", [call("read_file", path="a.txt"), call("glob", pattern="*.txt"), call("nope")]),
        reply("done"),
    ])
    agent, _ = make_agent(tmp_path, provider)
    agent.run_turn("go")
    assert_paired(agent.history)
    assert len(agent.history[-2].tool_results()) == 3


def test_denied_bash_never_starts_a_process_and_is_recorded(tmp_path: Path) -> None:
    marker = tmp_path / "pushed"
    provider = ScriptedProvider([reply("", [call("bash", command=f"git push origin main; touch {marker}")]),
                                 reply("ok")])
    sink = RecordingSink()
    agent, seen = make_agent(tmp_path, provider, permissions=PermissionsConfig(deny=("bash(git push*)",)),
                             session=sink)
    agent.run_turn("ship it")
    [result] = results_of(agent)
    assert result.is_error and "denied" in result.content.lower()
    assert not marker.exists()
    assert any(isinstance(e, ev.PermissionDenied) for e in seen)
    assert any(name == "permission_denied" for name, _ in sink.events)


def test_headless_without_approval_denies_writes(tmp_path: Path) -> None:
    provider = ScriptedProvider([reply("", [call("write_file", path="x.txt", content="x")]), reply("ok")])
    agent, _ = make_agent(tmp_path, provider, yes=False)
    agent.run_turn("write")
    [result] = results_of(agent)
    assert result.is_error and not (tmp_path / "x.txt").exists()


def test_rate_limit_and_overload_are_retried(tmp_path: Path) -> None:
    clock = InstantClock()
    provider = ScriptedProvider([RateLimited("slow down", retry_after=2.0), Overloaded("busy"), reply("fine")])
    agent, _ = make_agent(tmp_path, provider, clock=clock)
    assert agent.run_turn("hi").text == "fine"
    # The provider's retry-after first, then the exponential back-off of the second attempt.
    assert clock.waits == [2.0, 4.0]


@pytest.mark.parametrize("error", [QuotaExceeded("no money"), AuthError("bad key")])
def test_non_retryable_errors_surface_once(tmp_path: Path, error: Exception) -> None:
    provider = ScriptedProvider([error, reply("never")])
    agent, seen = make_agent(tmp_path, provider)
    with pytest.raises(type(error)):
        agent.run_turn("hi")
    assert len(provider.requests) == 1
    assert any(isinstance(e, ev.ErrorEvent) for e in seen)


def test_overflow_is_handed_to_the_hook_once_per_request(tmp_path: Path) -> None:
    shrinks: list[ViewRequest] = []

    class KeepLast(Extension):
        def on_overflow(self, *, request: ViewRequest) -> list[Message]:
            shrinks.append(request)
            return list(request.history[-1:])

    provider = ScriptedProvider([ContextOverflow("prompt is too long"), reply("fits now")])
    agent, _ = make_agent(tmp_path, provider, history=[Message.user("old " * 100), Message.assistant("x")],
                          extensions=[KeepLast()])
    assert agent.run_turn("new").text == "fits now"
    assert len(shrinks) == 1 and shrinks[0].reason == "overflow"
    assert len(provider.requests[1].messages) == 1

    provider.enqueue(ContextOverflow("too long"), ContextOverflow("still too long"))
    with pytest.raises(ContextOverflow) as info:
        agent.run_turn("again")
    assert len(shrinks) == 2  # one forced compaction for this request, then the error
    assert "even after compacting" in str(info.value) and "system prompt and tool schemas" in str(info.value)


def test_max_steps_stops_a_runaway_model(tmp_path: Path) -> None:
    provider = ScriptedProvider([reply("", [call("glob", pattern="*")]) for _ in range(5)])
    agent, _ = make_agent(tmp_path, provider, max_steps=3)
    result = agent.run_turn("loop forever")
    assert result.stop_reason == "max_steps" and result.steps == 3
    assert_paired(agent.history)


def test_cancel_answers_pending_calls_as_interrupted(tmp_path: Path) -> None:
    provider = ScriptedProvider([reply("", [call("glob", pattern="*"), call("glob", pattern="*")])])

    class CancelAfterFirst(Extension):
        def process_result(self, *, call: ToolUsePart, result: ToolResultPart) -> ToolResultPart:
            agent.cancel.set()
            return result

    agent, _ = make_agent(tmp_path, provider, extensions=[CancelAfterFirst()])
    result = agent.run_turn("go")
    assert result.stop_reason == "cancelled"
    results = results_of(agent)
    assert len(results) == 2 and "interrupted" in results[1].content
    assert_paired(agent.history)


def test_session_sink_gets_every_message_and_a_flush(tmp_path: Path) -> None:
    sink = RecordingSink()
    provider = ScriptedProvider([reply("", [call("glob", pattern="*")]), reply("done")])
    agent, _ = make_agent(tmp_path, provider, session=sink)
    agent.run_turn("go")
    assert [m.role for m in sink.messages] == ["user", "assistant", "user", "assistant"]
    assert sink.flushes == 1
    assert sink.context_sizes == [agent.context_status().used]  # the turn's last figure, once
    assert "usage" in sink.messages[1].metadata
    assert len(sink.costs) == 2  # one per model call


def test_cost_is_summed_from_usage(tmp_path: Path) -> None:
    usage = Usage(input_tokens=1_000_000, output_tokens=0)
    provider = ScriptedProvider([reply("a", usage=usage)])
    agent, _ = make_agent(tmp_path, provider)
    result = agent.run_turn("hi")
    assert result.cost_usd == pytest.approx(3.0)  # claude-sonnet-4-5 input price per million


def test_a_view_that_breaks_tool_pairing_is_repaired_before_it_is_sent(tmp_path: Path) -> None:
    """Whatever a context layer does wrong, the provider never gets an unanswered tool_use."""
    from nova.history.invariants import check_tool_pairing

    class LoseTheResults(Extension):  # a buggy context layer
        def prepare_view(self, *, request: ViewRequest) -> list[Message]:
            return [m for m in request.history if not m.tool_results()]

    sink = RecordingSink()
    provider = ScriptedProvider([reply("", [call("glob", pattern="*")]), reply("done")])
    agent, _ = make_agent(tmp_path, provider, extensions=[LoseTheResults()], session=sink)
    assert agent.run_turn("go").text == "done"
    sent = provider.requests[1].messages
    assert check_tool_pairing(sent) == []
    assert any(r.is_error for m in sent for r in m.tool_results())  # answered as interrupted
    assert any(name == "view_repaired" for name, _ in sink.events)
