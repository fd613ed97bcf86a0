"""What a surface shows while the model has not answered yet: the time waited, or the countdown to
the next attempt after a retryable error. Fed by the loop's events; no terminal or widget code here,
so the CLI (`nova.cli.progress`) and the TUI (`nova.tui.widgets.ProgressLine`) say the same thing.
"""

from __future__ import annotations

from dataclasses import dataclass

from nova import events as ev

__all__ = ["SPINNER", "Waiting"]

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"

# Anything the model sends, or the end of the turn, ends the wait.
_ENDS_WAIT = (ev.ModelResponding, ev.TextDelta, ev.AssistantMessage, ev.ToolCallStarted, ev.ErrorEvent,
              ev.TurnFinished)


@dataclass
class Waiting:
    since: float | None = None
    """When the current request was sent (monotonic seconds); None when nothing is awaited."""
    retry: ev.RetryScheduled | None = None
    retry_at: float = 0.0

    @property
    def active(self) -> bool:
        return self.since is not None or self.retry is not None

    def apply(self, event: ev.Event, now: float) -> bool:
        """Take an event; True when the wait started, ended or changed."""
        if isinstance(event, ev.ModelCallStarted):
            self.since, self.retry = now, None
            return True
        if isinstance(event, ev.RetryScheduled):
            self.since, self.retry, self.retry_at = None, event, now + event.delay_s
            return True
        if isinstance(event, _ENDS_WAIT) and self.active:
            self.since, self.retry = None, None
            return True
        return False

    def line(self, now: float) -> str:
        """`⠹ waiting for the model · 3.2 s`, or `⠹ next attempt in 1.4 s (attempt 2 of 4)`; "" when idle."""
        frame = SPINNER[int(now * 10) % len(SPINNER)]
        if self.retry is not None:
            left = max(0.0, self.retry_at - now)
            return f"{frame} next attempt in {left:.1f} s (attempt {self.retry.attempt} of {self.retry.max_attempts})"
        if self.since is not None:
            return f"{frame} waiting for the model · {now - self.since:.1f} s"
        return ""
