"""`/resume` with no argument: the recent sessions of this project, to choose one with a key.

Up and Down move, Enter chooses; a digit 1–9 chooses that row at once; Escape closes the list without
choosing. The rows are `nova.sessions.recent`'s, the same ones `nova resume` numbers at a terminal.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rich.text import Text
from textual import events
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from nova.present.text import terminal_safe
from nova.sessions.meta import SessionMeta
from nova.sessions.recent import picker_line

__all__ = ["SessionPicker"]


class SessionPicker(OptionList):
    """Calls `on_choice` with the chosen session's id, or None when the person closes the list."""

    DEFAULT_CSS = """
    SessionPicker { border: round $accent; height: auto; max-height: 14; margin: 1 0 0 0; }
    """

    def __init__(self, sessions: Sequence[SessionMeta], on_choice: Callable[[str | None], None], *,
                 current: str | None = None) -> None:
        # Titles are the person's first words but may hold anything: shown as text.
        options = [Option(Text(f"{n}. {terminal_safe(picker_line(meta))}" + ("  (open now)" if meta.id == current
                                                                            else "")), id=meta.id)
                   for n, meta in enumerate(sessions, start=1)]
        super().__init__(*options, classes="session-picker")
        self.border_title = "Resume which session?  Enter or 1–9 chooses · Esc closes"
        self._on_choice = on_choice
        self._done = False

    def on_mount(self) -> None:
        self.highlighted = 0  # Enter chooses the newest unless the person moves

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self._choose(event.option.id)

    def on_key(self, event: events.Key) -> None:
        if event.key == "escape":
            event.stop()
            self._choose(None)
        elif event.character and event.character.isdigit() and event.character != "0":
            index = int(event.character) - 1
            if index < self.option_count:
                event.stop()
                self._choose(self.get_option_at_index(index).id)

    def _choose(self, session_id: str | None) -> None:
        if self._done:
            return
        self._done = True
        self._on_choice(session_id)
