"""The receipt of one compaction: what it cost, what it saves on each call after it, and when it pays off.

Every figure is in units of one uncached input token at the model's prices (`CachePrices`: r = cache
read, w = cache write, o = output, each ÷ input), and in USD where the model's input price is known:

    summary call     summary_input * r + summary_output * o   (the summary reads the old view from the
                                                                cache and writes the summary; an extractive
                                                                summary makes no call and costs nothing)
    cache rewrite    (after - kept) * (w - r)                  (the first call after writes the new view
                                                                where it would have read a prefix; the
                                                                fixed prompt it begins with, `kept`, is
                                                                the same before and after and stays read)
    saving per call  (before - after) * r                      (each later call re-sends a smaller view)
    break-even       ceil((summary + rewrite) / saving)        calls after the compaction

In replay the calls that followed are known, so the realised saving is `calls_after * saving - cost`
(negative when the run ended, or compacted again, before the compaction paid for itself).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from nova.context.economy import CachePrices

__all__ = ["CompactionReceipt", "compaction_receipt", "receipt_line"]


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionReceipt:
    tokens_before: int
    tokens_after: int
    summary_cost: float
    """The summary call, in uncached-input-token units."""
    rewrite_cost: float
    """The cache rewrite the compaction caused, in the same units."""
    saving_per_call: float
    break_even_calls: int | None
    """Calls after the compaction before it has paid for itself; None when it saves nothing per call."""
    usd_per_unit: float | None
    """USD of one unit (the model's uncached input price per token); None when the price is unknown."""
    calls_after: int | None = None
    """Replay only: the calls that followed before the next compaction or the end."""

    @property
    def cost(self) -> float:
        return self.summary_cost + self.rewrite_cost

    @property
    def realised_saving(self) -> float | None:
        if self.calls_after is None:
            return None
        return self.calls_after * self.saving_per_call - self.cost

    def usd(self, units: float | None) -> float | None:
        if units is None or self.usd_per_unit is None:
            return None
        return units * self.usd_per_unit

    def settled(self, calls_after: int) -> CompactionReceipt:
        """The same receipt once the calls that followed are known (replay)."""
        return replace(self, calls_after=calls_after)

    def to_json(self) -> dict[str, Any]:
        def money(units: float | None) -> float | None:
            value = self.usd(units)
            return None if value is None else round(value, 6)

        data: dict[str, Any] = {
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "summary_cost_tokens": round(self.summary_cost, 3),
            "rewrite_cost_tokens": round(self.rewrite_cost, 3),
            "saving_per_call_tokens": round(self.saving_per_call, 3),
            "break_even_calls": self.break_even_calls,
            "input_usd_per_mtok": None if self.usd_per_unit is None else self.usd_per_unit * 1_000_000,
            "summary_cost_usd": money(self.summary_cost),
            "rewrite_cost_usd": money(self.rewrite_cost),
            "saving_per_call_usd": money(self.saving_per_call),
        }
        if self.calls_after is not None:
            data["calls_after"] = self.calls_after
            data["realised_saving_tokens"] = round(self.realised_saving or 0.0, 3)
            data["realised_saving_usd"] = money(self.realised_saving)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CompactionReceipt:
        """A receipt read back from a boundary record or an event (`to_json`'s keys)."""
        price = data.get("input_usd_per_mtok")
        even = data.get("break_even_calls")
        after = data.get("calls_after")
        return cls(tokens_before=int(data.get("tokens_before", 0)), tokens_after=int(data.get("tokens_after", 0)),
                   summary_cost=float(data.get("summary_cost_tokens", 0.0)),
                   rewrite_cost=float(data.get("rewrite_cost_tokens", 0.0)),
                   saving_per_call=float(data.get("saving_per_call_tokens", 0.0)),
                   break_even_calls=None if even is None else int(even),
                   usd_per_unit=None if price is None else float(price) / 1_000_000,
                   calls_after=None if after is None else int(after))


def compaction_receipt(*, tokens_before: int, tokens_after: int, summary_input_tokens: int,
                       summary_output_tokens: int, prices: CachePrices, kept_prefix_tokens: int = 0) -> CompactionReceipt:
    """The receipt of a compaction from `tokens_before` to `tokens_after` (see the module text).
    `kept_prefix_tokens`: the fixed prompt (system prompt and tools) every view begins with; a compaction
    rewrites what follows it, and the cache still holds it."""
    summary = summary_input_tokens * prices.read + summary_output_tokens * prices.output
    rewrite = max(0, tokens_after - kept_prefix_tokens) * max(0.0, prices.write - prices.read)
    saving = max(0, tokens_before - tokens_after) * prices.read
    cost = summary + rewrite
    break_even = math.ceil(cost / saving - 1e-9) if saving > 0 else None
    # A model that costs nothing (the offline demo) is worded in tokens: $0.0000 everywhere would hide
    # what the break-even is counted in.
    per_unit = prices.input_usd / 1_000_000 if prices.input_usd else None
    return CompactionReceipt(tokens_before=tokens_before, tokens_after=tokens_after, summary_cost=summary,
                             rewrite_cost=rewrite, saving_per_call=saving, break_even_calls=break_even,
                             usd_per_unit=per_unit)


def _amount(receipt: CompactionReceipt, units: float) -> str:
    value = receipt.usd(units)
    return f"${value:,.4f}" if value is not None else f"{units:,.0f} input-token equivalents"


def receipt_line(receipt: CompactionReceipt) -> str:
    """The receipt in words, the same on every surface (CLI line, `nova context`, replay text)."""
    parts = [
        f"{receipt.tokens_before:,} → {receipt.tokens_after:,} tokens",
        # The extractive summary is Nova's own code: there is no call to price.
        f"summary call {_amount(receipt, receipt.summary_cost)}" if receipt.summary_cost else "no summary call",
        f"cache rewrite {_amount(receipt, receipt.rewrite_cost)}",
        f"saves {_amount(receipt, receipt.saving_per_call)} a call",
        (f"pays off after {receipt.break_even_calls} call" + ("" if receipt.break_even_calls == 1 else "s"))
        if receipt.break_even_calls is not None else "never pays off",
    ]
    realised = receipt.realised_saving
    if realised is not None:
        verb = "saved" if realised >= 0 else "lost"
        parts.append(f"{verb} {_amount(receipt, abs(realised))} over the {receipt.calls_after} calls after it")
    return ", ".join(parts)
