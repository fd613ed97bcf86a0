"""How a session directory is named in the texts the model reads (spill placeholders, snip and cut
notes, the transcript pointer), when that is not its real path.

A replay works in a fresh temporary directory whose name is random: written into the view, it would
change token counts and cache digests from one run to the next, so the same recording would not give the
same figures. Inside `showing(directory, as_name)` every path under `directory` is written as if
`directory` were `as_name`; the files themselves are still written to and read from `directory`.
Outside it (the agent's own sessions) a path is shown as it is.

    with showing(Path(tmp) / "session", "replay-session"):
        ...   # placeholders say "Full output saved to: replay-session/tool-results/x.txt"
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

__all__ = ["showing", "shown_path", "shown_root"]

_SHOWN: ContextVar[tuple[str, str] | None] = ContextVar("nova_shown_paths", default=None)


@contextmanager
def showing(directory: Path, as_name: str) -> Iterator[None]:
    """Within the block, paths under `directory` are shown under `as_name` instead."""
    token = _SHOWN.set((os.path.normpath(directory), as_name))
    try:
        yield
    finally:
        _SHOWN.reset(token)


def shown_path(path: Path | str) -> str:
    """`path` as the model reads it."""
    text = str(path)
    mapping = _SHOWN.get()
    if mapping is None:
        return text
    real, shown = mapping
    if text == real:
        return shown
    if text.startswith(real + os.sep):
        return shown + "/" + text[len(real) + 1:].replace(os.sep, "/")
    return text


def shown_root(directory: Path) -> str | None:
    """The name `directory` is shown under, when it differs from its path (None otherwise)."""
    shown = shown_path(directory)
    return shown if shown != str(directory) else None
