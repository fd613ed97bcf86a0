"""The EVAL-1 metrics of one replayed view, each with its unit.

All view figures are over the messages of the view the next call would send (the final view of a
replay); the fixed prompt (system text, tool schemas) is the same under every policy and left out.

- recall of required evidence (evidence items): required items readable in the view ÷ required items;
- context precision (tokens): tokens of view messages that hold at least one required item (evidence or
  constraint) ÷ view tokens; noise rate (tokens) is the rest ÷ view tokens, so the two add up to 1;
- constraint retention (constraints): constraints readable verbatim in the view ÷ constraints;
- provenance coverage (tokens): tokens of view messages that point back to the record (a recorded
  message, possibly spilled or cut, or a summary naming the ids it covers) ÷ view tokens;
- cache hit rate (tokens): cache reads ÷ (uncached + cache read + cache write) input over every call;
- cost (USD): per session and per call, from the model table (null without a price).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from nova.evaluation.replay import ReplayReport, view_text
from nova.messages import Message, SummaryPart
from nova.tokens import TokenCounter, count_message

__all__ = ["Metric", "Ratio", "constraint_retention", "context_precision", "evidence_recall", "metrics_of",
           "provenance_coverage"]


@dataclass(frozen=True, slots=True)
class Ratio:
    """`part` of `whole`, both in `unit`; the value is 1.0 when there is nothing to count (no item is
    missing from an empty list). A ratio with `na` (why it means nothing when empty, e.g. "no memory
    was recalled") is instead not applicable when `whole` is 0: no value in JSON, "n/a" in the table."""

    part: int
    whole: int
    unit: str
    na: str = ""

    @property
    def value(self) -> float:
        return self.part / self.whole if self.whole else 1.0

    @property
    def applicable(self) -> bool:
        return bool(self.whole) or not self.na

    def to_json(self) -> dict[str, Any]:
        if not self.applicable:
            return {"value": None, "part": 0, "of": 0, "unit": self.unit, "n/a": self.na}
        return {"value": round(self.value, 6), "part": self.part, "of": self.whole, "unit": self.unit}


@dataclass(frozen=True, slots=True)
class Metric:
    """A figure that is not a ratio of counts (a cost, a latency), with its unit; None when it cannot be
    known, `na` saying why (the table then prints it)."""

    value: float | None
    unit: str
    na: str = ""

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"value": None if self.value is None else round(self.value, 8), "unit": self.unit}
        if self.value is None and self.na:
            data["n/a"] = self.na
        return data


def _held(items: Sequence[str], text: str) -> int:
    return sum(1 for item in items if item in text)


def evidence_recall(view: Sequence[Message], evidence: Sequence[str]) -> Ratio:
    return Ratio(_held(evidence, view_text(view)), len(evidence), "evidence items")


def constraint_retention(view: Sequence[Message], constraints: Sequence[str]) -> Ratio:
    return Ratio(_held(constraints, view_text(view)), len(constraints), "constraints")


def context_precision(view: Sequence[Message], required: Sequence[str], counter: TokenCounter) -> Ratio:
    """Tokens of the messages holding at least one required item ÷ all view tokens."""
    relevant = total = 0
    for m in view:
        size = count_message(m, counter)
        total += size
        text = view_text([m])
        if any(item in text for item in required):
            relevant += size
    return Ratio(relevant, total, "tokens")


def provenance_coverage(view: Sequence[Message], recorded: Collection[str], counter: TokenCounter) -> Ratio:
    """Tokens of messages that point back to the record ÷ all view tokens. A recorded message keeps its
    id when it is spilled or cut (its pointer says where the rest is); a summary names what it covers."""
    covered = total = 0
    for m in view:
        size = count_message(m, counter)
        total += size
        covers = [c for p in m.parts if isinstance(p, SummaryPart) for c in p.covers]
        if m.id in recorded or covers:
            covered += size
    return Ratio(covered, total, "tokens")


def metrics_of(report: ReplayReport, *, evidence: Sequence[str], constraints: Sequence[str],
               recorded: Collection[str], counter: TokenCounter) -> dict[str, Ratio | Metric]:
    """Every EVAL-1 metric this offline harness can measure for one replay, by name."""
    view = report.final_view
    precision = context_precision(view, [*evidence, *constraints], counter)
    seen = report.uncached_input_tokens + report.cache_read_tokens + report.cache_write_tokens
    cost = report.cost_usd
    return {
        "evidence_recall": evidence_recall(view, evidence),
        "context_precision": precision,
        "noise_rate": Ratio(precision.whole - precision.part, precision.whole, "tokens"),
        "constraint_retention": constraint_retention(view, constraints),
        "provenance_coverage": provenance_coverage(view, recorded, counter),
        "cache_hit_rate": Ratio(report.cache_read_tokens, seen, "tokens"),
        "cost_per_session": Metric(cost, "USD per session"),
        "cost_per_call": Metric(None if cost is None else cost / max(report.calls, 1), "USD per call"),
    }
