"""`ContextBudget`: every size the context engine works to, derived once from the settings and the model
table and passed to whoever needs it. No other module computes a window, a trigger line or a kept-tail
size; they read them here.

    budget = budget_for(settings)      # the model's window, or the configured one
    budget.threshold                   # compaction starts here (CMP-1, the soft line)
    budget.hard_line                   # over this, compaction runs even with the breaker open (CMP-2)

The seeds' numbers (reserve 16k for output and 8k for a summary, keep 10k..40k tokens after a summary,
spill results over 50k characters) were written for a 200k window. Below 200k every one of them scales
with the window, so an 8k local model gets an 8k-sized budget instead of a reserve that eats its whole
window; above 200k they stay as written. A value the config sets is honoured, unless it cannot work at
the window (a reserve of half the window, a kept tail bigger than the view after a compaction): then it
is clamped and a warning names the key.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from nova.providers.pricing import context_window_for
from nova.settings import CompactionConfig, Settings, SpillConfig

__all__ = ["COST_FLOOR_MOST", "COST_FLOOR_SHARE", "MAX_KEEP_TOKENS", "MIN_KEEP_TOKENS", "REFERENCE_WINDOW", "BudgetLines", "ContextBudget", "budget_for"]

log = logging.getLogger(__name__)

# The window the seeds' numbers were written for: at and above it they hold as written.
REFERENCE_WINDOW = 200_000
# CMP-5 clamps on the kept tail at the reference window (seed 000): at least 10,000 tokens, at most 40,000.
MIN_KEEP_TOKENS = 10_000
MAX_KEEP_TOKENS = 40_000
# A compaction made for cost keeps a tail and writes a summary in proportion to the view it starts from,
# never under this share of the usual sizes (at a third, replayed runs lose modified paths and the last
# failing command from the summary).
COST_SHARE_FLOOR = 0.5
# The least summary such a compaction writes, whatever the window: the structured part (files modified,
# the last failing command and its error) does not shrink with the window (at 512 replayed 32k runs lose
# a failing command).
COST_SUMMARY_LEAST = 640
# The cost floor: a fifth of the threshold, never more than a tenth of the reference window. Tuned on
# `benchmarks/windows.py --quick` (4 mini-swe-agent runs and the SWE-agent demos: a floor of a tenth of
# the threshold at 64k compacted too early, 0.403x truncate under the Anthropic cache; a third, too late
# under OpenAI's) and on the long Claude Code and mini-swe-agent runs of `benchmarks/cost_vs_recorded.py`
# (a floor at the soft line at 200k carried 170k views to the end of sessions the recording compacted).
COST_FLOOR_SHARE = 0.2
COST_FLOOR_MOST = 20_000
# About four characters a token: the spill limits are in characters, the budget in tokens.
CHARS_PER_TOKEN = 4

Warn = Callable[[str], None]


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextBudget:
    window: int
    """The model's context window in tokens."""
    reserve: int
    """Held back for the answer and a summary: output + summary reserve."""
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
    snip_budget: int = 50_000
    """Layer 1: the tokens of recent tool outputs kept uncut (`snip_tool_output_token_budget`)."""
    message_share: int = 0
    """The most one message may take in the view; a larger one is shown cut (head, note, tail)."""
    user_share: int = 0
    """The same for a message a person wrote: three quarters of the threshold, since the user's words are
    kept whole whenever they fit."""
    cost_floor: int = 0
    """The smallest view a compaction may be made at for cost alone (nova.context.economy): a fifth of the
    soft line (`COST_FLOOR_SHARE`), never more than `COST_FLOOR_MOST`. When it was the soft line itself at
    200k and above, Nova carried 170k-token views to the end of real Claude Code sessions that Claude Code
    had compacted at 142k-170k (1.2x their bill): where a compaction pays is for the cost model to say;
    the floor only keeps one off a view that has too little worth folding. 0 means the threshold."""
    spill: SpillConfig = field(default_factory=SpillConfig)
    """The spill limits at this window (SPILL-1, 2)."""
    warnings: tuple[str, ...] = ()
    """One line per configured value that was clamped (each names its key)."""

    @property
    def post_compaction_target(self) -> int:
        """After a compaction the view is at most this (or the continuity floor, when larger)."""
        return int(self.threshold * 0.5)

    @classmethod
    def derive(cls, config: CompactionConfig, window: int, spill: SpillConfig | None = None,
               *, warn: Warn | None = None) -> ContextBudget:
        if window <= 0:
            raise ValueError(f"a context window must be positive, not {window}")
        spill = spill or SpillConfig()
        notes: list[str] = []
        defaults = CompactionConfig()
        scale = min(1.0, window / REFERENCE_WINDOW)

        def chosen(key: str, derived: int, most: int, *, least: int = 0, section: str = "compaction",
                   value: int | None = None, default: int | None = None, configured: frozenset[str] = frozenset()
                   ) -> int:
            """The configured value when set (clamped to [least, most] with a note), else the derived one."""
            if value is None:
                value = getattr(config, key)
                default = getattr(defaults, key)
                configured = config.configured
            set_by_user = key in configured or value != default
            if not set_by_user:
                return max(least, min(derived, most))
            if value > most or value < least:
                fixed = max(least, min(value, most))
                notes.append(f"{section}.{key} = {value:,} cannot work with a {window:,}-token window; "
                             f"using {fixed:,}")
                return fixed
            return value

        def scaled(seed: int, floor: int = 0) -> int:
            return max(floor, round(seed * scale))

        # The reserve (output + summary) is at most half the window: a threshold under half leaves no
        # room to work between compactions.
        summary = chosen("summary_reserve_tokens", scaled(defaults.summary_reserve_tokens, min(512, window // 16)),
                         window // 8)
        output = chosen("output_reserve_tokens", scaled(defaults.output_reserve_tokens, min(1024, window // 8)),
                        window // 2 - summary)
        reserve = output + summary
        threshold = window - reserve
        margin = chosen("hard_margin_tokens", scaled(defaults.hard_margin_tokens, min(64, reserve // 4)),
                        reserve // 2)
        # After a compaction the view must sit at half the threshold with room for the summary and the
        # fixed prompt: the kept tail takes at most a quarter of the threshold.
        keep_most = max(1, threshold // 4)
        keep = chosen("summary_keep_tokens",
                      min(max(scaled(defaults.summary_keep_tokens), scaled(MIN_KEEP_TOKENS)), scaled(MAX_KEEP_TOKENS)),
                      keep_most)
        if "summary_keep_tokens" in config.configured or config.summary_keep_tokens != defaults.summary_keep_tokens:
            # The seed's clamps, scaled with the window (a configured value still has to be sane).
            keep = min(max(keep, min(scaled(MIN_KEEP_TOKENS), keep_most)), scaled(MAX_KEEP_TOKENS), keep_most)
        snip = chosen("snip_tool_output_token_budget", scaled(defaults.snip_tool_output_token_budget),
                      threshold // 2)
        message_share = max(64, threshold // 4)
        result_chars = _spill_value("max_result_chars", spill, scaled(SpillConfig().max_result_chars, 2_000),
                                    message_share * CHARS_PER_TOKEN, chosen)
        message_chars = _spill_value("max_message_chars", spill,
                                     max(result_chars, scaled(SpillConfig().max_message_chars, 4 * result_chars)),
                                     2 * message_share * CHARS_PER_TOKEN, chosen, least=result_chars)
        preview = _spill_value("preview_chars", spill, min(scaled(SpillConfig().preview_chars, 500), result_chars // 2),
                               max(1, result_chars // 2), chosen)
        for note in notes:
            (warn or _warn_once)(note)
        return cls(
            window=window,
            reserve=reserve,
            threshold=threshold,
            hard_line=window - margin,
            keep_tokens=keep,
            # Half the summary reserve, and never more than a sixth of the threshold.
            summary_cap=max(256, min(summary, threshold // 3) // 2),
            restore_tokens=max(200, min(4000, threshold // 16)),
            snip_budget=snip,
            message_share=message_share,
            user_share=max(message_share, threshold * 3 // 4),
            cost_floor=min(COST_FLOOR_MOST, int(threshold * COST_FLOOR_SHARE)),
            spill=SpillConfig(max_result_chars=result_chars, max_message_chars=message_chars, preview_chars=preview,
                              configured=spill.configured),
            warnings=tuple(notes),
        )

    def for_cost(self, view: int) -> ContextBudget:
        """The budget of a compaction made for cost alone at a view of `view` tokens, under the soft line
        (nova.context.economy). It folds less than a compaction at the threshold, so its summary and its
        kept tail (at most the seeds' least, scaled) are sized in the share the view is of the threshold,
        never under half, and the summary never under `COST_SUMMARY_LEAST`: the smaller view it leaves
        pays back its cache break sooner."""
        share = max(COST_SHARE_FLOOR, min(1.0, view / self.threshold)) if self.threshold > 0 else 1.0
        least = max(1, round(MIN_KEEP_TOKENS * min(1.0, self.window / REFERENCE_WINDOW) * share))
        return replace(self, keep_tokens=min(self.keep_tokens, least),
                       summary_cap=min(self.summary_cap, max(COST_SUMMARY_LEAST, round(self.summary_cap * share))))

    def user_tokens(self, needed: int = 0, first: int = 0) -> int:
        """Room for the user's messages, verbatim: a third of the threshold, stretched to what they need
        up to three quarters (`user_share`, the most one message the user wrote may take): the user's
        words are kept whole whenever they fit, the task statement (`first` tokens) first."""
        return max(self.threshold // 3, min(max(needed, first) + 64, self.threshold * 3 // 4))


def _spill_value(key: str, spill: SpillConfig, derived: int, most: int, chosen: Callable[..., int], *,
                 least: int = 1) -> int:
    return int(chosen(key, derived, most, least=min(least, most), section="spill", value=getattr(spill, key),
                      default=getattr(SpillConfig(), key), configured=spill.configured))


_warned: set[str] = set()


def _warn_once(note: str) -> None:
    # `budget_for` runs for the agent, `nova config` and `nova context` alike: say it once per process.
    if note not in _warned:
        _warned.add(note)
        log.warning("%s", note)


def window_for(settings: Settings) -> int:
    """The configured window, else the model table's, else `compaction.default_context_window`."""
    return settings.context_window or context_window_for(settings.model) or settings.compaction.default_context_window


class BudgetLines:
    """The lines of a `ContextBudget`, read off whatever holds one (the agent, the context controller): the
    budget is the one place they are kept, so they are never copied and left stale."""

    budget: ContextBudget

    @property
    def window(self) -> int:
        return self.budget.window

    @property
    def threshold(self) -> int:
        return self.budget.threshold

    @property
    def hard_line(self) -> int:
        return self.budget.hard_line


def budget_for(settings: Settings, *, warn: Warn | None = None) -> ContextBudget:
    return ContextBudget.derive(settings.compaction, window_for(settings), settings.spill, warn=warn)

