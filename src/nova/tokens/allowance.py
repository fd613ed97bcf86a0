"""What each call grows beyond what the ledger can count: learned per session from real usage.

Between two calls the real input grows by what was appended (the reply, what came back) and by
whatever else the request carries that no message holds: a harness's unrecorded reminders, a system
prompt that changed, the provider's own wrapper per turn, a tokenizer that counts this session's text
above its profile. On the Claude Code sessions in ../shared/data that remainder is 75-200 tokens a step,
nearly constant within a session and different between sessions, so no static profile can carry it; a
session can measure it, because every answered call reports its real input. After each call the ledger
compares that real input with the estimate it would have made for it (the previous anchor plus its count
of the messages sent after it) and keeps the difference; the next call's growth is estimated with the
lower quartile of the last five differences added.

Only answered calls teach it, so the estimate of a call never uses that call's own usage. The allowance
is never negative: when the profile over-counts a session, the static estimate stands, so learning can
only make compaction come earlier, never later, than the profile alone.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

__all__ = ["QUANTILE", "WINDOW", "GrowthAllowance"]

# The last this many steps: enough that one odd step (a screenshot counted by a fixed guess, a backend
# that counts 1 % differently for one call) does not move the allowance, few enough that a session whose
# per-step remainder changes (a to-do list closed) is followed within a few calls.
WINDOW = 5
# Their lower quartile (the second smallest of five, the smallest of fewer), not their median: what most
# recent steps grew beyond the count, not what a noisy half did. Where the remainder is noise around 0
# (the Gemini trajectories: the gateway answers from two backends whose counts differ by ~1 % of the
# context) a median adds whatever the last few happened to be over and made the anchored error's p95
# 1.06 % instead of 0.96 %; the quartile makes it 1.01 %. Where it is a steady per-step constant (Claude
# Code's 75-200 tokens) both find it (benchmarks/token_estimate.py).
QUANTILE = 0.25


class GrowthAllowance:
    """The per-step remainder of one session: `observe` each answered call's (real input - anchored
    estimate), read `tokens` before the next call."""

    def __init__(self, samples: Iterable[int] = (), *, prior: int = 0, window: int = WINDOW):
        """`prior`: the allowance before the first answered call, for a harness known to send content it
        does not record (Nova records what it sends: 0). It is not a sample: the first one replaces it."""
        if window < 1:
            raise ValueError("window must be at least 1")
        self._samples: deque[int] = deque(samples, maxlen=window)
        self.prior = max(0, int(prior))

    def observe(self, unexplained: int) -> None:
        self._samples.append(int(unexplained))

    @property
    def samples(self) -> tuple[int, ...]:
        """The differences the allowance is the median of, oldest first."""
        return tuple(self._samples)

    @property
    def tokens(self) -> int:
        """Tokens to add to the estimate of one step's growth: the lower quartile of the recent
        remainders (`prior` before there is one), never below 0."""
        if not self._samples:
            return self.prior
        ordered = sorted(self._samples)
        return max(0, ordered[int((len(ordered) - 1) * QUANTILE)])

    def __repr__(self) -> str:
        return f"GrowthAllowance({self.tokens} from {list(self._samples)})"
