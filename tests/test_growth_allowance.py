"""The token ledger learns, per session, what each call grows beyond its estimate (nova.tokens.allowance)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from nova.agent.loop import Agent
from nova.agent.parts import ModelBinding, Toolbox
from nova.context.budget import ContextBudget
from nova.messages import Message, TextPart, ToolResultPart, ToolUsePart
from nova.model import ModelRequest, ModelResponse, Usage
from nova.providers.scripted import FunctionProvider
from nova.sessions.link import SessionLink
from nova.settings import CompactionConfig, PermissionsConfig
from nova.testing import InstantClock
from nova.tokens import (
    TokenLedger,
    count_message,
    count_messages,
    count_system,
    count_tools,
    counter_for_model,
)
from nova.tokens.allowance import WINDOW, GrowthAllowance
from nova.tokens.ledger import GROWTH_METADATA
from nova.tools import default_registry
from nova.tools.permissions import PermissionPolicy

HIDDEN = 150  # what a harness adds to every request without recording it


def _step(index: int) -> tuple[Message, Message]:
    """One tool step: the reply calling a tool, and the result that came back."""
    use = ToolUsePart(f"call{index}", "bash", {"command": f"ls dir{index}"})
    reply = Message(role="assistant", parts=(TextPart(f"Looking at dir{index}."), use), id=f"reply{index}")
    result = Message(role="user", parts=(ToolResultPart(f"call{index}", f"file{index}.py\n" * (index + 3)),),
                     id=f"result{index}")
    return reply, result


def _session(ledger: TokenLedger, steps: int, hidden: Sequence[int]) -> list[tuple[int, int]]:
    """Drive `ledger` through a session whose every call reads what it was sent plus `hidden[k]` more
    (accumulated: the harness's content stays in context). Returns (estimate made before call k, real
    input of call k) for every call after the first."""
    history: list[Message] = [Message(role="user", parts=(TextPart("Fix the failing test."),), id="task")]
    real = count_messages(history, ledger.counter) + 1_000  # system prompt and tools, as a provider counts
    ledger.record("start", Usage(input_tokens=1))  # an anchor no request contains: learns nothing
    pairs: list[tuple[int, int]] = []
    for k in range(steps):
        sent = list(history)
        if k:
            estimated = ledger.estimate(sent)
            anchor = ledger.anchor
            assert anchor is not None
            real = anchor.total + sum(count_message(m, ledger.counter) for m in sent[_index(sent, anchor.message_id) + 1:])
            real += hidden[k]
            pairs.append((estimated, real))
        reply, result = _step(k)
        ledger.record(reply.id, Usage(input_tokens=real, output_tokens=count_message(reply, ledger.counter)), sent=sent)
        history += [reply, result]
    return pairs


def _index(messages: Sequence[Message], message_id: str) -> int:
    return next(i for i, m in enumerate(messages) if m.id == message_id)


def test_allowance_converges_on_a_constant_hidden_overhead() -> None:
    ledger = TokenLedger()
    pairs = _session(ledger, 8, [HIDDEN] * 8)
    # The first call after the first answer cannot know it yet (strictly online) ...
    assert pairs[0][1] - pairs[0][0] == HIDDEN
    # ... the next one can, and from then on every estimate is the real figure.
    assert ledger.growth.tokens == HIDDEN
    assert all(estimated == real for estimated, real in pairs[1:])


def test_allowance_follows_a_change_only_after_seeing_it() -> None:
    ledger = TokenLedger()
    hidden = [HIDDEN] * 4 + [300] * 8
    pairs = _session(ledger, len(hidden), hidden)
    # Each estimate uses only earlier calls: the call where the overhead doubles is estimated at 150.
    assert pairs[3][1] - pairs[3][0] == 300 - HIDDEN
    # The lower quartile of five moves once most of the window has seen the new figure.
    assert ledger.growth.tokens == 300 and pairs[-1][0] == pairs[-1][1]


def test_allowance_never_goes_negative() -> None:
    # A profile that over-counts this session: the real growth is 80 tokens a step below the estimate.
    ledger = TokenLedger()
    pairs = _session(ledger, 8, [-80] * 8)
    assert ledger.growth.samples and all(s == -80 for s in ledger.growth.samples)
    assert ledger.growth.tokens == 0
    # The estimate stays the static one: real + 80, never below what the profile counts.
    assert all(estimated - real == 80 for estimated, real in pairs)
    assert GrowthAllowance([-500, -3, -1], prior=-20).tokens == 0


def test_one_odd_step_does_not_move_it() -> None:
    allowance = GrowthAllowance([HIDDEN] * WINDOW)
    allowance.observe(-2_000)  # a screenshot the profile over-counted
    assert allowance.tokens == HIDDEN
    allowance.observe(5_000)  # a backend that counted more for one call
    assert allowance.tokens == HIDDEN


def test_prior_stands_until_the_first_answer() -> None:
    allowance = GrowthAllowance(prior=100)
    assert allowance.tokens == 100
    allowance.observe(40)
    assert allowance.tokens == 40


def test_recording_the_same_reply_twice_learns_once() -> None:
    # The loop and the context controller both record each reply.
    ledger = TokenLedger()
    task = Message(role="user", parts=(TextPart("go"),), id="task")
    reply, result = _step(0)
    ledger.record(reply.id, Usage(input_tokens=500, output_tokens=20), sent=[task])
    sent = [task, reply, result]
    second = Usage(input_tokens=520 + count_message(result, ledger.counter) + HIDDEN, output_tokens=10)
    ledger.record("reply1", second, sent=sent)
    ledger.record("reply1", second, sent=sent)
    assert ledger.growth.samples == (HIDDEN,)


def test_a_call_that_shrank_or_follows_a_clear_teaches_nothing() -> None:
    ledger = TokenLedger()
    task = Message(role="user", parts=(TextPart("go"),), id="task")
    reply, result = _step(0)
    ledger.record(reply.id, Usage(input_tokens=5_000, output_tokens=20), sent=[task])
    # Smaller than the call before: something was cut that the ledger was not told of.
    ledger.record("reply1", Usage(input_tokens=1_000), sent=[task, reply, result])
    assert ledger.growth.samples == ()
    ledger.growth.observe(HIDDEN)
    ledger.clear()  # a compaction: the next figure pairs with nothing, what was learned stays
    ledger.record("reply2", Usage(input_tokens=9_000), sent=[task, reply, result])
    assert ledger.growth.samples == (HIDDEN,) and ledger.growth.tokens == HIDDEN
    # Without an anchor (after the clear, before an answer) the estimate is a full one: no allowance.
    ledger.clear()
    assert ledger.estimate([task]) == count_message(task, ledger.counter)


def test_each_session_starts_from_nothing() -> None:
    first = TokenLedger()
    _session(first, 6, [HIDDEN] * 6)
    assert first.growth.tokens == HIDDEN
    second = TokenLedger()
    assert second.growth.tokens == 0 and second.growth.samples == ()


# -- through the agent loop ---------------------------------------------------------------------------


def _agent(tmp_path: Path, provider: FunctionProvider) -> Agent:
    return Agent(model=ModelBinding(provider=provider, name="claude-sonnet-4-5"),
                 toolbox=Toolbox(tools=default_registry(), cwd=tmp_path,
                                 policy=PermissionPolicy(PermissionsConfig(), interactive=False, yes=True)),
                 budget=ContextBudget.derive(CompactionConfig(), 200_000),
                 ledger=TokenLedger(counter_for_model("claude-sonnet-4-5")), session=SessionLink(),
                 clock=InstantClock())


def _harness_provider(steps: int, ledger: list[TokenLedger]) -> tuple[FunctionProvider, list[tuple[int, int]]]:
    """A model that lists files `steps` times, then answers. Its provider reports what the request holds
    (counted as Nova counts it) plus HIDDEN tokens a call that no message carries, and notes beside it
    what the agent's ledger (`ledger[0]`, once set) estimated for that request before it was answered."""
    seen: list[tuple[int, int]] = []

    def answer(request: ModelRequest) -> ModelResponse:
        count = counter_for_model(request.model)
        calls = len(seen)
        real = (count_system(request.system, count) + count_tools(request.tools, count)
                + count_messages(request.messages, count) + HIDDEN * (calls + 1))
        estimated = ledger[0].estimate(request.messages, request.system, request.tools) if ledger else 0
        seen.append((estimated, real))
        done = calls >= steps
        part = TextPart("done") if done else ToolUsePart(f"c{calls}", "glob", {"pattern": "*"})
        message = Message(role="assistant", parts=(part,))
        usage = Usage(input_tokens=real, output_tokens=count_message(message, count))
        return ModelResponse(message=message, usage=usage, stop_reason="end_turn" if done else "tool_use",
                             model=request.model)

    return FunctionProvider(answer), seen


def test_the_loop_learns_the_hidden_overhead_and_estimates_the_next_call(tmp_path: Path) -> None:
    holder: list[TokenLedger] = []
    provider, seen = _harness_provider(4, holder)
    agent = _agent(tmp_path, provider)
    holder.append(agent.ledger)
    agent.run_turn("list the files")
    assert agent.ledger.growth.tokens == HIDDEN
    misses = [real - estimated for estimated, real in seen]
    # Call 0: no anchor yet (a full estimate, which cannot see what no message holds). Call 1: anchored,
    # nothing learned yet (the allowance is learned only from calls already answered). From call 2 on
    # the estimate is what the provider reports.
    assert misses[0] >= HIDDEN and misses[1] == HIDDEN and misses[2:] == [0] * (len(misses) - 2)
    agent.run_turn("thanks")  # the next turn's first call: the user's message is the step's growth
    assert seen[-1][0] == seen[-1][1]


def test_a_resumed_session_relearns_from_its_recorded_usage(tmp_path: Path) -> None:
    provider, _ = _harness_provider(5, [])
    agent = _agent(tmp_path, provider)
    agent.run_turn("list the files")
    learned = agent.ledger.growth.samples
    assert learned and agent.ledger.growth.tokens == HIDDEN
    # A resume builds a new ledger from the recorded history (each reply carries its usage).
    resumed = TokenLedger(agent.ledger.counter)
    resumed.learn_from(agent.history)
    assert resumed.growth.samples == learned
    assert resumed.anchor is None  # a recorded figure may predate a compaction: the first estimate is full


def test_build_agent_resumes_what_the_session_learned(tmp_path: Path, nova_home: Path) -> None:
    from nova.agent.builder import AgentOptions, build_agent
    from nova.settings import load_settings

    provider, _ = _harness_provider(3, [])
    first = _agent(tmp_path, provider)
    first.run_turn("list the files")
    settings = load_settings(home=nova_home, overrides={"provider": "demo", "model": "claude-sonnet-4-5"})
    resumed = build_agent(settings, provider, AgentOptions(cwd=tmp_path), history=first.history)
    try:
        assert resumed.ledger.growth.samples == first.ledger.growth.samples
        fresh = build_agent(settings, provider, AgentOptions(cwd=tmp_path))
        try:
            assert fresh.ledger.growth.samples == () and fresh.ledger.growth.tokens == 0
        finally:
            fresh.close()
    finally:
        resumed.close()


def test_resume_takes_the_samples_the_latest_reply_carries(tmp_path: Path) -> None:
    # The loop stores what was learned on each reply: a resume takes exactly that (the live session
    # learned from the compiled views it sent, which the recorded history cannot show) ...
    provider, _ = _harness_provider(3, [])
    agent = _agent(tmp_path, provider)
    agent.run_turn("list the files")
    replies = [m for m in agent.history if m.role == "assistant"]
    assert replies[-1].metadata[GROWTH_METADATA] == list(agent.ledger.growth.samples)
    history = [*agent.history[:-1], replies[-1].with_metadata(**{GROWTH_METADATA: [7, 9]})]
    resumed = TokenLedger(agent.ledger.counter)
    resumed.resume(history)
    assert resumed.growth.samples == (7, 9)
    # ... and relearns from the recorded usage when the replies carry none (an imported session).
    plain = [m.with_metadata(**{GROWTH_METADATA: None}) if m.role == "assistant" else m for m in agent.history]
    imported = TokenLedger(agent.ledger.counter)
    imported.resume(plain)
    assert imported.growth.samples == agent.ledger.growth.samples
