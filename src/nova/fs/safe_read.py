"""Reading a file someone handed Nova (a config file, a transcript, a session to import, a case file)
without letting the file decide how long Nova waits or how much it reads.

What a file can do to a reader, and what stops it here:

- block, or never end: a FIFO waits for a writer, `/dev/zero` streams forever, and a symlink can make
  either look like `config.json`. Only regular files are opened (`open_regular` in
  `nova.fs.special_files`: the type is checked before a non-blocking open and again on the descriptor,
  symlinks followed, so a link to a device is refused too).
- be larger than memory: a file read whole is read to at most `limit` bytes and refused past it
  (`read_bytes`, `read_json`); a file read line by line gives no line longer than `limit`
  (`bounded_lines` reports an over-long line by its offset and size and skips it unread).
- nest deeper than the parser: `json.loads` recurses once per bracket and fails with a `RecursionError`
  (a crash, in any command) at about a thousand; `loads` refuses JSON nested deeper than
  `MAX_JSON_DEPTH` before the parser sees it.

Each refusal is a `FileRefused` naming the file (or the line) and what was wrong; the JSON one is also a
`ValueError`, so a reader that skips undecodable records skips it the same way.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from nova.errors import FileRefused
from nova.fs.special_files import open_regular

__all__ = [
    "MAX_JSON_DEPTH",
    "MAX_LINE_BYTES",
    "JSONTooDeep",
    "LongLine",
    "bounded_lines",
    "json_too_deep",
    "loads",
    "read_bytes",
    "read_json",
]

MAX_JSON_DEPTH = 200
"""Arrays and objects inside one another, at most. pydantic-core (the transcript's fast reader) stops
at the same depth; no record Nova writes, nor any session format it imports, comes near it."""

MAX_LINE_BYTES = 64 * 1024 * 1024
"""The longest line a line-by-line reader takes: far above any record (a late compaction boundary
listing every folded id is a few megabytes), far below what would exhaust memory."""

_READ_CHUNK = 1 << 20


class JSONTooDeep(FileRefused, ValueError):
    """JSON nested deeper than the limit: refused before `json.loads` would recurse into it."""


def read_bytes(path: Path, *, limit: int, what: str = "a file", follow_symlinks: bool = True) -> bytes:
    """The bytes of the regular file `path`, at most `limit` of them. `FileRefused` when `path` is a
    FIFO, a device, a socket or a directory (never opened, or opened without blocking), or holds more
    than `limit` bytes (never read past `limit + 1`). `what` says what the file is for, in the
    message. Other failures are `OSError` as usual (see `open_regular` for `follow_symlinks`)."""
    with open_regular(path, str(path), follow_symlinks=follow_symlinks) as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise FileRefused(f"{path} is larger than {limit:,} bytes, the most Nova reads for {what}; "
                          "nothing of it was used")
    return data


def read_json(path: Path, *, limit: int, what: str = "a JSON file", max_depth: int = MAX_JSON_DEPTH) -> Any:
    """`read_bytes` then `loads`: the decoded document. `json.JSONDecodeError` (a `ValueError`) for
    text that is not JSON, `UnicodeDecodeError` for bytes that are not UTF-8."""
    return loads(read_bytes(path, limit=limit, what=what), max_depth=max_depth, where=str(path))


def loads(data: str | bytes | bytearray, *, max_depth: int = MAX_JSON_DEPTH, where: str = "JSON") -> Any:
    """`json.loads`, with `JSONTooDeep` instead of a `RecursionError` for input nested deeper than
    `max_depth` (`where` names the file or line in the message)."""
    if json_too_deep(data, max_depth):
        raise JSONTooDeep(f"{where}: JSON nested more than {max_depth} levels deep; refused unread")
    return json.loads(data)


# A JSON string: a quote, then anything but a quote or a backslash, or an escape, up to the closing
# quote. Possessive, so an unterminated string costs one pass, not a backtrack per character.
_JSON_STRING = re.compile(rb'"(?:[^"\\]++|\\.)*+"', re.DOTALL)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


def json_too_deep(data: str | bytes | bytearray, max_depth: int = MAX_JSON_DEPTH) -> bool:
    """Whether `data`, read as JSON, opens more than `max_depth` arrays or objects inside one another.
    Brackets inside strings do not count. Cheap for ordinary input: text with no more opening brackets
    than `max_depth` in all cannot be deeper, and is not scanned."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else bytes(data)
    if raw.count(b"[") + raw.count(b"{") <= max_depth:
        return False
    depth = 0
    for byte in _JSON_STRING.sub(b'""', raw).translate(None, _NOT_BRACKETS):
        if byte in (0x5B, 0x7B):  # [ {
            depth += 1
            if depth > max_depth:
                return True
        else:
            depth -= 1
    return False


@dataclass(frozen=True, slots=True)
class LongLine:
    """A line over the limit, skipped unread: where it starts and how many bytes it holds (its newline
    included when it has one)."""

    offset: int
    size: int
    terminated: bool


def bounded_lines(handle: BinaryIO, *, limit: int = MAX_LINE_BYTES) -> Iterator[tuple[int, bytes] | LongLine]:
    """(offset, line) for each line of `handle` from where it stands, the newline kept (the last line
    may have none), or a `LongLine` for a line longer than `limit` bytes: its bytes are read in chunks
    and dropped, so memory never holds more than `limit` of one line."""
    offset = 0
    while True:
        line = handle.readline(limit + 1)
        if not line:
            return
        start = offset
        offset += len(line)
        if len(line) <= limit or line.endswith(b"\n"):
            yield start, line
            continue
        terminated = False
        while True:
            rest = handle.readline(_READ_CHUNK)
            offset += len(rest)
            if not rest:
                break
            if rest.endswith(b"\n"):
                terminated = True
                break
        yield LongLine(offset=start, size=offset - start, terminated=terminated)
