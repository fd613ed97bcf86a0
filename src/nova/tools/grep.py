"""`grep`: search file contents with a regular expression, in-process (no ripgrep needed).

The regex engine is RE2 (the `google-re2` package), not Python's `re`: a backtracking engine takes
exponential time on patterns like `(a+)+$` against a long line, and a search running inside C code
cannot be interrupted, so neither a timeout nor the user's cancel could stop it. RE2 matches in time
linear in the input whatever the pattern; the price is that backreferences and lookaround, which no
linear-time engine can offer, are refused with a message saying so.

Each file is searched whole, with `^`/`$` matching at line ends and no match crossing a newline, so a
match is always within one line, as with grep. Only regular files are opened (nova.fs.special_files),
never more than `MAX_FILE_BYTES` of one; /proc, /sys and /dev are not searched. What a directory search
may show of each file is decided by the session's read policy (nova.tools.policy.read_policy): denied files
are left out and counted, files that need approval are left out and named.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from nova.errors import ToolError
from nova.fs.special_files import NotRegularFile, in_pseudo_fs, open_regular
from nova.tools._common import BuiltinTool, WorkLimit, display_path, looks_binary, resolve_path
from nova.tools._schema import object_schema, param
from nova.tools._walk import compile_glob, walk_files
from nova.tools.base import ToolContext, ToolOutput
from nova.tools.policy.read_policy import SkipTally

__all__ = ["GrepTool", "compile_pattern"]

MAX_MATCHES = 200
MAX_LINE_CHARS = 300
MAX_FILE_BYTES = 5 * 1024 * 1024
"""Larger files are skipped (and counted): they are data or generated, and would dominate the time."""

CHECK_EVERY_HITS = 4096
"""How often the user's cancel and the call's time limit are checked while listing one file's matches."""

_UNSUPPORTED = re.compile(r"\\[1-9]|\(\?<?[=!]|\(\?P=")


def compile_pattern(pattern: str, *, ignore_case: bool = False) -> Any:
    """`pattern` compiled with RE2 for searching whole files line by line, or `ToolError` saying why
    not. Imported here, not at start-up: only a grep needs it."""
    try:
        import re2  # google-re2
    except ImportError:
        raise ToolError("grep needs the google-re2 package, which is not installed "
                        "(`pip install google-re2`).") from None
    options = re2.Options()
    options.log_errors = False  # the error is the model's to read, not stderr's
    options.never_nl = True  # grep semantics: no match spans a newline
    source = ("(?i)" if ignore_case else "") + "(?m)" + pattern
    try:
        return re2.compile(source.encode("utf-8", "surrogatepass"), options=options)
    except re2.error as exc:
        detail = exc.args[0] if exc.args else exc
        if isinstance(detail, bytes):
            detail = detail.decode("utf-8", "replace")
        hint = ""
        if _UNSUPPORTED.search(pattern):
            hint = (" grep uses RE2, which matches in linear time and so has no backreferences (\\1) or "
                    "lookaround ((?=...), (?!...), (?<=...)); search for a simpler pattern and check the "
                    "lines it finds, or use bash.")
        raise ToolError(f"invalid regular expression {pattern!r}: {detail}.{hint}") from None


def matching_lines(data: bytes, regex: Any) -> Iterator[tuple[int, bytes]]:
    """(line number, line) for each line of `data` the regex matches, one search per matching line."""
    if b"\r" in data:
        data = data.replace(b"\r\n", b"\n")  # so `$` matches at the end of a CRLF line too
    size = len(data)
    pos, line_no, counted_to = 0, 1, 0
    while pos < size:
        match = regex.search(data, pos)
        if match is None:
            return
        start = match.start()
        if start == size and data.endswith(b"\n"):
            return  # the empty "line" after the last newline is not a line
        line_start = data.rfind(b"\n", 0, start) + 1
        line_end = data.find(b"\n", start)
        if line_end == -1:
            line_end = size
        line_no += data.count(b"\n", counted_to, line_start)
        counted_to = line_start
        yield line_no, data[line_start:line_end]
        pos = line_end + 1


def _read_capped(path: Path, shown: str) -> bytes | None:
    """The file's bytes, or None when it is over the cap. `NotRegularFile` for anything else."""
    with open_regular(path, shown) as handle:
        data = handle.read(MAX_FILE_BYTES + 1)
    return None if data is None or len(data) > MAX_FILE_BYTES else data


class GrepTool(BuiltinTool):
    name = "grep"
    read_only = True
    description = (
        "Search file contents with a regular expression (RE2 syntax: like Python's `re` without "
        "backreferences or lookaround). Returns matching lines as `path:line: text`, files in sorted "
        "order, at most 200 matches. `path` is a file or a directory (default: the working directory); "
        "`glob` keeps only files whose name matches (e.g. `*.py`, `*.{ts,tsx}`) or, when it contains `/`, "
        "whose path relative to `path` matches (e.g. `src/**/*.py`). Binary files, files over 5 MB, "
        "special files and the directories .git, node_modules, .venv and caches are skipped unless `path` "
        "points inside them; so are files the permission rules forbid reading and secret-looking files "
        "such as .env (the result says which; read one with read_file to ask for it). Escape regex "
        "characters to search for literal text, e.g. `foo\\(`."
    )
    input_schema: Mapping[str, Any] = object_schema({
        "pattern": param("string", "Regular expression (RE2 syntax)."),
        "path": param("string", "File or directory to search, relative or absolute. Default: working directory."),
        "glob": param("string", "Only search files matching this glob pattern."),
        "ignore_case": param("boolean", "Match case-insensitively. Default false."),
    }, required=["pattern"])

    def _run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        regex = compile_pattern(args["pattern"], ignore_case=bool(args.get("ignore_case", False)))
        root = resolve_path(ctx, args.get("path", "."))
        shown_root = display_path(ctx, root)
        if not root.exists():
            raise ToolError(f"path not found: {shown_root}")
        if in_pseudo_fs(root):
            raise ToolError(f"grep does not search {shown_root}: /proc, /sys and /dev hold pseudo-files that "
                            "never end or block. Read a single file there with read_file.")
        name_glob = args.get("glob")
        file_filter = compile_glob(name_glob) if name_glob else None
        searching_dir = root.is_dir()
        screen = ctx.file_screen()
        limit = WorkLimit(ctx)

        lines: list[str] = []
        left_out = SkipTally()
        total = files_with_hits = searched = skipped_large = skipped_binary = skipped_special = 0
        for path in walk_files(root, stop=limit.reached) if searching_dir else [root]:
            if limit.reached():
                break
            shown = display_path(ctx, path)
            if searching_dir:
                if file_filter is not None:
                    rel = path.relative_to(root).as_posix()
                    if not file_filter.match(rel if "/" in (name_glob or "") else path.name):
                        continue
                skip = screen.check(path, search_root=root, contents=True)
                if skip is not None:
                    left_out.add(skip, shown)
                    continue
                if path.is_symlink() and in_pseudo_fs(path):  # a link to /proc/self/environ, say
                    skipped_special += 1
                    continue
            try:
                data = _read_capped(path, shown)
            except NotRegularFile:
                if not searching_dir:
                    raise
                skipped_special += 1
                continue
            except OSError:
                if not searching_dir:
                    raise
                continue  # vanished or unreadable mid-walk: a search is best effort
            searched += 1
            if data is None:
                skipped_large += 1
                continue
            if looks_binary(data):
                skipped_binary += 1
                continue
            hits = 0
            for number, raw in matching_lines(data, regex):
                # A file can hold millions of matching lines: the time and the cancel count within it too.
                if hits % CHECK_EVERY_HITS == 0 and hits and limit.reached():
                    break
                hits += 1
                total += 1
                if len(lines) < MAX_MATCHES:
                    text = raw.decode("utf-8", errors="replace")
                    if len(text) > MAX_LINE_CHARS:
                        text = text[:MAX_LINE_CHARS] + " [...]"
                    lines.append(f"{shown}:{number}: {text}")
            files_with_hits += hits > 0

        notes: list[str] = []
        if total > MAX_MATCHES:
            notes.append(
                f"[showing the first {MAX_MATCHES} of {total} matches in {files_with_hits} files; "
                "narrow the pattern, path or glob to see the rest]"
            )
        if skipped_large:
            notes.append(f"[{skipped_large} file(s) over {MAX_FILE_BYTES // (1024 * 1024)} MB skipped]")
        if skipped_special:
            notes.append(f"[{skipped_special} special file(s) skipped (FIFOs, devices, sockets); never opened]")
        notes.extend(left_out.notes())
        stop_note = limit.note("search")
        if stop_note:
            notes.append(stop_note)
        metadata = {"matches": total, "files": files_with_hits, "truncated": total > MAX_MATCHES,
                    "files_searched": searched, "skipped_binary": skipped_binary,
                    "skipped_denied": left_out.denied, "skipped_needs_approval": len(left_out.needs_approval),
                    "stopped": limit.stopped}
        if not lines:
            content = f"No matches for {args['pattern']!r} in {shown_root}" + (
                f" (glob {name_glob!r})" if name_glob else "")
            return ToolOutput(content="\n".join([content, *notes]), metadata=metadata)
        return ToolOutput(content="\n".join(lines + notes), metadata=metadata)
