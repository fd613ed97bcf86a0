"""Text shown to a person: one line for a table cell, a list entry or a preview; and text made safe for a
terminal, whatever file name, tool output or model reply it came from."""

from __future__ import annotations

__all__ = ["one_line", "terminal_safe"]


def one_line(text: str, limit: int) -> str:
    """`text` with every run of whitespace (newlines included) made one space, cut to `limit` characters
    with "…" as the last one when it is longer."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _visible(code: int) -> str:
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _json_escape(code: int) -> str:
    return f"\\u{code:04x}"


# What a terminal would act on rather than show: the C0 controls (ESC starts every escape sequence;
# CR, BS and the like move the cursor over what was printed), DEL, the C1 controls (U+009B is a
# one-character CSI on terminals that honour C1), and the invisible format characters that reorder or
# hide text (bidirectional marks, overrides and isolates, zero-width space and word joiners, the BOM):
# a file name can use any of them to rewrite the screen or to show something other than what it is.
# Newline and tab stay text, and so do the zero-width (non-)joiners that emoji and scripts are built with.
_UNSAFE = {code: _visible(code)
           for code in (*range(0x00, 0x20), *range(0x7F, 0xA0), 0x061C, 0x200B, 0x200E, 0x200F, *range(0x202A, 0x202F),
                        *range(0x2060, 0x2065), *range(0x2066, 0x206A), 0xFEFF)
           if code not in (0x09, 0x0A)}
_UNSAFE_IN_JSON = {code: _json_escape(code) for code in _UNSAFE}


def terminal_safe(text: str, *, json: bool = False) -> str:
    """`text` with every character a terminal would interpret instead of print (see `_UNSAFE`) written out
    visibly as `\\x1b`, `\\u202e` …, so what reaches the screen is text and never a command to it. A
    Windows line ending stays a line ending. `json=True` is for a JSON document (`json.dumps(...,
    ensure_ascii=False)` leaves DEL, C1 and format characters raw): they become `\\u009b` escapes,
    which decode to the same string, so the output is the same JSON and still safe to show."""
    if json:
        return text.translate(_UNSAFE_IN_JSON)
    return text.replace("\r\n", "\n").translate(_UNSAFE)
