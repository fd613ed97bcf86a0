"""`nova run`'s progress on stderr: a spinner with the time waited while the model has not answered,
and one line per retry (`nova: retrying in 2.0 s (attempt 2 of 4): 529 overloaded`).

On a terminal the spinner redraws one line in place and erases it before anything else is printed
(the events arrive on the agent's thread, in order, so the answer never lands on a spinner). Piped,
there is no spinner: only the retry lines, plain. `--json` subscribes none of this.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TextIO

from nova import events as ev
from nova.present.progress import Waiting
from nova.present.text import terminal_safe

__all__ = ["TerminalProgress"]

TICK_S = 0.1
_ERASE = "\r\x1b[2K"


class TerminalProgress:
    """An event-bus subscriber. `terminal` decides spinner or plain lines; `clock` is for tests."""

    def __init__(self, stream: TextIO, *, terminal: bool, clock: Callable[[], float] = time.monotonic) -> None:
        self.stream = stream
        self.terminal = terminal
        self.clock = clock
        self.waiting = Waiting()
        self._lock = threading.Lock()
        self._drawn = False
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None

    def __call__(self, event: ev.Event) -> None:
        if not self.waiting.apply(event, self.clock()):
            return
        if isinstance(event, ev.RetryScheduled):
            with self._lock:
                self._erase()
                self.stream.write(terminal_safe(f"nova: {event.describe()}") + "\n")
                self.stream.flush()
        if not self.terminal:
            return
        if self.waiting.active:
            self._start_ticker()
            self._draw()
        else:
            self.close()

    def close(self) -> None:
        """Stop the spinner and erase its line (the turn ended, or the model answered)."""
        self._stop.set()
        ticker, self._ticker = self._ticker, None
        if ticker is not None and ticker is not threading.current_thread():
            ticker.join()
        with self._lock:
            self._erase()

    def _start_ticker(self) -> None:
        if self._ticker is not None:
            return
        self._stop.clear()
        self._ticker = threading.Thread(target=self._tick, name="nova-progress", daemon=True)
        self._ticker.start()

    def _tick(self) -> None:
        while not self._stop.wait(TICK_S):
            self._draw()

    def _draw(self) -> None:
        with self._lock:
            line = self.waiting.line(self.clock())
            if not line:
                return
            self.stream.write(f"{_ERASE}{line}  (Ctrl-C stops)")
            self.stream.flush()
            self._drawn = True

    def _erase(self) -> None:
        if self._drawn:
            self.stream.write(_ERASE)
            self.stream.flush()
            self._drawn = False
