"""What an `edit_file` or `write_file` call would change, as a unified diff, before it runs.

Every surface that asks the person about such a call (the TUI, `nova run` at a terminal, the web page)
shows this same text, so it is computed once, when the permission policy builds the request
(`PermissionRequest.diff`). The file is read the way the tools read it (regular files only, never one
that could block) and the change is applied the way the tool applies it (CRLF files matched with CRLF,
`replace_all`); a call that would fail (text not found, a binary or huge file) has no diff, and the
prompt shows its arguments as before.

The diff is clipped to `MAX_DIFF_LINES`: a prompt is for deciding, and a rewrite of a whole large file
is still readable from its first hundred changed lines plus the count of the rest.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nova.fs.special_files import read_regular_text

__all__ = ["MAX_DIFF_LINES", "change_diff"]

MAX_DIFF_LINES = 120
MAX_PREVIEW_BYTES = 2 * 1024 * 1024
"""A larger file is not read for a preview: the prompt must show at once, not after a long read."""
_CONTEXT_LINES = 3


def change_diff(tool: str, input: Mapping[str, Any], cwd: Path) -> str:
    """The unified diff `tool` would make with `input` in `cwd` (`--- a/PATH`, `+++ b/PATH`, hunks),
    or "" when it is not a file change or would not apply."""
    try:
        return _diff(tool, input, cwd)
    except (OSError, ValueError):  # a path the system refuses (a NUL byte, too long): no preview
        return ""


def _diff(tool: str, input: Mapping[str, Any], cwd: Path) -> str:
    raw = input.get("path")
    if tool not in ("edit_file", "write_file") or not isinstance(raw, str) or not raw.strip():
        return ""
    path = Path(os.path.normpath(cwd / Path(raw).expanduser()))
    shown = _shown(path, cwd)
    exists = path.exists()
    before = read_regular_text(path, max_bytes=MAX_PREVIEW_BYTES) if exists else ""
    if before is None:
        return ""
    if tool == "write_file":
        after = input.get("content")
        if not isinstance(after, str):
            return ""
    else:
        after = _edited(before, input) if exists else None
        if after is None:
            return ""
    if before == after:
        return ""
    lines = list(difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True),
        fromfile="/dev/null" if not exists else f"a/{shown}", tofile=f"b/{shown}", n=_CONTEXT_LINES))
    return _clip([line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines])


def _edited(text: str, input: Mapping[str, Any]) -> str | None:
    old, new = input.get("old_text"), input.get("new_text")
    if not isinstance(old, str) or not isinstance(new, str) or not old:
        return None
    # As edit_file does: a model writes "\n"; in a CRLF file the text is matched with CRLF.
    if old not in text and "\r\n" in text and "\n" in old and "\r\n" not in old:
        old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
    count = text.count(old)
    if count == 0 or (count > 1 and input.get("replace_all") is not True):
        return None
    return text.replace(old, new) if count > 1 else text.replace(old, new, 1)


def _shown(path: Path, cwd: Path) -> str:
    try:
        return str(path.relative_to(cwd)) or "."
    except ValueError:
        return str(path).lstrip("/")


def _clip(lines: list[str]) -> str:
    text = "".join(lines)
    rows = text.splitlines(keepends=True)
    if len(rows) <= MAX_DIFF_LINES:
        return text
    return "".join(rows[:MAX_DIFF_LINES]) + f"… {len(rows) - MAX_DIFF_LINES} more diff lines not shown\n"
