"""`glob`: find files by name pattern, most recently modified first."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nova.errors import ToolError
from nova.tools._common import BuiltinTool, WorkLimit, display_path, resolve_path
from nova.tools._schema import object_schema, param
from nova.tools._walk import compile_glob, walk_files
from nova.tools.base import ToolContext, ToolOutput
from nova.tools.policy.read_policy import SkipTally

__all__ = ["GlobTool"]

MAX_RESULTS = 200


class GlobTool(BuiltinTool):
    name = "glob"
    read_only = True
    description = (
        "Find files whose path, relative to `path` (default: the working directory), matches a glob "
        "pattern: `*` and `?` stay within one directory, `**/` spans any number of directories, "
        "`{a,b}` gives alternatives. Examples: `**/*.py`, `src/**/test_*.py`, `*.{md,txt}` (top level "
        "only). Returns file paths, most recently modified first, at most 200. The directories .git, "
        "node_modules, .venv and caches are skipped unless `path` points inside them, and files the "
        "permission rules forbid reading are never listed."
    )
    input_schema: Mapping[str, Any] = object_schema({
        "pattern": param("string", "Glob pattern, e.g. `**/*.py`."),
        "path": param("string", "Directory to search from, relative or absolute. Default: working directory."),
    }, required=["pattern"])

    def _run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        pattern: str = args["pattern"]
        if not pattern.strip():
            raise ToolError("the pattern is empty; try `**/*` for every file.")
        root = resolve_path(ctx, args.get("path", "."))
        if not root.is_dir():
            kind = "not a directory" if root.exists() else "not found"
            raise ToolError(f"path {display_path(ctx, root)} is {kind}; glob searches a directory.")
        if Path(pattern).is_absolute():
            raise ToolError("the pattern must be relative; put the directory in `path` instead.")
        regex = compile_glob(pattern)
        # Without `**` a match can be no deeper than the pattern has segments, so walking deeper is waste.
        max_depth = None if "**" in pattern else pattern.strip().removeprefix("./").count("/")

        screen = ctx.file_screen()
        limit = WorkLimit(ctx)
        hidden = SkipTally()
        found: list[tuple[float, str]] = []
        for path in walk_files(root, max_depth=max_depth, stop=limit.reached):
            if limit.reached():
                break
            rel = path.relative_to(root).as_posix()
            if regex.match(rel):
                skip = screen.check(path, search_root=root, contents=False)
                if skip is not None:
                    hidden.add(skip, display_path(ctx, path))
                    continue
                try:
                    mtime = path.stat().st_mtime
                except OSError:
                    continue
                found.append((mtime, display_path(ctx, path)))
        found.sort(key=lambda item: (-item[0], item[1]))
        notes = hidden.notes()
        stop_note = limit.note("listing")
        if stop_note:
            notes.append(stop_note)
        metadata = {"count": len(found), "truncated": len(found) > MAX_RESULTS, "skipped_denied": hidden.denied,
                    "stopped": limit.stopped}
        if not found:
            return ToolOutput(content="\n".join([f"No files match {pattern!r} in {display_path(ctx, root)}.", *notes]),
                              metadata=metadata)
        shown = [name for _, name in found[:MAX_RESULTS]]
        if len(found) > MAX_RESULTS:
            shown.append(f"[showing the {MAX_RESULTS} most recently modified of {len(found)} files; "
                         "narrow the pattern or path to see the rest]")
        return ToolOutput(content="\n".join(shown + notes), metadata=metadata)
