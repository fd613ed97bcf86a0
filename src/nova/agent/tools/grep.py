"""`grep`: search file contents with a regular expression, in pure Python (no ripgrep needed)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nova.agent.tools._common import (
    BINARY_SNIFF_BYTES,
    BuiltinTool,
    display_path,
    looks_binary,
    resolve_path,
)
from nova.agent.tools._walk import compile_glob, walk_files
from nova.agent.tools.base import ToolContext, ToolOutput
from nova.errors import ToolError

__all__ = ["GrepTool"]

MAX_MATCHES = 200
MAX_LINE_CHARS = 300
MAX_FILE_BYTES = 5 * 1024 * 1024
"""Larger files are skipped (and counted): they are data or generated, and would dominate the time."""


def _file_matches(path: Path, regex: re.Pattern[str]) -> list[tuple[int, str]] | None:
    """(line number, line) for each matching line, or None when the file is binary."""
    data = path.read_bytes()
    if looks_binary(data[:BINARY_SNIFF_BYTES]):
        return None
    hits: list[tuple[int, str]] = []
    for number, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), start=1):
        if regex.search(line):
            hits.append((number, line))
    return hits


class GrepTool(BuiltinTool):
    name = "grep"
    read_only = True
    description = (
        "Search file contents with a Python regular expression. Returns matching lines as "
        "`path:line: text`, files in sorted order, at most 200 matches. `path` is a file or a directory "
        "(default: the working directory); `glob` keeps only files whose name matches (e.g. `*.py`, "
        "`*.{ts,tsx}`) or, when it contains `/`, whose path relative to `path` matches (e.g. "
        "`src/**/*.py`). Binary files, files over 5 MB and the directories .git, node_modules, .venv and "
        "caches are skipped unless `path` points inside them. Escape regex characters to search for "
        "literal text, e.g. `foo\\(`."
    )
    input_schema: Mapping[str, Any] = {
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "description": "Regular expression (Python `re` syntax)."},
            "path": {
                "type": "string",
                "description": "File or directory to search, relative or absolute. Default: working directory.",
            },
            "glob": {"type": "string", "description": "Only search files matching this glob pattern."},
            "ignore_case": {"type": "boolean", "description": "Match case-insensitively. Default false."},
        },
        "required": ["pattern"],
        "additionalProperties": False,
    }

    def _run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        flags = re.IGNORECASE if args.get("ignore_case", False) else 0
        try:
            regex = re.compile(args["pattern"], flags)
        except re.error as exc:
            raise ToolError(f"invalid regular expression {args['pattern']!r}: {exc}") from None
        root = resolve_path(ctx, args.get("path", "."))
        if not root.exists():
            raise ToolError(f"path not found: {display_path(ctx, root)}")
        name_glob = args.get("glob")
        file_filter = compile_glob(name_glob) if name_glob else None

        lines: list[str] = []
        total = files_with_hits = skipped_large = skipped_binary = 0
        candidates = [root] if root.is_file() else walk_files(root)
        for path in candidates:
            if ctx.cancel.is_set():
                break
            if file_filter is not None and path != root:
                rel = path.relative_to(root).as_posix()
                subject = rel if "/" in (name_glob or "") else path.name
                if not file_filter.match(subject):
                    continue
            try:
                if path.stat().st_size > MAX_FILE_BYTES:
                    skipped_large += 1
                    continue
                hits = _file_matches(path, regex)
            except OSError:
                continue  # vanished or unreadable mid-walk: a search is best effort
            if hits is None:
                skipped_binary += 1
                continue
            if hits:
                files_with_hits += 1
            shown = display_path(ctx, path)
            for number, text in hits:
                total += 1
                if len(lines) < MAX_MATCHES:
                    if len(text) > MAX_LINE_CHARS:
                        text = text[:MAX_LINE_CHARS] + " [...]"
                    lines.append(f"{shown}:{number}: {text}")

        notes: list[str] = []
        if total > MAX_MATCHES:
            notes.append(
                f"[showing the first {MAX_MATCHES} of {total} matches in {files_with_hits} files; "
                "narrow the pattern, path or glob to see the rest]"
            )
        if skipped_large:
            notes.append(f"[{skipped_large} file(s) over {MAX_FILE_BYTES // (1024 * 1024)} MB skipped]")
        if ctx.cancel.is_set():
            notes.append("[search cancelled by the user; results are partial]")
        if not lines:
            where = display_path(ctx, root)
            content = f"No matches for {args['pattern']!r} in {where}" + (f" (glob {name_glob!r})" if name_glob else "")
            return ToolOutput(content="\n".join([content, *notes]), metadata={"matches": 0})
        return ToolOutput(
            content="\n".join(lines + notes),
            metadata={"matches": total, "files": files_with_hits, "truncated": total > MAX_MATCHES,
                      "skipped_binary": skipped_binary},
        )
