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
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nova.fs.special_files import read_regular_text

__all__ = ["MAX_DIFF_LINES", "MAX_MATCH_PAIRS", "change_diff"]

MAX_DIFF_LINES = 120
MAX_PREVIEW_BYTES = 2 * 1024 * 1024
"""A larger file is not read for a preview: the prompt must show at once, not after a long read."""
_CONTEXT_LINES = 3
MAX_MATCH_PAIRS = 4_000_000
"""Changed lines before times after, past which no line-by-line match is tried (it grows with their
product: two unrelated 5,000-line files would keep the prompt waiting)."""
_HUNK = re.compile(r"^@@ -(\d+)(,\d+)? \+(\d+)(,\d+)? @@")


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
    shown_from = "/dev/null" if not exists else f"a/{shown}"
    lines = [f"--- {shown_from}\n", f"+++ b/{shown}\n",
             *_hunks(before.splitlines(keepends=True), after.splitlines(keepends=True))]
    return _clip([line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines])


def _hunks(a: list[str], b: list[str]) -> list[str]:
    """The hunks of the unified diff from `a` to `b`. The lines both share at the start and the end are
    set aside first (an edit changes a few lines of a long file), so the matcher sees only the changed
    middle; a middle too large to match line by line at the moment of asking is shown as all removed,
    then all added."""
    head, limit = 0, min(len(a), len(b))
    while head < limit and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < limit - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    lo = max(0, head - _CONTEXT_LINES)
    a_hi, b_hi = min(len(a), len(a) - tail + _CONTEXT_LINES), min(len(b), len(b) - tail + _CONTEXT_LINES)
    a_mid, b_mid = a[head:len(a) - tail], b[head:len(b) - tail]
    if len(a_mid) * len(b_mid) <= MAX_MATCH_PAIRS:
        hunks = list(difflib.unified_diff(a[lo:a_hi], b[lo:b_hi], n=_CONTEXT_LINES))[2:]
        # Numbered from the window's start: moved back to the file's own line numbers.
        return [_HUNK.sub(lambda m: f"@@ -{int(m[1]) + lo}{m[2] or ''} +{int(m[3]) + lo}{m[4] or ''} @@", line)
                if line.startswith("@@") else line for line in hunks]
    return [f"@@ -{_range(lo, a_hi - lo)} +{_range(lo, b_hi - lo)} @@\n",
            *(" " + line for line in a[lo:head]), *("-" + line for line in a_mid),
            *("+" + line for line in b_mid), *(" " + line for line in a[len(a) - tail:a_hi])]


def _range(start: int, length: int) -> str:
    """A hunk's range as unified diffs write it: 1-based, an empty range names the line before it."""
    first = start + 1 if length else start
    return str(first) if length == 1 else f"{first},{length}"


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
