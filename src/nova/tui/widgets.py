"""The TUI's widgets: the context bar (TUI-1), a collapsible tool call, and message blocks.

What they show of messages, tool calls and their output is someone else's text: it passes
`terminal_safe` (nothing in it reaches the terminal as a control sequence), goes in as a rich `Text`
(never parsed as markup), and the one string Textual does parse, a tool call's title, is escaped."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

from rich.text import Text
from textual.markup import escape
from textual.widgets import Collapsible, Static

from nova.present.figures import Figures, status_line
from nova.present.progress import Waiting
from nova.present.text import terminal_safe
from nova.tui.gauge import ContextGauge

__all__ = ["ContextBar", "MessageBlock", "ProgressLine", "StatusFooter", "ToolCall", "describe_call"]

BAR_CELLS = 30
MIN_BAR_CELLS = 10
_LEVEL_STYLES = {"ok": "green", "warn": "yellow", "critical": "bold red"}


class ContextBar(Static):
    """`context 42.0%  6,720 / 16,000 tokens` with a bar; amber near the limit, red at it."""

    DEFAULT_CSS = """
    ContextBar { height: 1; padding: 0 1; background: $panel; }
    """

    def __init__(self, gauge: ContextGauge, **kw: Any) -> None:
        super().__init__("", **kw)
        self.gauge = gauge

    def on_mount(self) -> None:
        self.refresh_gauge()

    def refresh_gauge(self) -> None:
        style = _LEVEL_STYLES[self.gauge.level]
        label = f" {self.gauge.label()}"
        # The bar gives way to the words on a narrow terminal: the line is one row, and a label that wraps
        # loses its end ("compacts at 28,160" at 80 columns).
        room = self.size.width - 2 if self.size.width else None
        cells = BAR_CELLS if room is None else max(MIN_BAR_CELLS, min(BAR_CELLS, room - len(label)))
        filled = self.gauge.filled(cells)
        line = Text(no_wrap=True, overflow="ellipsis")
        line.append("█" * filled, style=style)
        line.append("░" * (cells - filled), style="dim")
        line.append(label, style=style if self.gauge.level != "ok" else "")
        self.update(line)

    def on_resize(self) -> None:
        self.refresh_gauge()


class ProgressLine(Static):
    """`⠹ waiting for the model · 3.2 s` while a request has no answer, or the countdown to the next
    attempt after a retryable error; hidden otherwise. Redrawn ten times a second while shown."""

    DEFAULT_CSS = """
    ProgressLine { height: 1; padding: 0 1; color: $text-muted; }
    """

    def __init__(self, **kw: Any) -> None:
        super().__init__("", **kw)
        self.waiting = Waiting()
        self.display = False

    def on_mount(self) -> None:
        self.set_interval(0.1, self._redraw)

    def apply(self, event: Any) -> None:
        if self.waiting.apply(event, time.monotonic()):
            self.display = self.waiting.active
            self._redraw()

    @property
    def text(self) -> str:
        return self.waiting.line(time.monotonic())

    def _redraw(self) -> None:
        if self.waiting.active:
            self.update(Text(terminal_safe(self.text) + "   (Ctrl-C cancels)"))


class StatusFooter(Static):
    """The bottom line: model, context figure, the session's cost and cache hit rate (`nova.present.figures`,
    the numbers `nova run` prints), and the keys."""

    DEFAULT_CSS = """
    StatusFooter { dock: bottom; height: 1; padding: 0 1; background: $panel; color: $text-muted; }
    """

    KEYS = "   ^C cancel · ^Q quit"

    def __init__(self, **kw: Any) -> None:
        super().__init__("", **kw)
        self.line = ""
        self.figures: Figures | None = None

    def show(self, figures: Figures) -> None:
        self.figures = figures
        self._draw()

    def _draw(self) -> None:
        """The longest form of the figures that fits the width (`status_line`), the keys when they fit too."""
        if self.figures is None:
            return
        # Before the first layout the width is not known: the whole line, which the resize then fits.
        room = self.size.width - 2 if self.size.width else None
        self.line = status_line(self.figures, room)
        keys = self.KEYS if room is not None and len(self.line) + len(self.KEYS) <= room else ""
        self.update(Text(self.line + keys, no_wrap=True, overflow="ellipsis"))

    def on_resize(self) -> None:
        if self.figures is not None:
            self._draw()


def describe_call(name: str, arguments: Mapping[str, Any], width: int = 70) -> str:
    text = terminal_safe(", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in arguments.items()))
    if len(text) > width:
        text = text[: width - 1] + "…"
    return f"{terminal_safe(name)}({text})"


class ToolCall(Collapsible):
    """One tool call, collapsed: the title says what ran and how it ended; expand for input and output.

    The output widget is created with the call and filled in by `finish`, so a call can be finished
    before Textual has composed it (a resumed session replays a call and its result in one go, before
    the next refresh) without looking for children that do not exist yet."""

    def __init__(self, tool_use_id: str, name: str, arguments: Mapping[str, Any]) -> None:
        self.tool_use_id = tool_use_id
        self.call = describe_call(name, arguments)
        self.output = ""
        self.is_error = False
        body = Static(Text(terminal_safe(json.dumps(dict(arguments), indent=2, ensure_ascii=False), json=True)),
                      classes="tool-input")
        self._output = Static("", classes="tool-output")
        self._output.display = False
        super().__init__(body, self._output, title=f"⋯ {escape(self.call)}", collapsed=True, classes="tool-call")

    @property
    def finished(self) -> bool:
        return self.title[:1] in ("✓", "✗")

    def finish(self, output: str, *, is_error: bool) -> None:
        self.output, self.is_error = output, is_error
        self.title = f"{'✗' if is_error else '✓'} {escape(self.call)}"
        shown = output if len(output) <= 4000 else output[:4000] + f"\n… ({len(output):,} characters in all)"
        self._output.update(Text(terminal_safe(shown)))
        self._output.set_class(is_error, "error")
        self._output.display = True


class MessageBlock(Static):
    """A message's text; the assistant's grows as deltas arrive."""

    def __init__(self, role: str, text: str = "") -> None:
        super().__init__("", classes=f"message {role}")
        self.role = role
        self.text = text
        self._render_text()

    def append(self, delta: str) -> None:
        self.text += delta
        self._render_text()

    def _render_text(self) -> None:
        label = "you" if self.role == "user" else "nova" if self.role == "assistant" else self.role
        line = Text()
        line.append(f"{label}: ", style="bold cyan" if self.role == "user" else "bold magenta")
        line.append(terminal_safe(self.text))
        self.update(line)
