"""A rich `Console` that never lets what it prints command the terminal.

Rich writes its own styles and cursor moves as escape sequences and passes the text it is given through
as it is: an ESC in a file name, a tool's output or a model's reply reached the terminal raw and was
obeyed (a colour change, a new window title, a cleared screen, a line overwritten). `SafeConsole` runs
every piece of text through `nova.present.text.terminal_safe` as the console writes it out, after
rich has laid it out and before styles are added, so its own sequences stay intact and nothing else is
one. Every CLI command prints through one (`terminal_console`). Markup is a separate matter: text
interpolated into a markup string must still be escaped (`rich.markup.escape`) or printed with
`markup=False`, so that `[link=…]` in a file name stays text too.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from rich.console import Console
from rich.segment import Segment

from nova.present.text import terminal_safe

__all__ = ["SafeConsole", "terminal_console"]


class SafeConsole(Console):
    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.width_asked = options.get("width") is not None

    def print(self, *objects: Any, soft_wrap: bool | None = None, **options: Any) -> None:
        # Into a pipe or a file nobody reads at a width: a line is not cut at rich's default 80 columns
        # (which split figures and paths for grep and logs) unless a width was asked for.
        if (soft_wrap is None and not self.soft_wrap and not self.is_terminal and not self.width_asked
                and not os.environ.get("COLUMNS")):
            soft_wrap = True
        super().print(*objects, soft_wrap=soft_wrap, **options)

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        # Control segments are rich's own cursor moves (live displays); everything else is text.
        return super()._render_buffer(
            segment if segment.control else Segment(terminal_safe(segment.text), segment.style, segment.control)
            for segment in buffer
        )


def terminal_console(**options: Any) -> SafeConsole:
    """A console for a person to read (the same options as `rich.console.Console`)."""
    return SafeConsole(**options)
