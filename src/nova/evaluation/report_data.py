"""The figures a report plots, computed from replays: pure data, no plotting library.

`series_of` turns one `ReplayReport` into per-call series (context size, composition by kind, cumulative
cost, cache hit); `metric_rows` and `counterfactual_rows` turn `nova eval` results into table rows,
whatever metrics the results hold.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from nova.evaluation.counterfactual import CounterfactualResult
from nova.evaluation.replay import ReplayReport
from nova.evaluation.replay_views import COMPOSITION_KINDS
from nova.providers.pricing import cost_usd, model_info

__all__ = ["ReplaySeries", "counterfactual_rows", "format_metric", "metric_rows", "plain_figure", "series_of"]


@dataclass(frozen=True, slots=True)
class ReplaySeries:
    """Per-call series of one replay; index i is call i + 1."""

    policy: str
    window: int
    threshold: int
    hard_line: int
    """0 when there is none apart from the window and the threshold."""
    context: tuple[int, ...]
    events: tuple[str, ...]
    compactions: tuple[int, ...]
    """1-based calls whose view was compacted (forced or not)."""
    composition: Mapping[str, tuple[int, ...]]
    """Tokens per kind per call, in `COMPOSITION_KINDS` order; the kinds sum to `context`."""
    cost_priced: bool
    """True: `call_cost` and `cumulative` are USD (input side) at `price_model`; False: input tokens."""
    price_model: str
    call_cost: tuple[float, ...]
    cumulative: tuple[float, ...]
    cache_simulated: bool
    cache_read: tuple[int, ...]
    cache_hit: tuple[float | None, ...]
    """Cache reads ÷ the call's whole input; None when no provider cache was simulated."""

    @property
    def calls(self) -> tuple[int, ...]:
        return tuple(range(1, len(self.context) + 1))


def series_of(report: ReplayReport) -> ReplaySeries:
    info = model_info(report.price_model) if report.price_model else None
    # A replayed call's usage is its input side (no output), at the simulated cache's 5-minute writes.
    call_cost = [(cost_usd(call.cache, report.price_model) or 0.0) if info is not None else float(call.input_tokens)
                 for call in report.per_call]
    cumulative: list[float] = []
    running = 0.0
    for cost in call_cost:
        running += cost
        cumulative.append(running)
    simulated = bool(report.provider_cache)
    hits: list[float | None] = []
    for call in report.per_call:
        seen = call.cache.context_tokens
        hits.append((call.cache.cache_read_tokens / seen if seen else 0.0) if simulated else None)
    compactions = {i + 1 for i, c in enumerate(report.per_call) if c.event == "compaction"}
    compactions |= {c.call for c in report.view_changes if c.event == "compaction" and c.call <= report.calls}
    hard = report.hard_line if report.threshold < report.hard_line < report.window else 0
    return ReplaySeries(
        policy=report.policy, window=report.window, threshold=report.threshold, hard_line=hard,
        context=tuple(c.input_tokens for c in report.per_call), events=tuple(c.event for c in report.per_call),
        compactions=tuple(sorted(compactions)),
        composition={k: tuple(c.composition.get(k, 0) for c in report.per_call) for k in COMPOSITION_KINDS},
        cost_priced=info is not None, price_model=report.price_model if info is not None else "",
        call_cost=tuple(call_cost), cumulative=tuple(cumulative), cache_simulated=simulated,
        cache_read=tuple(c.cache.cache_read_tokens for c in report.per_call), cache_hit=tuple(hits))


class _Measured(Protocol):
    def to_json(self) -> dict[str, Any]: ...


def format_metric(metric: _Measured) -> tuple[str, str]:
    """(value, unit) as a person reads them: a ratio as a percentage with its counts, a cost in dollars, any
    other figure with its unit; "n/a" when it cannot be known."""
    data = metric.to_json()
    value, unit = data.get("value"), str(data.get("unit", ""))
    if value is None:
        why = data.get("n/a")
        return (f"n/a ({why})" if why else "n/a"), unit
    if "of" in data and "part" in data:
        return f"{value:.1%} ({data['part']:,} of {data['of']:,})", unit
    if unit.startswith("USD"):
        return f"${value:.6f}", unit
    if isinstance(value, int | float):
        return plain_figure(value), unit
    return str(value), unit


def plain_figure(value: float) -> str:
    """A figure with as many decimals as its size needs (the text report and the page print it alike)."""
    digits = 0 if value >= 100 else 1 if value >= 10 else 2 if value >= 0.01 or value == 0 else 4
    return f"{value:,.{digits}f}"


def metric_rows(metrics_by_policy: Mapping[str, Mapping[str, _Measured]]) -> list[tuple[str, str, list[str]]]:
    """One row per metric (name, unit, the value under each policy in the mapping's order), for every
    metric any policy holds, in the order they were first met."""
    names: list[str] = []
    for metrics in metrics_by_policy.values():
        names += [n for n in metrics if n not in names]
    rows = []
    for name in names:
        cells, unit = [], ""
        for metrics in metrics_by_policy.values():
            if name in metrics:
                shown, unit = format_metric(metrics[name])
                cells.append(shown)
            else:
                cells.append("—")
        rows.append((name, unit, cells))
    return rows


def counterfactual_rows(results: Sequence[CounterfactualResult]) -> list[list[str]]:
    """One row per counterfactual run: what changed, what the view lost or gained, the token change, the
    metric changes (percentage points) and whether the answer changed."""
    rows = []
    for c in results:
        changed, deltas = c.segment_changes, ", ".join(c.metric_changes)
        answer = "n/a (offline)" if c.answer_changed is None else ("changed" if c.answer_changed else "same")
        rows.append([c.change.label, c.note or changed or "no change", f"{c.tokens_delta:+,}", deltas or "none",
                     answer])
    return rows
