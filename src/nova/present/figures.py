"""The figures a person reads about a conversation: model, context, cost and cache hit rate.

`nova run`'s closing line (a turn's figures) and the TUI footer (the session's running figures) are
both made here from the same inputs — the agent's one context figure (TOK-3) and the provider's usage
and price — so the two surfaces can never disagree about what a number means. The model calls behind
the cost, by what each was for (`nova.model.CALL_PURPOSES`), are said the same way everywhere too
(`calls_line`, `calls_brief`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from nova import events as ev
from nova.model import CallCount, CallPurpose, Usage
from nova.providers.pricing import cost_usd
from nova.tokens import context_percent

__all__ = ["PURPOSE_LABELS", "Figures", "cache_hit_rate", "calls_brief", "calls_line", "footer_line", "session_cost",
           "status_line"]

PURPOSE_LABELS: Mapping[CallPurpose, str] = {
    "turn": "turn", "compaction": "summary", "memory_extraction": "memory", "memory_recall": "recall",
    "subagent": "sub-agent",
}
"""What each call purpose is called where people read it."""


@dataclass(frozen=True, slots=True)
class Figures:
    model: str
    used: int
    limit: int
    window: int
    cost: float | None
    """US dollars; None when the model is not in the price table."""
    cache_hit_rate: float | None
    """Share of the prompt tokens read from the cache; None before any call."""
    calls: Mapping[CallPurpose, CallCount] = field(default_factory=dict)
    """The model calls behind the cost, by purpose (empty: not known by purpose)."""

    @property
    def percent(self) -> float:
        return context_percent(self.used, self.limit)

    @classmethod
    def of(cls, *, model: str, status: ev.ContextUpdate, usage: Usage, cost: float | None,
           calls: Mapping[CallPurpose, CallCount] | None = None) -> Figures:
        return cls(model=model, used=status.used, limit=status.limit, window=status.window, cost=cost,
                   cache_hit_rate=cache_hit_rate(usage), calls=dict(calls or {}))


def cache_hit_rate(usage: Usage) -> float | None:
    seen = usage.context_tokens
    return usage.cache_read_tokens / seen if seen else None


def session_cost(model: str, recorded_usd: float, *, known: bool = True) -> float | None:
    """A session's recorded cost, or None when its model has no price (the record then holds 0.0,
    which would read as "free") or when a call was not priced (`known` False: `SessionMeta.cost_known`)."""
    return recorded_usd if known and cost_usd(Usage(), model) is not None else None


def _cost_text(cost: float | None, *, long: bool) -> str:
    if cost is not None:
        return f"${cost:.4f}"
    return "unknown (model not in the price table)" if long else "unknown"


def calls_line(calls: Mapping[CallPurpose, CallCount], *, tokens_known: bool = True) -> str:
    """Every purpose with its calls, tokens and cost: `nova sessions show`, the page's cost tooltip.
    `tokens_known` False: some calls were recorded without their usage (an import), so a purpose whose
    calls measured nothing says so rather than 0 tokens."""
    def tokens(c: CallCount) -> str:
        return "tokens not recorded" if not tokens_known and c.tokens == 0 else f"{c.tokens:,} tokens"

    return " · ".join(
        f"{PURPOSE_LABELS[p]} {c.calls} call{'s' if c.calls != 1 else ''} ({tokens(c)}, "
        f"{f'${c.cost_usd:.4f}' if c.cost_known else 'cost unknown'})" for p, c in calls.items())


def calls_brief(calls: Mapping[CallPurpose, CallCount]) -> str:
    """The calls by purpose in a few characters, for a footer: "3 model calls" when every one was a turn's
    step, "5 model calls: 3 turn, 1 summary, 1 memory" when something ran beside the turn."""
    if not calls:
        return ""
    total = sum(c.calls for c in calls.values())
    head = f"{total:,} model call{'s' if total != 1 else ''}"
    if set(calls) == {"turn"}:
        return head
    return f"{head}: " + ", ".join(f"{c.calls:,} {PURPOSE_LABELS[p]}" for p, c in calls.items())


def _hit_text(rate: float | None) -> str:
    return f"{rate:.0%}" if rate is not None else "n/a"


def footer_line(f: Figures) -> str:
    """`nova run`'s closing line."""
    cost = _cost_text(f.cost, long=True)
    line = (f"context {f.used:,}/{f.limit:,} tokens ({f.percent:.1f}% of the compaction threshold, window "
            f"{f.window:,}) · cost {cost} · cache hit rate {_hit_text(f.cache_hit_rate)}")
    return f"{line} · {calls_brief(f.calls)}" if f.calls else line


def status_line(f: Figures, width: int | None = None) -> str:
    """The TUI footer: model, context, cost, cache hits and calls on one line. Within `width` columns
    (the terminal's), the longest form that fits whole: the calls without their purposes, then without
    the context figure (the bar above the prompt shows it), then without the model; a figure is never
    cut in the middle."""
    if f.used <= 0:
        context = f"context: nothing sent yet (window {f.window:,})"
    else:
        context = f"context {f.used:,}/{f.limit:,} ({f.percent:.1f}%)"
    money = f"cost {_cost_text(f.cost, long=False)} · cache hits {_hit_text(f.cache_hit_rate)}"
    total = sum(c.calls for c in f.calls.values())
    short = [f"{total:,} call{'s' if total != 1 else ''}"] if f.calls else []
    forms = [[f.model, context, money, *([calls_brief(f.calls)] if f.calls else [])],
             [f.model, context, money, *short], [f.model, money, *short], [money, *short]]
    lines = [" · ".join(form) for form in forms]
    if width is None:
        return lines[0]
    return next((line for line in lines if len(line) <= width), lines[-1])
