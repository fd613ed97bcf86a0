"""Fault tests (CMP-8, CMP-9): overflow recovery, errors that are not overflow, the circuit breaker."""

from __future__ import annotations

from pathlib import Path

import pytest

from nova import events as ev
from nova.context.summarize import SummaryRequest
from nova.errors import ContextOverflow, Overloaded, QuotaExceeded, RateLimited
from nova.history.invariants import check_tool_pairing
from nova.testing import ScriptedProvider, last_message, reply

from .helpers import history, make_agent, make_controller, of_type


def test_overflow_then_success_forces_one_compaction_and_replays_the_turn(tmp_path: Path) -> None:
    # A big window: the estimate says everything fits, so only the provider's rejection can trigger.
    controller, seen = make_controller(tmp_path, window=1_000_000)
    provider = ScriptedProvider([ContextOverflow("prompt is too long: 210000 tokens > 200000"), reply("done")])
    agent = make_agent(tmp_path, provider, controller, history(20))
    result = agent.run_turn("continue")
    assert result.text == "done"
    starts = of_type(seen, ev.CompactionStart)
    assert [s.reason for s in starts] == ["overflow"]
    assert controller.stats.compactions == 1
    assert len(provider.requests) == 2
    first, second = provider.requests
    assert len(second.messages) < len(first.messages)
    assert second.messages[1].has("summary") and second.messages[0] == first.messages[0]
    assert last_message(second).text == "continue"  # the same turn, replayed
    assert not check_tool_pairing(list(second.messages))


def test_overflow_twice_is_a_clear_error_after_one_compaction(tmp_path: Path) -> None:
    controller, seen = make_controller(tmp_path, window=1_000_000)
    provider = ScriptedProvider([ContextOverflow("prompt is too long"), ContextOverflow("prompt is too long")])
    agent = make_agent(tmp_path, provider, controller, history(20))
    with pytest.raises(ContextOverflow):
        agent.run_turn("continue")
    assert controller.stats.compactions == 1
    assert len(of_type(seen, ev.CompactionStart)) == 1
    assert of_type(seen, ev.ErrorEvent)[-1].kind == "ContextOverflow"


@pytest.mark.parametrize("error", [
    RateLimited("429 rate limited", status=429),
    Overloaded("529 overloaded", status=529),
])
def test_retryable_errors_never_compact(tmp_path: Path, error: Exception) -> None:
    controller, seen = make_controller(tmp_path, window=1_000_000)
    provider = ScriptedProvider([error, reply("done")])
    agent = make_agent(tmp_path, provider, controller, history(20))
    assert agent.run_turn("go").text == "done"
    assert controller.stats.compactions == 0
    assert not of_type(seen, ev.CompactionStart)
    assert len(provider.requests[1].messages) == len(provider.requests[0].messages)


def test_quota_is_not_overflow(tmp_path: Path) -> None:
    controller, seen = make_controller(tmp_path, window=1_000_000)
    provider = ScriptedProvider([QuotaExceeded("insufficient_quota", status=429)])
    agent = make_agent(tmp_path, provider, controller, history(20))
    with pytest.raises(QuotaExceeded):
        agent.run_turn("go")
    assert controller.stats.compactions == 0
    assert not of_type(seen, ev.CompactionStart)


class FailingSummarizer:
    name = "failing"
    model_call = True  # stands for a model summary

    def __init__(self) -> None:
        self.calls = 0

    def summarize(self, request: SummaryRequest) -> str:
        self.calls += 1
        raise RuntimeError("model unreachable")


def test_breaker_opens_after_three_failures_layer1_runs_and_hard_trigger_forces(tmp_path: Path) -> None:
    failing = FailingSummarizer()
    controller, seen = make_controller(tmp_path, window=20000, summarizer=failing)
    # 10,000-token threshold; outputs under snip_max_chars (layer 1 cannot cut them) fill it.
    provider = ScriptedProvider([reply(f"ok {i}") for i in range(6)])
    agent = make_agent(tmp_path, provider, controller, history(30, output_chars=1200))
    assert controller.threshold <= controller.measure(agent.history) < controller.hard_line
    for i in range(3):
        agent.run_turn(f"turn {i}")
    assert failing.calls == 3
    assert controller.stats.breaker_open and controller.stats.breaker_trips == 1
    assert all(not e.ok for e in of_type(seen, ev.CompactionEnd))
    # Breaker open: a soft trigger no longer calls the summarizer, but layer 1 still cuts outputs.
    snips_before = controller.stats.snips
    agent.history.extend(history(3, output_chars=3000)[1:])
    assert controller.measure(agent.history) < controller.hard_line
    agent.run_turn("turn 3")
    assert failing.calls == 3
    assert controller.stats.snips > snips_before
    # Hard trigger: within hard_margin_tokens of the window, compaction is forced through the breaker.
    agent.history.extend(history(12, output_chars=1200)[1:])
    assert controller.measure(agent.history) >= controller.hard_line
    agent.run_turn("turn 4")
    assert failing.calls == 4
    assert controller.stats.breaker_trips == 1
    assert of_type(seen, ev.CompactionStart)[-1].reason == "hard"
    # Nothing was lost or mis-paired while failing.
    assert not check_tool_pairing(agent.history)
    assert not any(m.has("summary") for m in agent.history)


def test_failed_summary_changes_nothing(tmp_path: Path) -> None:
    failing = FailingSummarizer()
    controller, _ = make_controller(tmp_path, window=20000, summarizer=failing)
    prior = history(14, output_chars=1000)
    outcome_history = controller.compact_now(prior)
    assert [m.id for m in outcome_history] == [m.id for m in prior] or controller.stats.snips > 0
    assert controller.stats.compaction_failures == 1
    assert not any(m.has("summary") for m in outcome_history)


def test_only_context_overflow_counts_as_overflow() -> None:
    from nova.context.overflow import is_context_overflow, second_overflow_message

    assert is_context_overflow(ContextOverflow("prompt is too long"))
    for exc in (RateLimited("request too large for gpt-4 in organization ... per min", status=429),
                QuotaExceeded("insufficient_quota"), Overloaded("overloaded_error", status=529)):
        assert not is_context_overflow(exc)
    text = second_overflow_message(ContextOverflow("too long"), fixed_tokens=150_000, window=128_000)
    assert "150,000" in text and "system prompt" in text
