"""The TUI's approval prompt: what the call would do, why the person is asked, and one key to answer.

`describe_request` is plain text (no Textual) so the wording can be tested on its own. The widget takes
the focus while it is shown and answers on the key press itself — `y` once, `a` always for this tool in
this session, `n` (or Escape) no — with no Enter to press.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from rich.text import Text
from textual import events
from textual.widgets import Static

from nova.present.diff_text import diff_text
from nova.present.text import terminal_safe
from nova.tools.permissions import PermissionRequest

__all__ = ["ApprovalPrompt", "Choice", "PromptText", "describe_request"]

Choice = Literal["y", "a", "n"]

_VERBS = {
    "bash": "run this command",
    "write_file": "write this file",
    "edit_file": "edit this file",
    "read_file": "read this file",
    "grep": "search in",
    "glob": "list files in",
}
_DETAIL_CHARS = 300


@dataclass(frozen=True, slots=True)
class PromptText:
    question: str
    """`Allow bash to run this command?`"""
    detail: str
    """The command, the path (with what is written), or the call's arguments."""
    why: str
    """`asked because …`: the rule that matched, or the default for tools that change things."""
    keys: str
    diff: str = ""
    """For a file change, the unified diff it would make (terminal-safe; shown under the detail)."""


def _clip(text: str, limit: int = _DETAIL_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def describe_request(request: PermissionRequest) -> PromptText:
    tool, args = request.tool, request.input
    verb = _VERBS.get(tool, "make this call")
    if tool == "bash" and isinstance(args.get("command"), str):
        detail = args["command"]
    elif isinstance(args.get("path"), str):
        detail = args["path"]
        if tool == "write_file" and isinstance(args.get("content"), str):
            detail += f"  ({len(args['content']):,} characters)"
        elif tool == "edit_file" and isinstance(args.get("old_text"), str) and not request.diff:
            old = " ".join(str(args["old_text"]).split())
            new = " ".join(str(args.get("new_text", "")).split())
            detail += f"\n  replace: {_clip(old, 120)}\n  with:    {_clip(new, 120)}"
    else:
        detail = json.dumps(dict(args), ensure_ascii=False, default=str)
    why = f"asked because {request.reason}"
    if request.rule and request.rule not in request.reason:
        why += f" (rule `{request.rule}`)"
    keys = f"y = yes, once    a = always allow {tool} in this session    n = no (the model is told)"
    # The command and the path are the model's: shown as text, so nothing in them can redraw the prompt.
    return PromptText(question=terminal_safe(f"Allow {tool} to {verb}?"), detail=terminal_safe(_clip(detail)),
                      why=terminal_safe(why), keys=terminal_safe(keys), diff=terminal_safe(request.diff))


class ApprovalPrompt(Static, can_focus=True):
    """Shown while the agent's thread waits for the person; one key answers and `on_choice` is called."""

    DEFAULT_CSS = """
    ApprovalPrompt { border: round $warning; padding: 0 1; margin: 1 0 0 0; height: auto; }
    ApprovalPrompt:focus { border: round $accent; }
    """

    def __init__(self, request: PermissionRequest, on_choice: Callable[[Choice], None]) -> None:
        self.request = request
        self.text = describe_request(request)
        self._on_choice = on_choice
        super().__init__(self._render_prompt(), classes="approval")

    def _render_prompt(self) -> Text:
        t = self.text
        out = Text()
        out.append(t.question + "\n", style="bold")
        out.append("  " + t.detail.replace("\n", "\n  ") + "\n", style="bold yellow")
        out.append_text(diff_text(t.diff, indent="  "))
        out.append(f"  {t.why}\n", style="dim")
        out.append(f"  {t.keys}\n")
        out.append("  one key, no Enter (Ctrl-C also answers no)", style="dim")
        return out

    def on_key(self, event: events.Key) -> None:
        choice = answer_for_key(event.key, event.character)
        if choice is None:
            return
        event.stop()
        event.prevent_default()
        self._on_choice(choice)


def answer_for_key(key: str, character: str | None) -> Choice | None:
    """The answer a key press gives, or None for a key that does not answer."""
    if key == "escape":
        return "n"
    letter = (character or "").lower()
    if letter in ("y", "a", "n"):
        return letter  # type: ignore[return-value]
    return None
