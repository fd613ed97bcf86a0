"""The recent sessions of one project, for a resume picker (the TUI's `/resume`, `nova resume` at a
terminal): which ones, newest first, and one line to show for each.

A session belongs to the project of the folder it ran in: the same git root when it recorded one, else
the same folder or one inside it. Sub-agent sessions are left out: they are resumed through the session
that started them.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from pathlib import Path

from nova.sessions.meta import SessionMeta, find_git_root

__all__ = ["PICKER_SIZE", "picker_line", "recent_sessions"]

PICKER_SIZE = 10
"""A picker lists this many: past that, naming the session (`nova sessions list`) is quicker."""


def recent_sessions(metas: Iterable[SessionMeta], cwd: Path, *, limit: int = PICKER_SIZE) -> list[SessionMeta]:
    """The top-level sessions of `cwd`'s project, most recently updated first, at most `limit`."""
    root = find_git_root(cwd)
    here = _real(str(cwd))
    mine = [m for m in metas if not m.parent_id and _of_project(m, root, here)]
    mine.sort(key=lambda m: m.updated_at, reverse=True)
    return mine[:limit]


def picker_line(meta: SessionMeta, *, now: float | None = None) -> str:
    """`20260301-… · Fix the failing test · 12 messages · 2 h ago`: what tells two sessions apart."""
    title = " ".join((meta.title or "(untitled)").split())
    if len(title) > 60:
        title = title[:59] + "…"
    count = f"{meta.message_count} message{'' if meta.message_count == 1 else 's'}"
    return f"{meta.id} · {title} · {count} · {_ago(meta.updated_at, time.time() if now is None else now)}"


def _of_project(meta: SessionMeta, root: str, here: str) -> bool:
    if root and meta.git_root:
        return _real(meta.git_root) == _real(root)
    if not meta.cwd:
        return False
    where = _real(meta.cwd)
    return where == here or where.startswith(here.rstrip(os.sep) + os.sep)


def _real(path: str) -> str:
    try:
        return os.path.realpath(path)
    except (OSError, ValueError):
        return path


def _ago(then: float, now: float) -> str:
    if not then:
        return "never updated"
    seconds = max(0.0, now - then)
    for size, unit in ((86400, "d"), (3600, "h"), (60, "min")):
        if seconds >= size:
            return f"{int(seconds // size)} {unit} ago"
    return "just now"
