"""`edit_file`: replace an exact piece of text in a file.

Exact matching is deliberate: a fuzzy match that lands on the wrong place silently corrupts a file,
while a clear "not found" or "found 3 times" costs the model one more turn. The one allowance is line
endings: a model always writes `\\n`, so in a CRLF file the text is matched with CRLF line endings.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nova.errors import ToolError
from nova.fs.special_files import open_regular
from nova.tools._common import (
    BuiltinTool,
    WorkLimit,
    atomic_write_text,
    display_path,
    looks_binary,
    resolve_path,
)
from nova.tools._schema import object_schema, param
from nova.tools.base import ToolContext, ToolOutput

__all__ = ["EditFileTool"]

SNIPPET_CONTEXT_LINES = 3
MAX_LISTED_LINES = 10
MAX_SNIPPET_LINES = 40
MAX_EDIT_BYTES = 32 * 1024 * 1024
HINT_COMPARISONS = 2_000_000


def _line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def _matches(text: str, needle: str) -> tuple[int, list[int]]:
    """How often `needle` occurs (without overlaps) and where its first MAX_LISTED_LINES occurrences
    start: a one-character `old_text` in a large file occurs millions of times, and a list of every
    position would take gigabytes."""
    count = text.count(needle)
    starts: list[int] = []
    index = text.find(needle)
    while index != -1 and len(starts) < MAX_LISTED_LINES:
        starts.append(index)
        index = text.find(needle, index + len(needle))
    return count, starts


def _whitespace_hint(text: str, old: str, work: WorkLimit) -> str:
    """Point at a line that matches once whitespace is ignored: the commonest reason for "not found"
    is indentation or trailing spaces that differ from the file. Only a hint: it gives up after
    HINT_COMPARISONS line comparisons (a file of many `}` lines against a long `old_text` would take
    their product), or when the call is cancelled or out of time."""
    wanted = [line.strip() for line in old.splitlines() if line.strip()]
    if not wanted:
        return ""
    lines = [line.strip() for line in text.splitlines()]
    budget = HINT_COMPARISONS
    for i, first in enumerate(lines):
        if first != wanted[0]:
            continue
        # The non-blank lines of the next 2n lines must be the n wanted lines.
        found, j, end = 0, i, min(len(lines), i + len(wanted) * 2)
        while found < len(wanted) and j < end:
            if lines[j]:
                if lines[j] != wanted[found]:
                    break
                found += 1
            j += 1
        if found == len(wanted):
            return f" A match that differs only in whitespace starts at line {i + 1}; copy the exact text."
        budget -= j - i + 1
        if budget <= 0 or work.reached():
            return ""
    return ""


def _read_text(path: Path, shown: str) -> str:
    if path.is_dir():
        raise ToolError(f"{shown} is a directory, not a file.")
    if not path.exists():
        raise ToolError(f"file not found: {shown}. Use write_file to create a new file.")
    # Only a regular file is opened, without blocking (a FIFO would hang the call), and only so much of it.
    with open_regular(path, shown) as handle:
        data = handle.read(MAX_EDIT_BYTES + 1) or b""
    if len(data) > MAX_EDIT_BYTES:
        raise ToolError(f"{shown} is over {MAX_EDIT_BYTES // (1024 * 1024)} MB; edit_file only changes files "
                        "smaller than that (use bash for generated or data files).")
    if looks_binary(data):
        raise ToolError(f"{shown} is a binary file; edit_file only changes text files.")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        # Replacing undecodable bytes and writing back would damage the file, so refuse instead.
        raise ToolError(f"{shown} is not valid UTF-8 text; edit_file cannot change it safely.") from None


class EditFileTool(BuiltinTool):
    name = "edit_file"
    read_only = False
    description = (
        "Replace `old_text` with `new_text` in a file. `old_text` must match the file exactly, including "
        "indentation and blank lines, and must occur exactly once unless `replace_all` is true; include "
        "a few surrounding lines to make it unique. Read the file first (line-number prefixes from "
        "read_file are not part of the text). To create a file use `write_file`."
    )
    input_schema: Mapping[str, Any] = object_schema({
        "path": param("string", "File to edit, relative to the working directory or absolute."),
        "old_text": param("string", "The exact text to replace, copied from the file."),
        "new_text": param("string", "The text to put in its place (may be empty to delete)."),
        "replace_all": param("boolean", "Replace every occurrence instead of requiring exactly one. Default false."),
    }, required=["path", "old_text", "new_text"])

    def _run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        path = resolve_path(ctx, args["path"])
        old: str = args["old_text"]
        new: str = args["new_text"]
        replace_all: bool = args.get("replace_all", False)
        shown = display_path(ctx, path)
        if not old:
            raise ToolError("old_text is empty. To write a whole file use write_file.")
        if old == new:
            raise ToolError("old_text and new_text are identical; there is nothing to change.")
        text = _read_text(path, shown)

        count, starts = _matches(text, old)
        if not count and "\r\n" in text and "\n" in old and "\r\n" not in old:
            old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
            count, starts = _matches(text, old)
        if not count:
            raise ToolError(
                f"old_text not found in {shown} — read the file again and copy the exact text "
                f"(indentation, blank lines and all).{_whitespace_hint(text, old, WorkLimit(ctx))}"
            )
        if count > 1 and not replace_all:
            lines = [str(_line_of(text, s)) for s in starts]
            more = ", ..." if count > MAX_LISTED_LINES else ""
            raise ToolError(
                f"old_text matches {count} times in {shown} (at lines {', '.join(lines)}{more}). "
                "Add surrounding lines to old_text so it matches exactly once, or set replace_all=true "
                "to replace every occurrence."
            )

        updated = text.replace(old, new) if replace_all else text.replace(old, new, 1)
        atomic_write_text(path, updated)
        first_line = _line_of(text, starts[0])
        summary = f"Edited {shown}: replaced {count} occurrence{'s' if count > 1 else ''}"
        return ToolOutput(
            content=f"{summary}.\n{_snippet(updated, first_line, new)}",
            metadata={"paths_written": [str(path)], "replacements": count, "first_line": first_line},
        )


def _snippet(text: str, first_line: int, new: str) -> str:
    """The edited region with line numbers, so the model can check the result without a re-read."""
    lines = text.splitlines()
    start = max(1, first_line - SNIPPET_CONTEXT_LINES)
    end = min(len(lines), first_line + new.count("\n") + SNIPPET_CONTEXT_LINES, start + MAX_SNIPPET_LINES - 1)
    return "\n".join(f"{n:>6}\t{lines[n - 1]}" for n in range(start, end + 1))
