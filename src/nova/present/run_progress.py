"""A progress bar on stderr for long offline runs (`nova eval`, `nova replay`): one step per simulated call.

Shown only when stderr is a terminal and only once the run has lasted `DELAY_S` (a run of a second
never flashes a bar). Piped stderr, and so `--json` output captured by a tool, gets nothing. The bar is
rich's, drawn transiently: it is erased when the run ends, before the report is printed.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from types import TracebackType
from typing import TextIO

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from nova.present.terminal import terminal_console

__all__ = ["DELAY_S", "RunProgress"]

DELAY_S = 2.0


class RunProgress:
    """`with RunProgress(total, label=...) as bar: ... bar.advance()`; `terminal` defaults to the stream's
    own answer (`isatty`), `clock` is for tests."""

    def __init__(self, total: int, *, label: str, stream: TextIO, terminal: bool | None = None,
                 delay_s: float | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.total = total
        self.label = label
        self.stream = stream
        self.terminal = stream.isatty() if terminal is None else terminal
        self.delay_s = DELAY_S if delay_s is None else delay_s
        self.clock = clock
        self.done = 0
        self._start = clock()
        self._bar: Progress | None = None

    def advance(self) -> None:
        self.done += 1
        if not self.terminal:
            return
        if self._bar is None and self.clock() - self._start >= self.delay_s:
            self._bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TimeRemainingColumn(), console=terminal_console(file=self.stream, force_terminal=True),
                                 transient=True)
            self._bar.add_task(self.label, total=self.total or None, completed=self.done)
            self._bar.start()
        elif self._bar is not None:
            self._bar.update(self._bar.task_ids[0], completed=self.done)

    def close(self) -> None:
        bar, self._bar = self._bar, None
        if bar is not None:
            bar.stop()

    def __enter__(self) -> RunProgress:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
