"""`ContextGauge`: what the context bar above the input shows (TUI-1), with no Textual in it.

It holds the last `ContextUpdate` the agent emitted, which is `agent.context_status()` — the same figure
the compaction decision, `GET …/context` and the web page use (TOK-3) — and whether a compaction is
running. The web page uses the same levels (`static/app.js`): amber from 80 %, red from 95 %.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from nova import events as ev

__all__ = ["CRITICAL_PERCENT", "WARN_PERCENT", "ContextGauge"]

WARN_PERCENT = 80.0
CRITICAL_PERCENT = 95.0
Level = Literal["ok", "warn", "critical"]


@dataclass
class ContextGauge:
    used: int = 0
    limit: int = 0
    window: int = 0
    percent: float = 0.0
    compacting: bool = False
    measured: bool = False
    """False until the first figure of a conversation arrives: the bar then shows the window and
    the threshold (from the settings) instead of a meaningless "0 / 0 tokens"."""

    def apply(self, event: ev.Event) -> bool:
        """Take an event; True when the bar must be redrawn."""
        if isinstance(event, ev.ContextUpdate):
            self.used, self.limit, self.window, self.percent = event.used, event.limit, event.window, event.percent
            self.measured = True
            return True
        if isinstance(event, ev.CompactionStart):
            self.compacting = True
            return True
        if isinstance(event, ev.CompactionEnd):
            self.compacting = False
            return True
        return False

    @property
    def level(self) -> Level:
        if self.percent >= CRITICAL_PERCENT:
            return "critical"
        if self.percent >= WARN_PERCENT:
            return "warn"
        return "ok"

    @property
    def percent_text(self) -> str:
        # One decimal, as `context_percent` rounds it and as the page shows it.
        return f"{self.percent:.1f}%"

    def reset(self, *, limit: int, window: int) -> None:
        """A new conversation: nothing measured yet, the budget known from the settings."""
        self.used, self.limit, self.window, self.percent = 0, limit, window, 0.0
        self.compacting, self.measured = False, False

    def label(self) -> str:
        if not self.measured:
            return f"context: nothing sent yet · window {self.window:,} · compacts at {self.limit:,}"
        state = "  compacting…" if self.compacting else ""
        return f"context {self.percent_text}  {self.used:,} / {self.limit:,} tokens{state}"

    def filled(self, width: int) -> int:
        """Cells of a `width`-cell bar to fill; full at 100 % (the trigger), never more."""
        return max(0, min(width, round(width * self.percent / 100.0)))
