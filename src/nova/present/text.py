"""Text shown to a person in one line: what a table cell, a list entry or a preview holds."""

from __future__ import annotations

__all__ = ["one_line"]


def one_line(text: str, limit: int) -> str:
    """`text` with every run of whitespace (newlines included) made one space, cut to `limit` characters
    with "…" as the last one when it is longer."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"
