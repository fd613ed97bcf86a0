"""Walking a source tree for `grep` and `glob`: glob patterns with `**` and `{a,b}`, noise directories
skipped, symlinked directories not followed (a link back to a parent would loop forever), and the
pseudo-filesystems /proc, /sys and /dev never entered (their files never end or block)."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from functools import lru_cache
from pathlib import Path

from nova.special_files import PSEUDO_FS_ROOTS

__all__ = ["SKIPPED_DIRS", "compile_glob", "walk_files"]

SKIPPED_DIRS = frozenset(
    {".git", ".hg", ".svn", "__pycache__", "node_modules", ".venv", ".mypy_cache", ".ruff_cache",
     ".pytest_cache", ".tox"}
)
"""Version-control internals, caches and installed dependencies: large, generated, and almost never
what a search is for. A search rooted inside one of them still works, since only descendants are
pruned."""


def _expand_braces(pattern: str) -> list[str]:
    """`*.{ts,tsx}` → `*.ts`, `*.tsx` (models write brace sets often; fnmatch does not know them)."""
    match = re.search(r"\{([^{}]*)\}", pattern)
    if match is None:
        return [pattern]
    head, tail = pattern[: match.start()], pattern[match.end() :]
    expanded: list[str] = []
    for option in match.group(1).split(","):
        expanded.extend(_expand_braces(head + option + tail))
    return expanded


def _translate(pattern: str) -> str:
    """One glob (no braces) as a regex over `/`-separated relative paths: `**/` is any number of
    directories (including none), `**` alone anything, `*` and `?` never cross a `/`."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[":
            end = pattern.find("]", i + 2)
            if end == -1:
                out.append(re.escape("["))
                i += 1
                continue
            body = pattern[i + 1 : end]
            if body.startswith("!"):
                body = "^" + body[1:]
            out.append(f"[{body.replace(chr(92), chr(92) * 2)}]")
            i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return "".join(out)


@lru_cache(maxsize=256)
def compile_glob(pattern: str) -> re.Pattern[str]:
    """A regex that full-matches the relative paths `pattern` selects."""
    pattern = pattern.strip().removeprefix("./")
    alternatives = [_translate(p) for p in _expand_braces(pattern)]
    return re.compile("(?:" + "|".join(alternatives) + r")\Z")


def walk_files(root: Path, *, max_depth: int | None = None,
               stop: Callable[[], bool] | None = None) -> Iterator[Path]:
    """Every file under `root`, in a stable order (sorted per directory), noise directories skipped.
    `max_depth` 0 means only files directly in `root`. `stop` is asked at every folder, so a walk through
    thousands of folders with no file of interest still ends when the caller's time is up."""
    # Folder links are not followed, so below `root` the real path is the resolved root plus the rest.
    real_root = Path(os.path.realpath(root))
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        if stop is not None and stop():
            return
        below = Path(dirpath).relative_to(root)
        depth = len(below.parts)
        if max_depth is not None and depth >= max_depth:
            dirnames[:] = []
        else:
            dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED_DIRS
                                 and str(real_root / below / d) not in PSEUDO_FS_ROOTS)
        for name in sorted(filenames):
            yield Path(dirpath, name)
