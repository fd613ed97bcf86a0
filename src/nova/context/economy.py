"""When a compaction pays for itself: the cost side of the compaction trigger.

Below the soft line nothing forces a compaction, but every call re-sends the whole view. With a prompt
cache the re-sent prefix is billed at the cache-read price; a compaction breaks that prefix (the first
call after it writes the new, smaller view again) and costs a summary call. So a compaction is worth
making early once what it saves on the calls that follow beats what it costs.

The model is the one of a run that keeps growing by `growth` tokens a call and is compacted each time it
reaches a line T, falling back to a view of `after` tokens. Per call it pays, in units of the uncached
input price (r = cache read, w = cache write, o = output, each ÷ input):

    reads         r * (T + after) / 2                      (the view, on average)
    compaction    (w * after + r * T + o * summary) * growth / (T - after)
                  (write the new view, read the old one for the summary, write the summary; once a cycle)

which is least when x = T - after solves x^2 = 2 * growth * (w*after + r*after + r*x + o*summary) / r:

    x = growth + sqrt(growth^2 + 2 * growth * (w*after + r*after + o*summary) / r)

`cost_line` returns after + x. It moves up when the view left after a compaction is large (a long task
statement: the continuity floor), when writes or summaries are dear, and when the run grows slowly.

A compaction also costs detail (the folded part becomes a summary), which no price measures: the
controller never compacts for cost alone below `ContextBudget.cost_floor` (a fifth of the soft line, at
most 20,000 tokens). Such a compaction folds less than one at the soft line, so it keeps a smaller tail and
writes a shorter summary (`ContextBudget.for_cost`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from nova.providers.pricing import ModelInfo, model_info

__all__ = ["CachePrices", "cost_line", "prices_for"]


@dataclass(frozen=True, slots=True, kw_only=True)
class CachePrices:
    """Prices relative to one uncached input token. The defaults are Anthropic's multipliers (the dearer
    of the two cache models: writes cost more than uncached input), for a model the table lacks."""

    read: float = 0.1
    write: float = 1.25
    output: float = 5.0
    input_usd: float | None = None
    """USD per million uncached input tokens (prices the compaction receipt); None when unknown."""

    @classmethod
    def of(cls, info: ModelInfo) -> CachePrices:
        if info.input <= 0:
            return cls(input_usd=0.0)
        return cls(read=info.cache_read / info.input, write=info.cache_write_5m / info.input,
                   output=info.output / info.input, input_usd=info.input)


def prices_for(model: str) -> CachePrices:
    info = model_info(model) if model else None
    return CachePrices.of(info) if info is not None else CachePrices()


def cost_line(*, after: int, growth: float, summary_tokens: int, prices: CachePrices) -> int | None:
    """The view size at which compacting is cheapest over the calls that follow (see the module text);
    None when it cannot be known (no growth yet, or reads that cost nothing to re-send)."""
    if growth <= 0 or prices.read <= 0:
        return None
    fixed = prices.write * after + prices.read * after + prices.output * summary_tokens
    x = growth + math.sqrt(growth * growth + 2.0 * growth * fixed / prices.read)
    return int(after + x)
