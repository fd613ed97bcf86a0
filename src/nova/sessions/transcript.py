"""The raw log of one session: `transcript.jsonl`, append-only, one record per line (schema in `schema.py`).

Durability model. Each record is appended with ONE `os.write` of one complete line to a file opened with
O_APPEND, so the kernel has the whole line or a prefix of it — never two records interleaved. `sync()`
(called at turn end) fsyncs. A crash can therefore leave at most one torn line, the last one, and a torn
line is exactly "bytes after the last newline". `recover()` moves those bytes into
`transcript.jsonl.corrupt-<timestamp>` and truncates the log to its last newline; nothing before it is
touched.

Resume cost. `read_tail()` reads the file backwards in blocks and stops at the last `compact_boundary`,
so resuming a long session costs what the records after the boundary cost, not what the file weighs.
"""

from __future__ import annotations

import errno
import os
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from nova.core import Usage
from nova.errors import StorageError
from nova.messages import Message
from nova.sessions.schema import (
    BoundaryRecord,
    MessageRecord,
    Record,
    boundary_record,
    encode,
    event_record,
    message_record,
    parse_record,
)

__all__ = ["TailRead", "TornTail", "Transcript"]

TRANSCRIPT_NAME = "transcript.jsonl"
_BLOCK = 1 << 16


@dataclass(frozen=True, slots=True)
class TornTail:
    """An incomplete last line: `size` bytes starting at `offset`, moved to `quarantined` (if it was)."""

    offset: int
    size: int
    quarantined: Path | None = None

    def describe(self) -> str:
        where = f"moved to {self.quarantined}" if self.quarantined else "ignored (left in place)"
        return f"transcript had an incomplete last record ({self.size} bytes at offset {self.offset}); {where}"


@dataclass(frozen=True, slots=True)
class TailRead:
    """What resume needs: the last boundary (if any) and the records after it, oldest first."""

    boundary: BoundaryRecord | None
    records: list[Record]
    torn: TornTail | None

    def messages(self) -> list[Message]:
        head = self.boundary.head() if self.boundary else []
        return head + [r.message for r in self.records if isinstance(r, MessageRecord)]


class Transcript:
    """Appends to and reads one `transcript.jsonl`. Not thread-safe: one writer per session."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    # -- writing ------------------------------------------------------------------------------------
    def _open(self) -> int:
        if self._fd is None:
            try:
                self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            except OSError as exc:
                raise StorageError(f"cannot open {self.path} for appending: {exc.strerror}") from None
        return self._fd

    def append(self, record: Mapping[str, Any]) -> None:
        """Write one record as one line with one system call."""
        line = encode(record)
        fd = self._open()
        try:
            written = os.write(fd, line)
            # A regular file only returns short on a full disk or a signal; finish the line so the
            # next record does not get glued onto a prefix of this one.
            while written < len(line):
                written += os.write(fd, line[written:])
        except OSError as exc:
            raise StorageError(f"cannot append to {self.path}: {exc.strerror}") from None

    def append_message(self, message: Message, usage: Usage | None = None) -> None:
        self.append(message_record(message, usage))

    def append_event(self, name: str, data: Mapping[str, Any]) -> None:
        self.append(event_record(name, data))

    def append_boundary(
        self,
        *,
        id: str,
        summary: str,
        trigger: str = "threshold",
        tokens_before: int = 0,
        tokens_after: int = 0,
        duration_ms: float = 0.0,
        covers: Sequence[str] = (),
        messages: Sequence[Message] = (),
    ) -> None:
        self.append(
            boundary_record(
                id=id,
                summary=summary,
                trigger=trigger,
                tokens_before=tokens_before,
                tokens_after=tokens_after,
                duration_ms=duration_ms,
                covers=covers,
                messages=messages,
            )
        )

    def sync(self) -> None:
        """fsync at turn end: what the user saw happen survives a power cut."""
        if self._fd is not None:
            try:
                os.fsync(self._fd)
            except OSError as exc:
                raise StorageError(f"cannot sync {self.path}: {exc.strerror}") from None

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    # -- reading ------------------------------------------------------------------------------------
    def _open_read(self) -> BinaryIO:
        try:
            return self.path.open("rb")
        except FileNotFoundError:
            raise StorageError(f"{self.path} does not exist") from None
        except OSError as exc:
            raise StorageError(f"cannot read {self.path}: {exc.strerror}") from None

    def find_torn_tail(self) -> TornTail | None:
        """The bytes after the last newline, if any (read from the end: cheap on any file size)."""
        with self._open_read() as f:
            size = f.seek(0, os.SEEK_END)
            end = _last_newline_end(f, size)
        return TornTail(offset=end, size=size - end) if end < size else None

    def read_tail(self) -> TailRead:
        """Records after the last compact_boundary, read backwards from the end. Changes nothing."""
        collected: list[Record] = []
        boundary: BoundaryRecord | None = None
        with self._open_read() as f:
            size = f.seek(0, os.SEEK_END)
            end = _last_newline_end(f, size)
            torn = TornTail(offset=end, size=size - end) if end < size else None
            for offset, line in _reverse_lines(f, end):
                if not line.strip():
                    continue
                record = parse_record(line, f"{self.path} at byte {offset}")
                if isinstance(record, BoundaryRecord):
                    boundary = record
                    break
                collected.append(record)
        collected.reverse()
        return TailRead(boundary=boundary, records=collected, torn=torn)

    def iter_records(self) -> Iterator[Record]:
        """Every complete record from the start (export, audit, import). A torn last line is skipped;
        `find_torn_tail()` says whether there is one."""
        with self._open_read() as f:
            offset = 0
            for line in f:
                start = offset
                offset += len(line)
                if not line.endswith(b"\n"):
                    break
                if line.strip():
                    yield parse_record(line, f"{self.path} at byte {start}")

    # -- recovery -----------------------------------------------------------------------------------
    def recover(self) -> TornTail | None:
        """Quarantine a torn last line: copy it to `transcript.jsonl.corrupt-<timestamp>` (fsynced),
        then truncate the log to its last complete record. Returns what was done, or None."""
        torn = self.find_torn_tail()
        if torn is None:
            return None
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + f"-{time.time_ns() % 1_000_000_000:09d}"
        target = self.path.with_name(f"{self.path.name}.corrupt-{stamp}")
        try:
            with self.path.open("rb") as src:
                src.seek(torn.offset)
                data = src.read()
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                os.write(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)
            # Only after the copy is durable is the original shortened: a crash in between leaves
            # the bytes in both places, never in neither.
            os.truncate(self.path, torn.offset)
            self.close()
        except OSError as exc:
            if exc.errno == errno.EEXIST:
                raise StorageError(f"{target} already exists; not overwriting it") from None
            raise StorageError(f"cannot quarantine the torn tail of {self.path}: {exc.strerror}") from None
        return TornTail(offset=torn.offset, size=torn.size, quarantined=target)


def _last_newline_end(f: BinaryIO, size: int) -> int:
    """Offset just after the last b"\\n" (0 if none), scanning backwards block by block."""
    pos = size
    while pos > 0:
        n = min(_BLOCK, pos)
        pos -= n
        f.seek(pos)
        chunk = f.read(n)
        i = chunk.rfind(b"\n")
        if i >= 0:
            return pos + i + 1
    return 0


def _reverse_lines(f: BinaryIO, end: int) -> Iterator[tuple[int, bytes]]:
    """(start offset, line) for each line ending at or before `end`, last line first.

    Pieces of a line that spans blocks are kept in a list and joined once, so a multi-megabyte line
    costs linear time, not quadratic."""
    pending: list[bytes] = []
    pos = end
    while pos > 0:
        n = min(_BLOCK, pos)
        pos -= n
        f.seek(pos)
        chunk = f.read(n)
        j = len(chunk)
        while True:
            i = chunk.rfind(b"\n", 0, j)
            if i < 0:
                pending.append(chunk[:j])
                break
            pending.append(chunk[i + 1 : j])
            yield pos + i + 1, b"".join(reversed(pending))
            pending = []
            j = i
    if pending:
        yield 0, b"".join(reversed(pending))
