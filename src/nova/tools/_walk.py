"""Walking a source tree for `grep` and `glob`: glob patterns with `**` and `{a,b}`, noise directories
skipped, symlinked directories not followed (a link back to a parent would loop forever), the
pseudo-filesystems /proc, /sys and /dev never entered (their files never end or block), and Nova's own
lock and state files left out (`nova.fs.internal_paths`).

A glob is matched with RE2, like grep's patterns: Python's backtracking `re` takes exponential time on a
glob such as `*a*a*a*a*a*a*a*a*b` against a long file name, inside C code no timeout or cancel can stop.
Brace sets multiply (`{a,b}` twenty times is a million globs), so their expansion is capped."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from nova.errors import ToolError
from nova.fs.internal_paths import NOVA_DIR, is_internal_dir, is_internal_file
from nova.fs.special_files import PSEUDO_FS_ROOTS

__all__ = ["MAX_GLOB_ALTERNATIVES", "SKIPPED_DIRS", "GlobMatcher", "compile_glob", "walk_files"]

MAX_GLOB_ALTERNATIVES = 256
"""The most globs one pattern's brace sets may expand to."""

SKIPPED_DIRS = frozenset(
    {".git", ".hg", ".svn", "__pycache__", "node_modules", ".venv", ".mypy_cache", ".ruff_cache",
     ".pytest_cache", ".tox"}
)
"""Version-control internals, caches and installed dependencies: large, generated, and almost never
what a search is for. A search rooted inside one of them still works, since only descendants are
pruned."""


def _expand_braces(pattern: str) -> list[str]:
    """`*.{ts,tsx}` → `*.ts`, `*.tsx` (models write brace sets often; fnmatch does not know them).
    `ToolError` past MAX_GLOB_ALTERNATIVES globs: the work doubles with every set."""
    match = re.search(r"\{([^{}]*)\}", pattern)
    if match is None:
        return [pattern]
    head, tail = pattern[: match.start()], pattern[match.end() :]
    expanded: list[str] = []
    for option in match.group(1).split(","):
        expanded.extend(_expand_braces(head + option + tail))
        if len(expanded) > MAX_GLOB_ALTERNATIVES:
            raise ToolError(f"the glob's brace sets expand to over {MAX_GLOB_ALTERNATIVES} patterns; "
                            "use fewer `{a,b}` sets or `*`.")
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


def _utf8(path: str) -> bytes:
    try:
        return path.encode("utf-8")
    except UnicodeEncodeError:
        # A name that is not UTF-8 on disk (os.walk gives its bad bytes as surrogates): each bad byte
        # becomes U+FFFD, which `*` and `?` match as they matched the surrogate.
        return path.encode("utf-8", "surrogateescape").decode("utf-8", "replace").encode("utf-8")


@dataclass(frozen=True)
class GlobMatcher:
    regex: Any  # an RE2 pattern over UTF-8 bytes

    def match(self, path: str) -> bool:
        """Whether the relative path (`/`-separated) is one the glob selects, in time linear in its length."""
        return self.regex.fullmatch(_utf8(path)) is not None


@lru_cache(maxsize=256)
def compile_glob(pattern: str) -> GlobMatcher:
    """A matcher for the relative paths `pattern` selects, or `ToolError` saying why there is none.
    RE2 is imported here, not at start-up: only a search needs it."""
    try:
        import re2  # google-re2
    except ImportError:
        raise ToolError("glob patterns need the google-re2 package, which is not installed "
                        "(`pip install google-re2`).") from None
    pattern = pattern.strip().removeprefix("./")
    alternatives = [_translate(p) for p in _expand_braces(pattern)]
    options = re2.Options()
    options.log_errors = False  # the error is the model's to read, not stderr's
    try:
        return GlobMatcher(re2.compile(("(?:" + "|".join(alternatives) + ")").encode("utf-8", "surrogatepass"),
                                       options=options))
    except re2.error as exc:
        detail = exc.args[0] if exc.args else exc
        if isinstance(detail, bytes):
            detail = detail.decode("utf-8", "replace")
        raise ToolError(f"invalid glob {pattern!r}: {detail}.") from None


def walk_files(root: Path, *, max_depth: int | None = None,
               stop: Callable[[], bool] | None = None) -> Iterator[Path]:
    """Every file under `root`, in a stable order (sorted per directory), noise directories skipped.
    `max_depth` 0 means only files directly in `root`. `stop` is asked at every folder, so a walk through
    thousands of folders with no file of interest still ends when the caller's time is up."""
    # Folder links are not followed, so below `root` the real path is the resolved root plus the rest.
    real_root = Path(os.path.realpath(root))
    root_in_nova = NOVA_DIR in Path(os.path.abspath(root)).parts
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        if stop is not None and stop():
            return
        below = Path(dirpath).relative_to(root)
        depth = len(below.parts)
        in_nova = root_in_nova or NOVA_DIR in below.parts
        if max_depth is not None and depth >= max_depth:
            dirnames[:] = []
        else:
            dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED_DIRS
                                 and not is_internal_dir(d, in_nova_dir=in_nova)
                                 and str(real_root / below / d) not in PSEUDO_FS_ROOTS)
        for name in sorted(filenames):
            if not is_internal_file(name, in_nova_dir=in_nova):
                yield Path(dirpath, name)
