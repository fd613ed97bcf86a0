"""A readable timeline of a turn for the terminal, fed by the event bus (`nova run`, `nova demo`).

Everything shown here is someone else's text (the prompt, the model's reply, tool names, commands,
file names, tool output): each piece passes `terminal_safe` and `escape` before it is printed, so it
neither commands the terminal nor opens rich markup."""

from __future__ import annotations

import json
from typing import Any

from rich.console import Console
from rich.markup import escape

from nova import events as ev
from nova.present.text import one_line, terminal_safe

__all__ = ["Timeline", "format_footer"]


def _shown(text: str) -> str:
    return escape(terminal_safe(text))


def _short(value: Any, limit: int = 80) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return one_line(terminal_safe(text), limit)


def _tool_summary(name: str, tool_input: Any) -> str:
    name = terminal_safe(name)
    if isinstance(tool_input, dict):
        for key in ("command", "pattern", "path"):
            if key in tool_input:
                return f"{name} {_short(tool_input[key])}"
    return f"{name} {_short(tool_input)}"


class Timeline:
    """Prints each event as one or two lines. `stream_text` echoes text deltas as they arrive."""

    def __init__(self, console: Console, *, stream_text: bool = False) -> None:
        self.console = console
        self.stream_text = stream_text
        self._streaming = False
        self.step = 0
        self._shown_percent: float | None = None

    def __call__(self, event: ev.Event) -> None:
        c = self.console
        if isinstance(event, ev.TextDelta) and self.stream_text:
            if not self._streaming:
                c.print("[bold green]assistant[/] ", end="")
            c.print(_shown(event.text), end="", soft_wrap=True, highlight=False)
            self._streaming = True
            return
        if self._streaming and not isinstance(event, ev.TextDelta):
            c.print()
            self._streaming = False
        if isinstance(event, ev.TurnStarted):
            c.print(f"[bold cyan]user[/] {escape(_short(event.prompt, 200))}")
        elif isinstance(event, ev.AssistantMessage) and not self.stream_text:
            c.print(f"[bold green]assistant[/] {_shown(event.text)}")
        elif isinstance(event, ev.ToolCallStarted):
            self.step += 1
            c.print(f"  [yellow]→ {escape(_tool_summary(event.name, dict(event.input)))}[/]")
        elif isinstance(event, ev.ToolCallFinished):
            first = event.output.strip().splitlines()[0] if event.output.strip() else "(no output)"
            mark = "[red]✗[/]" if event.is_error else "[green]✓[/]"
            c.print(
                f"    {mark} {len(event.output):,} chars in {event.duration_s:.2f}s: [dim]{escape(_short(first, 90))}[/]"
            )
        elif isinstance(event, ev.PermissionDenied):
            c.print(f"    [red]denied[/] {_shown(event.name)}: {_shown(event.reason)}")
        elif isinstance(event, ev.ContextUpdate):
            # The figure is updated before and after every call; show it when it moved noticeably.
            if self._shown_percent is not None and abs(event.percent - self._shown_percent) < 5:
                return
            self._shown_percent = event.percent
            c.print(f"  [dim]context {context_bar(event.percent)} {event.used:,}/{event.limit:,} "
                    f"({event.percent:.0f}%)[/]")
        elif isinstance(event, ev.CompactionStart):
            c.print(f"  [magenta]compacting[/] {event.message_count} messages, {event.token_count:,} tokens "
                    f"({event.reason})")
        elif isinstance(event, ev.CompactionEnd):
            self._shown_percent = None
            status = "done" if event.ok else f"{'declined' if event.declined else 'failed'}: {_shown(event.error)}"
            if event.ok and event.receipt_text:
                # The receipt already names the sizes, in the words every other surface uses.
                c.print(f"  [magenta]compaction {status}[/] {_shown(event.receipt_text)}")
            else:
                c.print(f"  [magenta]compaction {status}[/] {event.tokens_before:,} → {event.tokens_after:,} tokens")
        # An `ErrorEvent` is not printed: the error ends the command, which prints it once
        # (`nova: error: …`); retries are `nova.cli.progress`'s lines.


def context_bar(percent: float, width: int = 20) -> str:
    filled = max(0, min(width, round(percent / 100 * width)))
    return "█" * filled + "░" * (width - filled)


def format_footer(*, used: int, limit: int, window: int, cost: float | None, cache_hit_rate: float | None) -> str:
    """The closing line of `nova run`: context used, cost and cache hit rate (`nova.present.figures`)."""
    from nova.present.figures import Figures, footer_line

    return footer_line(Figures(model="", used=used, limit=limit, window=window, cost=cost,
                               cache_hit_rate=cache_hit_rate))
