"""`ContextBudget`: every size the context engine works to, derived once from the settings and the model
table and passed to whoever needs it. No other module computes a window, a trigger line or a kept-tail
size; they read them here.

    budget = budget_for(settings)      # the model's window, or the configured one
    budget.threshold                   # compaction starts here (CMP-1, the soft line)
    budget.hard_line                   # over this, compaction runs even with the breaker open (CMP-2)
"""

from __future__ import annotations

from dataclasses import dataclass

from nova.providers.pricing import context_window_for
from nova.settings import CompactionConfig, Settings

__all__ = ["MAX_KEEP_TOKENS", "MIN_KEEP_TOKENS", "ContextBudget", "budget_for"]

# CMP-5 clamps on the kept tail (seed 000): at least 10,000 tokens, at most 40,000 tokens.
MIN_KEEP_TOKENS = 10_000
MAX_KEEP_TOKENS = 40_000


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextBudget:
    window: int
    """The model's context window in tokens."""
    reserve: int
    """Held back for the answer and a summary: output + summary reserve, capped at half the window."""
    threshold: int
    """The soft line: at or over it, the controller compacts (CMP-1)."""
    hard_line: int
    """The hard line: at or over it, compaction runs whatever the circuit breaker says (CMP-2)."""
    keep_tokens: int
    """The recent history a summary keeps verbatim (CMP-5)."""
    summary_cap: int
    """The largest model-written (or extracted) part of a summary."""
    restore_tokens: int
    """Room for re-read files and skills after a compaction (CMP-7)."""

    @classmethod
    def derive(cls, config: CompactionConfig, window: int) -> ContextBudget:
        if window <= 0:
            raise ValueError(f"a context window must be positive, not {window}")
        reserve = min(config.output_reserve_tokens + config.summary_reserve_tokens, window // 2)
        threshold = window - reserve
        half = threshold // 2
        # summary_keep_tokens, capped at half the threshold (so tail + summary stay under it), with the
        # seed's floor and ceiling.
        keep = min(max(min(config.summary_keep_tokens, half), min(MIN_KEEP_TOKENS, half)), MAX_KEEP_TOKENS, half)
        return cls(
            window=window,
            reserve=reserve,
            threshold=threshold,
            hard_line=window - config.hard_margin_tokens,
            keep_tokens=keep,
            # Half the summary reserve, and never more than a sixth of the threshold.
            summary_cap=max(256, min(config.summary_reserve_tokens, threshold // 3) // 2),
            restore_tokens=max(200, min(4000, threshold // 16)),
        )

    def user_tokens(self, needed: int = 0) -> int:
        """Room for the user's messages, verbatim: a third of the threshold, stretched up to two thirds
        when they need it (a long task statement must survive whole)."""
        return max(self.threshold // 3, min(needed + 64, self.threshold * 2 // 3))


def window_for(settings: Settings) -> int:
    """The configured window, else the model table's, else `compaction.default_context_window`."""
    return settings.context_window or context_window_for(settings.model) or settings.compaction.default_context_window


def budget_for(settings: Settings) -> ContextBudget:
    return ContextBudget.derive(settings.compaction, window_for(settings))
