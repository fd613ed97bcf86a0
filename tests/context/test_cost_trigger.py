"""The cost side of the compaction trigger (nova.context.economy): below the soft line a compaction is
made when it pays for itself, never under the budget's cost floor; at the seeds' 200k window and above
the floor is bounded, so a long session compacts before the soft line when that is cheaper."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

from nova import events as ev
from nova.context.budget import COST_FLOOR_MOST, COST_FLOOR_SHARE, COST_SUMMARY_LEAST, ContextBudget
from nova.context.controller import ContextController, FixedPrompt
from nova.context.economy import CachePrices, cost_line, prices_for
from nova.context.extensions import ViewRequest
from nova.messages import Message, ToolResultPart, ToolUsePart
from nova.model import Usage
from nova.sessions.link import SessionLink
from nova.settings import CompactionConfig
from nova.tokens import MemoCounter, TokenLedger
from nova.tokens.counters import CL100K_PROFILE, HeuristicCounter

COUNTER = HeuristicCounter(CL100K_PROFILE)


def test_cost_line_moves_with_what_a_compaction_costs() -> None:
    prices = CachePrices()
    base = cost_line(after=8_000, growth=800, summary_tokens=1_000, prices=prices)
    assert base is not None and base > 8_000 + 800
    # A larger view left behind (a long task statement), dearer writes, slower growth: compact later.
    assert cost_line(after=16_000, growth=800, summary_tokens=1_000, prices=prices) > base
    assert cost_line(after=8_000, growth=800, summary_tokens=1_000,
                     prices=CachePrices(read=0.1, write=2.0, output=5.0)) > base
    assert cost_line(after=8_000, growth=200, summary_tokens=1_000, prices=prices) < base  # line - after shrinks
    assert cost_line(after=8_000, growth=0, summary_tokens=1_000, prices=prices) is None


def test_prices_come_from_the_model_table() -> None:
    openai = prices_for("gpt-5")
    assert openai.write == 1.0 and abs(openai.read - 0.1) < 1e-9  # automatic caching: writes cost nothing extra
    claude = prices_for("claude-sonnet-4-5")
    assert abs(claude.write - 1.25) < 1e-9
    assert prices_for("no-such-model") == CachePrices()


def test_cost_floor_is_a_share_of_the_threshold_and_is_bounded() -> None:
    config = CompactionConfig()
    for window in (200_000, 1_000_000):
        budget = ContextBudget.derive(config, window)
        assert budget.cost_floor == COST_FLOOR_MOST < budget.threshold
    for window in (32_000, 64_000):
        small = ContextBudget.derive(config, window)
        assert small.cost_floor == int(small.threshold * COST_FLOOR_SHARE) < COST_FLOOR_MOST


def test_a_cost_compaction_folds_in_proportion_but_keeps_the_structured_summary() -> None:
    budget = ContextBudget.derive(CompactionConfig(), 64_000)
    early = budget.for_cost(budget.threshold // 4)
    assert early.keep_tokens < budget.keep_tokens and early.summary_cap < budget.summary_cap
    assert early.summary_cap >= min(budget.summary_cap, COST_SUMMARY_LEAST)
    assert budget.for_cost(budget.threshold // 10) == early  # never under half the usual sizes
    small = ContextBudget.derive(CompactionConfig(), 32_000)
    assert small.for_cost(1_000).summary_cap == small.summary_cap  # already at the least


def _grow(window: int, calls: int, tmp: Path) -> tuple[list[int], list[str], ContextController]:
    """A run that reads a 1,500-token file on every call; returns the view sent at each call and the
    reasons of the compactions that started."""
    budget = ContextBudget.derive(CompactionConfig(), window)
    bus = ev.EventBus()
    reasons: list[str] = []
    bus.subscribe(lambda e: reasons.append(e.reason) if isinstance(e, ev.CompactionStart) else None)
    controller = ContextController(budget=budget, ledger=TokenLedger(MemoCounter(COUNTER)),
                                   session=SessionLink(dir=tmp / "session", bus=bus),
                                   prompt=FixedPrompt(system="You are a coding agent."), prices=CachePrices())
    history: list[Message] = [Message.user("Fix the failing date parser in utils/dates.py; keep the API.")]
    sizes: list[int] = []
    for i in range(calls):
        history = controller.prepare_view(request=ViewRequest(history=history, system=controller.system))
        sizes.append(controller.last_used)
        use = ToolUsePart(f"t{i}", "read_file", {"path": f"src/mod{i}.py"})
        body = "\n".join(f"line {i}.{k}: value = compute_{k}(x, y)  # step {k}" for k in range(150))
        history = [*history, Message(role="assistant", parts=(use,)),
                   Message(role="user", parts=(ToolResultPart(f"t{i}", body),))]
    return sizes, reasons, controller


def test_a_mid_size_window_compacts_for_cost_before_the_soft_line(tmp_path: Path) -> None:
    sizes, reasons, controller = _grow(64_000, 60, tmp_path)
    assert "cost" in reasons
    assert max(sizes) < controller.threshold  # it never had to wait for the soft line
    assert controller.stats.compactions >= 1


def test_the_reference_window_compacts_for_cost_before_the_soft_line(tmp_path: Path) -> None:
    sizes, reasons, controller = _grow(200_000, 60, tmp_path)
    assert "cost" in reasons and controller.stats.compactions >= 1
    assert max(sizes) < controller.threshold // 2  # it never carried a view near the soft line


def test_no_compaction_for_cost_under_the_floor(tmp_path: Path) -> None:
    sizes, reasons, controller = _grow(200_000, 8, tmp_path)
    assert max(sizes) < COST_FLOOR_MOST
    assert "cost" not in reasons and controller.stats.compactions == 0


def _grow_with(config: CompactionConfig, window: int, calls: int, tmp: Path, *, gap_s: float = 1.0
               ) -> tuple[list[int], list[str], ContextController]:
    """As `_grow`, with a compaction config, and a reply after every call `gap_s` seconds before the next
    tool result (the cost schedule's cache clock)."""
    budget = ContextBudget.derive(config, window)
    bus = ev.EventBus()
    reasons: list[str] = []
    bus.subscribe(lambda e: reasons.append(e.reason) if isinstance(e, ev.CompactionStart) else None)
    controller = ContextController(budget=budget, ledger=TokenLedger(MemoCounter(COUNTER)), config=config,
                                   session=SessionLink(dir=tmp / "session", bus=bus),
                                   prompt=FixedPrompt(system="You are a coding agent."),
                                   prices=prices_for("claude-sonnet-4-5"))
    history: list[Message] = [Message.user("Fix the failing date parser in utils/dates.py; keep the API.",
                                           created_at=1000.0)]
    sizes: list[int] = []
    clock = 1000.0
    for i in range(calls):
        history = controller.prepare_view(request=ViewRequest(history=history, system=controller.system))
        sizes.append(controller.last_used)
        use = ToolUsePart(f"t{i}", "read_file", {"path": f"src/mod{i}.py"})
        body = "\n".join(f"line {i}.{k}: value = compute_{k}(x, y)  # step {k}" for k in range(150))
        reply = Message(role="assistant", parts=(use,), created_at=clock + 1)
        controller.on_usage(message=reply, usage=Usage())
        clock += 1 + gap_s
        history = [*history, reply, Message(role="user", parts=(ToolResultPart(f"t{i}", body),), created_at=clock)]
    return sizes, reasons, controller


def test_the_cost_schedule_compacts_before_the_soft_line_and_never_past_the_hard_line(tmp_path: Path) -> None:
    config = CompactionConfig(schedule="cost")
    sizes, reasons, controller = _grow_with(config, 64_000, 60, tmp_path)
    assert "cost" in reasons and max(sizes) < controller.hard_line
    assert all(r.break_even_calls is not None for _, r in controller.receipts)


def test_the_cost_schedule_keeps_the_quality_floor(tmp_path: Path) -> None:
    # Under the cost floor no compaction is made for cost alone, whatever the schedule says.
    sizes, reasons, controller = _grow_with(CompactionConfig(schedule="cost"), 200_000, 8, tmp_path)
    assert max(sizes) < COST_FLOOR_MOST
    assert "cost" not in reasons and controller.stats.compactions == 0


def test_a_cold_cache_is_a_discount(tmp_path: Path) -> None:
    # Extractive summary (no call); 40,000 -> 10,000 tokens at Sonnet prices: the rewrite costs
    # 10,000 * 1.15 = 11,500 units, each later call saves 30,000 * 0.1 = 3,000. With one call expected it
    # does not pay while the cache is warm, and does once the TTL has passed (nothing left to rewrite).
    config = CompactionConfig(schedule="cost", expected_calls=1)
    controller = ContextController(budget=ContextBudget.derive(config, 64_000), config=config,
                                   ledger=TokenLedger(MemoCounter(COUNTER)),
                                   session=SessionLink(dir=tmp_path / "s", bus=ev.EventBus()),
                                   prices=prices_for("claude-sonnet-4-5"))
    controller.on_usage(message=Message.assistant("ok", created_at=1000.0), usage=Usage())
    decide = lambda at: controller._pays_now([Message.user("next", created_at=at)], 40_000,  # noqa: E731
                                             after=10_000, growth=1_000.0, summary_tokens=2_000)
    assert not decide(1000.0 + 299)
    assert decide(1000.0 + 301)
    # With the session's own history (12 calls so far, 12 expected) it pays warm too.
    controller.stats.calls = 12
    assert decide(1000.0 + 10)


def test_schedule_is_read_and_checked() -> None:
    import pytest

    from nova.errors import ConfigError
    from nova.settings import _parse_compaction_config

    parsed = _parse_compaction_config({"schedule": "cost", "expected_calls": 7, "cache_ttl_seconds": 3600})
    assert (parsed.schedule, parsed.expected_calls, parsed.cache_ttl_seconds) == ("cost", 7, 3600)
    assert _parse_compaction_config({}).schedule == "cost"
    with pytest.raises(ConfigError, match="schedule"):
        _parse_compaction_config({"schedule": "sometimes"})


def test_a_run_expected_to_reach_the_soft_line_compacts_now(tmp_path: Path) -> None:
    # 40,000 -> 10,000 tokens at 64k (soft line ~56k), growing 2,000 a call: the soft line is 8 calls away.
    # One call expected: carrying the view one more call costs less than the compaction, so not now. Thirty
    # calls so far (as many expected): the soft line comes first and compacts anyway; compacting now pays
    # within one cycle (23 calls from 10,000 back to the soft line, 3,000 saved on each): now.
    config = CompactionConfig(schedule="cost", expected_calls=1)
    controller = ContextController(budget=ContextBudget.derive(config, 64_000), config=config,
                                   ledger=TokenLedger(MemoCounter(COUNTER)),
                                   session=SessionLink(dir=tmp_path / "s", bus=ev.EventBus()),
                                   prices=prices_for("claude-sonnet-4-5"))
    controller.on_usage(message=Message.assistant("ok", created_at=1000.0), usage=Usage())
    decide = lambda: controller._pays_now([Message.user("next", created_at=1010.0)], 40_000,  # noqa: E731
                                          after=10_000, growth=2_000.0, summary_tokens=2_000)
    assert (controller.threshold - 40_000) // 2_000 < 30
    assert not decide()
    controller.stats.calls = 30
    assert decide()


class _Failing:
    """A summarizer that always fails, as a model returning nothing would."""

    name = "failing"
    model_call = True  # stands for a model summary

    def summarize(self, request: object) -> str:
        raise RuntimeError("the model returned an empty summary")


def test_a_failed_cost_compaction_waits_for_the_view_to_grow_by_the_floor(tmp_path: Path) -> None:
    # Each retry of a failed summary pays the summary call again for the same history: the cost schedule
    # tries again only once the view has grown by the cost floor (the soft line still compacts).
    config = CompactionConfig(schedule="cost", max_consecutive_failures=0)  # no breaker: only the wait
    budget = ContextBudget.derive(config, 200_000)
    controller = ContextController(budget=budget, ledger=TokenLedger(MemoCounter(COUNTER)), config=config,
                                   session=SessionLink(dir=tmp_path / "s", bus=ev.EventBus()),
                                   summarizer=_Failing(), prices=prices_for("claude-sonnet-4-5"))
    history: list[Message] = [Message.user("Fix the failing date parser in utils/dates.py; keep the API.")]
    failed_at: list[int] = []
    for i in range(60):
        failures = controller.stats.compaction_failures
        history = controller.prepare_view(request=ViewRequest(history=history, system=controller.system))
        if controller.stats.compaction_failures > failures:
            failed_at.append(controller.last_used)
        use = ToolUsePart(f"t{i}", "read_file", {"path": f"src/mod{i}.py"})
        body = "\n".join(f"line {i}.{k}: value = compute_{k}(x, y)  # step {k}" for k in range(150))
        history = [*history, Message(role="assistant", parts=(use,)),
                   Message(role="user", parts=(ToolResultPart(f"t{i}", body),))]
    assert len(failed_at) >= 2 and max(failed_at) < controller.threshold  # it did try again, for cost
    assert all(b - a >= budget.cost_floor for a, b in pairwise(failed_at))
