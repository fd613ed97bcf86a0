"""`read_file`: a text file, or a range of its lines, with line numbers."""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, BinaryIO

from nova.errors import ToolError
from nova.fs.special_files import open_regular
from nova.tools._common import (
    BINARY_SNIFF_BYTES,
    BuiltinTool,
    WorkLimit,
    display_path,
    looks_binary,
    resolve_path,
)
from nova.tools._schema import object_schema, param
from nova.tools.base import ToolContext, ToolOutput

__all__ = ["ReadFileTool"]

DEFAULT_LIMIT = 2000
MAX_LINE_CHARS = 2000
LINE_CHUNK_BYTES = 64 * 1024
"""Of a line longer than this only the start is kept (it is shortened to MAX_LINE_CHARS anyway)."""
CHECK_EVERY_LINES = 1024
"""How often the user's cancel and the call's time limit are checked while streaming lines."""
CHECK_EVERY_CHUNKS = 64
"""... and while skipping the rest of a long line (every 64 chunks: 4 MB)."""


_NUMBERED = re.compile(r" *\d+\t")
"""How a line of read_file's own output starts: its number, right-aligned, then a tab."""


def _numbered_already(ctx: ToolContext, path: Path) -> bool:
    """Whether `path` is a file of this session's own (a spilled tool result under its directory), whose
    lines may already carry read_file's numbers: reading the saved copy of a `read_file` result back must
    show each line with one number, the original file's, not `600\t   600\t...`. Only a range whose
    every line is numbered keeps its numbers (a saved command output is numbered as any file is)."""
    if ctx.session_dir is None:
        return False
    root = os.path.realpath(ctx.session_dir)
    return os.path.realpath(path).startswith(root + os.sep)


def _missing_file_message(ctx: ToolContext, path: Path) -> str:
    """Say what is there instead: a near-miss name is the usual cause (`test_tool.py` for `test_tools.py`)."""
    shown = display_path(ctx, path)
    parent = path.parent
    if not parent.is_dir():
        return f"file not found: {shown} (the directory {display_path(ctx, parent)} does not exist either)"
    try:
        names = [p.name for p in parent.iterdir()]
    except OSError:
        names = []
    close = difflib.get_close_matches(path.name, names, n=3, cutoff=0.6)
    hint = f" Did you mean: {', '.join(close)}?" if close else " Use glob to find the file."
    return f"file not found: {shown}.{hint}"


class ReadFileTool(BuiltinTool):
    name = "read_file"
    read_only = True
    description = (
        "Read a text file. Returns its lines prefixed with line numbers (a number, a tab, then the line "
        "exactly as in the file). By default up to 2000 lines from the start; for longer files pass "
        "`offset` and `limit` to read a range. Lines longer than 2000 characters are shortened. Read a "
        "file before editing it so `edit_file` gets the exact text. Binary files, directories and special "
        "files (FIFOs, devices) are refused; use `glob` to list files. Files outside the working directory "
        "and secret-looking files (.env, keys, credentials) need the user's approval."
    )
    input_schema: Mapping[str, Any] = object_schema({
        "path": param("string", "File to read, relative to the working directory or absolute."),
        "offset": param("integer", "First line to return, 1-based. Default 1.", minimum=1),
        "limit": param("integer", f"Number of lines to return. Default {DEFAULT_LIMIT}.", minimum=1),
    }, required=["path"])

    def _run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        path = resolve_path(ctx, args["path"])
        offset: int = args.get("offset", 1)
        limit: int = args.get("limit", DEFAULT_LIMIT)
        shown = display_path(ctx, path)
        if path.is_dir():
            raise ToolError(f"{shown} is a directory, not a file. Use glob (e.g. pattern '{shown}/*') to list it.")
        if not path.exists():
            raise ToolError(_missing_file_message(ctx, path))

        numbered: list[str] = []
        total = 0
        shortened = 0
        width = 6
        keep_numbers = _numbered_already(ctx, path)
        work = WorkLimit(ctx)
        # Opened only if it is a regular file, and without blocking: a FIFO or /dev/zero would never end.
        with open_regular(path, shown) as handle:
            if looks_binary(handle.read(BINARY_SNIFF_BYTES) or b""):
                raise ToolError(f"{shown} is a binary file; read_file only shows text.")
            handle.seek(0)
            # Stream the lines: only the requested range is decoded and kept, however large the file, and
            # at most one chunk of a line is held, however long the line.
            while work.stopped is None and not (total % CHECK_EVERY_LINES == 0 and work.reached()):
                head, length = _next_line(handle, work)
                if length == 0:
                    break
                total += 1
                if offset <= total < offset + limit:
                    line = head.decode("utf-8", errors="replace").rstrip("\r\n")
                    if length > len(head) or len(line) > MAX_LINE_CHARS:
                        size = f"{len(line)} chars" if length == len(head) else f"{length} bytes"
                        line = line[:MAX_LINE_CHARS] + f" [... line shortened, {size}]"
                        shortened += 1
                    numbered.append(f"{total:>{width}}\t{line}")
        if keep_numbers and numbered and all(_NUMBERED.match(n.partition("\t")[2]) for n in numbered):
            numbered = [n.partition("\t")[2] for n in numbered]

        metadata = {"paths_read": [str(path)], "total_lines": total}
        stopped = work.note("reading")
        if total == 0:
            return ToolOutput(content=stopped or f"({shown} is empty)", is_error=stopped is not None, metadata=metadata)
        if offset > total:
            if stopped:
                raise ToolError(f"reading {shown} stopped at line {total}, before offset {offset}: {stopped}")
            raise ToolError(f"offset {offset} is past the end of {shown}, which has {total} lines.")
        last = offset + len(numbered) - 1
        notes: list[str] = []
        if stopped:
            notes.append(f"{stopped} [counted {total} lines before stopping; the file may have more]")
        elif last < total:
            notes.append(
                f"[showing lines {offset}-{last} of {total}; pass offset={last + 1} to read further]"
            )
        if shortened:
            notes.append(f"[{shortened} long line(s) shortened to {MAX_LINE_CHARS} characters]")
        content = "\n".join(numbered + notes)
        return ToolOutput(content=content, metadata={**metadata, "first_line": offset, "last_line": last})


def _next_line(handle: BinaryIO, work: WorkLimit) -> tuple[bytes, int]:
    """The next line's first `LINE_CHUNK_BYTES` and its full length in bytes (0 at the end of the file).
    The rest of a longer line is read and dropped, so one enormous line cannot exhaust memory; nor can
    it outlast the call, as the limit is checked between its chunks (a stopped line counts as read)."""
    head = handle.readline(LINE_CHUNK_BYTES) or b""
    length = len(head)
    if head and not head.endswith(b"\n"):
        chunks = 0
        while not (chunks % CHECK_EVERY_CHUNKS == 0 and chunks and work.reached()):
            chunks += 1
            more = handle.readline(LINE_CHUNK_BYTES) or b""
            length += len(more)
            if not more or more.endswith(b"\n"):
                break
    return head, length
