"""A unified diff for a terminal: each line coloured by what it does, and shown as text only.

The TUI's approval prompt and `nova run`'s both show the diff a file change would make
(nova.tools.change_preview) this way. The lines are the model's text, so each is made terminal-safe: an
escape sequence in an edit cannot redraw the prompt that asks about it.
"""

from __future__ import annotations

from rich.text import Text

from nova.present.text import terminal_safe

__all__ = ["diff_text"]

_STYLES = (("+++", "bold"), ("---", "bold"), ("@@", "cyan"), ("+", "green"), ("-", "red"), ("\\", "dim"))


def diff_text(diff: str, *, indent: str = "") -> Text:
    """`diff` as styled text, each line after `indent`, ending with a newline ("" gives empty text)."""
    out = Text()
    for line in terminal_safe(diff).splitlines():
        style = next((s for prefix, s in _STYLES if line.startswith(prefix)), "")
        out.append(indent)
        out.append(line, style=style)
        out.append("\n")
    return out
