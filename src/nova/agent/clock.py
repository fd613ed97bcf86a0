"""The agent loop's clock: how long things took, and the wait before a retry.

One protocol, used the same way in every run: the loop asks `wait` to wait out a back-off and learns
whether the user cancelled meanwhile. `SYSTEM_CLOCK` waits on the cancel event itself, so Ctrl-C (or the
API's cancel) ends the wait at once; `InstantClock` (gathered in `nova.testing`) returns at once and
keeps the waits it was asked for, so a test sees the back-off schedule without sleeping through it.
"""

from __future__ import annotations

import threading
import time
from typing import Protocol

__all__ = ["SYSTEM_CLOCK", "Clock", "InstantClock", "SystemClock"]


class Clock(Protocol):
    def now(self) -> float:
        """Seconds on a monotonic clock (only differences mean anything)."""

    def wait(self, seconds: float, cancel: threading.Event) -> bool:
        """Wait `seconds`, or less if `cancel` is set meanwhile; True when it was cancelled."""


class SystemClock:
    """The real clock: `time.monotonic`, and a wait that `cancel` interrupts."""

    def now(self) -> float:
        return time.monotonic()

    def wait(self, seconds: float, cancel: threading.Event) -> bool:
        return cancel.wait(seconds)


SYSTEM_CLOCK = SystemClock()


class InstantClock:
    """A clock for tests: `wait` returns at once (cancelled when `cancel` is already set), noting each
    wait in `waits` and moving `now` on by it; real time does not pass in between."""

    def __init__(self) -> None:
        self.waits: list[float] = []
        self._now = 0.0

    def now(self) -> float:
        return self._now

    def wait(self, seconds: float, cancel: threading.Event) -> bool:
        self.waits.append(seconds)
        self._now += seconds
        return cancel.is_set()
