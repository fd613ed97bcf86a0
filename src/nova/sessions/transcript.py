"""The raw log of one session: `transcript.jsonl`, append-only, one record per line (schema in `schema.py`).

Durability model. Each record is appended with ONE `os.write` of one complete line to a file opened with
O_APPEND, so the kernel has the whole line or a prefix of it — never two records interleaved. `sync()`
(called at turn end) fsyncs. A crash can therefore leave at most one torn line, the last one, and a torn
line is "bytes after the last newline that are not a whole JSON object". `recover()` moves those bytes
into `transcript.jsonl.corrupt-<timestamp>` and truncates the log to its last newline; nothing before it
is touched. A last line that IS a whole object and only lacks its newline (an editor, a copy) is a
record: it is read, and `recover()` gives it its newline.

Damage elsewhere. A complete line that is not a record this Nova can read (garbage, a record of a newer
schema version, one that fails validation) is skipped with a `BadLine` naming the file and its byte
offset, and left where it is: the log is never rewritten to remove it, so nothing a reader could not
make sense of is destroyed. Readers given `strict=True` raise instead, naming the offset, for a torn
last line as well.

Resume cost. `read_tail()` reads the file backwards in blocks and stops at the last `compact_boundary`,
so resuming a long session costs what the records after the boundary cost, not what the file weighs.

What is opened. Only a regular file is read (a transcript swapped for a FIFO or a link to `/dev/zero`
is refused, naming what it is, instead of hanging or filling memory), and no line longer than
`max_line_bytes` is held in memory: it is skipped as a damaged record, or, as the last line without a
newline, counted as torn (nova.fs.safe_read).
"""

from __future__ import annotations

import errno
import gc
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from itertools import accumulate, chain
from pathlib import Path
from typing import Any, BinaryIO

from nova.errors import StorageError
from nova.fs.safe_read import MAX_LINE_BYTES, LongLine, bounded_lines, loads
from nova.fs.special_files import NotRegularFile, open_regular
from nova.messages import Message, SummaryPart, from_dict
from nova.model import Usage
from nova.sessions.schema import (
    BoundaryRecord,
    MessageRecord,
    Record,
    boundary_record,
    encode,
    event_record,
    message_record,
    parse_record,
    record_from_json,
)

__all__ = ["BadLine", "TailRead", "TornTail", "Transcript", "full_collections_paused"]

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
class BadLine:
    """A complete line that is not a record this Nova can read, skipped by the reader and left in place."""

    offset: int
    size: int
    reason: str
    """The reader's error, which names the file and the byte offset."""

    def describe(self) -> str:
        return f"skipped a damaged record ({self.size} bytes, left in place): {self.reason}"


@dataclass(frozen=True, slots=True)
class TailRead:
    """What resume needs: the last boundary (if any) and the records after it, oldest first."""

    boundary: BoundaryRecord | None
    records: list[Record]
    torn: TornTail | None
    record_messages: list[Message] | None = field(default=None, repr=False, compare=False)
    bad: tuple[BadLine, ...] = ()
    """Damaged lines after the boundary that were skipped, oldest first."""
    """The messages of `records`, when the reader collected them as it went (no second walk over a
    long tail, whose records are out of the CPU cache by then)."""

    def messages(self) -> list[Message]:
        head = self.boundary.head() if self.boundary else []
        if self.record_messages is not None:
            return head + self.record_messages
        return head + [r.message for r in self.records if isinstance(r, MessageRecord)]


class Transcript:
    """Appends to and reads one `transcript.jsonl`. Not thread-safe: one writer per session."""

    stores_messages = False
    """Whether `append_message` also appends the message to the session store (a transcript whose records
    are that store's rows writes both at once); else the session does."""

    def __init__(self, path: Path, *, max_line_bytes: int = MAX_LINE_BYTES) -> None:
        self.path = path
        self.max_line_bytes = max_line_bytes
        """The longest line read; a longer one is never held in memory (see the module doc)."""
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
        self._write(encode(record))

    def _write(self, lines: bytes) -> None:
        fd = self._open()
        try:
            written = os.write(fd, lines)
            # A regular file only returns short on a full disk or a signal; finish the line so the
            # next record does not get glued onto a prefix of this one.
            while written < len(lines):
                written += os.write(fd, lines[written:])
        except OSError as exc:
            raise StorageError(f"cannot append to {self.path}: {exc.strerror}") from None

    def append_raw(self, data: bytes) -> None:
        fd = self._open()
        try:
            os.write(fd, data)
        except OSError as exc:
            raise StorageError(f"cannot append to {self.path}: {exc.strerror}") from None

    def append_message(self, message: Message, usage: Usage | None = None) -> None:
        self.append(message_record(message, usage))

    def append_messages(self, entries: Iterable[tuple[Message, Usage | None]]) -> None:
        """`append_message` for several messages, their lines in one system call."""
        lines = b"".join(encode(message_record(message, usage)) for message, usage in entries)
        if lines:
            self._write(lines)

    def append_event(self, name: str, data: Mapping[str, Any]) -> None:
        self.append(event_record(name, data))

    def append_boundary(self, boundary: BoundaryRecord) -> None:
        self.append(boundary_record(boundary))

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
            return open_regular(self.path, str(self.path))
        except FileNotFoundError:
            raise StorageError(f"{self.path} does not exist") from None
        except NotRegularFile as exc:
            raise StorageError(f"{exc} A transcript is a regular file; move this one aside.") from None
        except OSError as exc:
            raise StorageError(f"cannot read {self.path}: {exc.strerror}") from None

    def _too_long(self, offset: int, size: int) -> str:
        return (f"{self.path} at byte {offset}: a line of {size:,} bytes, longer than the {self.max_line_bytes:,} "
                "a record may take; not read")

    def find_torn_tail(self) -> TornTail | None:
        """The bytes after the last newline when they are not a whole record (read from the end: cheap
        on any file size). A whole last record without its newline is not torn."""
        with self._open_read() as f:
            size = f.seek(0, os.SEEK_END)
            end = _last_newline_end(f, size)
            torn, _ = _unterminated(f, end, size, self.max_line_bytes)
        return torn

    def _refuse_torn(self, torn: TornTail) -> None:
        raise StorageError(
            f"{self.path} at byte {torn.offset}: incomplete last record ({torn.size} bytes); refused (--strict: "
            "without it the incomplete line is set aside and the rest is read)"
        )

    def read_tail(
        self, *, observe: Callable[[Message], None] | None = None, messages_only: bool = False, strict: bool = False
    ) -> TailRead:
        """Records after the last compact_boundary, read backwards from the end. Changes nothing.

        `observe` is called with each message of `messages()`, newest first, as soon as it is decoded
        (while it is still in the CPU cache): a check over a long tail needs no second walk.
        `messages_only` (resume): message records are decoded straight to their `Message`, without the
        record around it or its usage (audit data resume does not use), and `records` holds only the
        other records; on a long tail that is a third of the objects made and freed.
        A damaged line is skipped and listed in `bad` (with `strict`, raises naming its offset)."""
        collected: list[Record] = []
        messages: list[Message] = []
        bad: list[BadLine] = []
        boundary: BoundaryRecord | None = None
        with self._open_read() as f, full_collections_paused():
            size = f.seek(0, os.SEEK_END)
            end = _last_newline_end(f, size)
            torn, last = _unterminated(f, end, size, self.max_line_bytes)
            if torn is not None and strict:
                self._refuse_torn(torn)
            lines = _reverse_lines(f, end, limit=self.max_line_bytes)
            for item in chain(last, lines):
                if isinstance(item, LongLine):
                    reason = self._too_long(item.offset, item.size)
                    if strict:
                        raise StorageError(reason)
                    bad.append(BadLine(offset=item.offset, size=item.size, reason=reason))
                    continue
                offset, line = item
                if not line or line.isspace():
                    continue
                message = _decode_message(line) if messages_only else None
                if message is None:
                    try:
                        record = _decode(line)
                    except (ValueError, StorageError):
                        # The exact reader names the line and the reason, or takes what the quick one
                        # would not (surrounding whitespace).
                        try:
                            record = parse_record(line, f"{self.path} at byte {offset}")
                        except StorageError as exc:
                            if strict:
                                raise
                            bad.append(BadLine(offset=offset, size=len(line), reason=str(exc)))
                            continue
                    if isinstance(record, BoundaryRecord):
                        boundary = record
                        break
                    if not (messages_only and isinstance(record, MessageRecord)):
                        collected.append(record)
                    if not isinstance(record, MessageRecord):
                        continue
                    message = record.message
                messages.append(message)
                if observe is not None:
                    observe(message)
        if observe is not None and boundary is not None:
            for message in reversed(boundary.head()):
                observe(message)
        collected.reverse()
        messages.reverse()
        bad.reverse()
        return TailRead(boundary=boundary, records=collected, torn=torn, record_messages=messages, bad=tuple(bad))

    def iter_records(
        self, *, strict: bool = False, on_bad: Callable[[BadLine], None] | None = None
    ) -> Iterator[Record]:
        """Every complete record from the start (export, audit, import). A torn last line is skipped
        (`find_torn_tail()` says whether there is one); a damaged line is skipped and passed to `on_bad`.
        With `strict` either one raises, naming its offset."""
        for _, _, record in self.iter_lines(strict=strict, on_bad=on_bad):
            yield record

    def iter_lines(
        self, *, strict: bool = False, on_bad: Callable[[BadLine], None] | None = None
    ) -> Iterator[tuple[int, bytes, Record]]:
        """(offset, raw line ending in a newline, record) for each readable record, as `iter_records`."""
        with self._open_read() as f:
            for item in bounded_lines(f, limit=self.max_line_bytes):
                if isinstance(item, LongLine):
                    if not item.terminated:  # the last line, too long to be a record: torn
                        if strict:
                            self._refuse_torn(TornTail(offset=item.offset, size=item.size))
                        break
                    reason = self._too_long(item.offset, item.size - 1)
                    if strict:
                        raise StorageError(reason)
                    if on_bad is not None:
                        on_bad(BadLine(offset=item.offset, size=item.size - 1, reason=reason))
                    continue
                start, line = item
                if not line.endswith(b"\n"):
                    if not _whole_object(line):
                        if strict:
                            self._refuse_torn(TornTail(offset=start, size=len(line)))
                        break
                    line += b"\n"
                if not line.strip():
                    continue
                try:
                    record = parse_record(line, f"{self.path} at byte {start}")
                except StorageError as exc:
                    if strict:
                        raise
                    if on_bad is not None:  # the size without the newline, as `read_tail` gives it
                        on_bad(BadLine(offset=start, size=len(line) - 1, reason=str(exc)))
                    continue
                yield start, line, record

    # -- recovery -----------------------------------------------------------------------------------
    def recover(self) -> TornTail | None:
        """Quarantine a torn last line: copy it to `transcript.jsonl.corrupt-<timestamp>` (fsynced),
        then truncate the log to its last complete record. Returns what was done, or None. A whole last
        record without its newline gets one, so the next append starts a line of its own."""
        with self._open_read() as f:
            size = f.seek(0, os.SEEK_END)
            end = _last_newline_end(f, size)
            torn, last = _unterminated(f, end, size, self.max_line_bytes)
        if last:
            self.append_raw(b"\n")
            self.sync()
            return None
        if torn is None:
            return None
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + f"-{time.time_ns() % 1_000_000_000:09d}"
        target = self.path.with_name(f"{self.path.name}.corrupt-{stamp}")
        try:
            # Copied in chunks: a torn tail can be as long as the file.
            with self._open_read() as src:
                src.seek(torn.offset)
                fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(fd, "wb") as out:
                    shutil.copyfileobj(src, out)
                    out.flush()
                    os.fsync(out.fileno())
            # Only after the copy is durable is the original shortened: a crash in between leaves
            # the bytes in both places, never in neither.
            os.truncate(self.path, torn.offset)
            self.close()
        except OSError as exc:
            if exc.errno == errno.EEXIST:
                raise StorageError(f"{target} already exists; not overwriting it") from None
            raise StorageError(f"cannot quarantine the torn tail of {self.path}: {exc.strerror}") from None
        return TornTail(offset=torn.offset, size=torn.size, quarantined=target)


class _FullCollectionPause:
    """No full garbage collection while a tail is parsed (or a recording imported: the readers of
    `nova.sessions.readers` build as many containers per line). Parsing allocates a great many containers (none
    in cycles); as the heap grows CPython walks all of it again and again, about a fifth of the time of a
    long read, for nothing. The young generations are still collected as usual, while they are hot in
    the cache, and full collections resume when the last read in the process ends (the server reads
    tails from several threads at once: the threshold is saved by the first and restored by the last)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._readers = 0
        self._saved = 0

    @contextmanager
    def __call__(self) -> Iterator[None]:
        with self._lock:
            if self._readers == 0:
                young, middle, self._saved = gc.get_threshold()
                gc.set_threshold(young, middle, 1 << 30)
            self._readers += 1
        try:
            yield
        finally:
            with self._lock:
                self._readers -= 1
                if self._readers == 0:
                    young, middle, _ = gc.get_threshold()
                    gc.set_threshold(young, middle, self._saved)


full_collections_paused = _FullCollectionPause()


def _parse_json(data: bytes | str) -> Any:
    """pydantic-core's JSON parser, imported on the first record read rather than at import: commands
    that never read a record (`nova sessions list`) do not pay for it. Repeated keys share one string."""
    from pydantic_core import from_json

    return from_json(data, cache_strings="keys")

def _whole_object(line: bytes) -> bool:
    """Whether `line` is one complete JSON object: a record that only lacks its newline, as opposed to
    the prefix a crash leaves (a prefix of an object is never a whole object)."""
    try:
        return isinstance(loads(line), dict)
    except (ValueError, UnicodeDecodeError):
        return False


def _unterminated(f: BinaryIO, end: int, size: int,
                  limit: int) -> tuple[TornTail | None, list[tuple[int, bytes] | LongLine]]:
    """What follows the last newline (`end`): a torn tail (one longer than `limit` is not read), or a
    whole last record without its newline (returned as a one-line list for the readers), or nothing."""
    if end >= size:
        return None, []
    if size - end > limit:
        return TornTail(offset=end, size=size - end), []
    line = _read_at(f, end, size)
    if _whole_object(line):
        return None, [(end, line)]
    return TornTail(offset=end, size=size - end), []


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


def _reverse_lines(f: BinaryIO, end: int, block: int = _BLOCK, *,
                   limit: int = MAX_LINE_BYTES) -> Iterator[tuple[int, bytes] | LongLine]:
    """(start offset, line without its newline) for each line before `end` (0 or just after a newline),
    last line first; a `LongLine` instead for a line over `limit` bytes, which is never read whole.

    Each block is split once. A line longer than a block is read again in one piece once its start is
    found, so a multi-megabyte line (a late compact_boundary lists every folded id) costs one copy."""
    line_end = -1  # while a line spans blocks: the offset of its newline
    pos = end
    while pos > 0:
        n = min(block, pos)
        pos -= n
        f.seek(pos)
        pieces = f.read(n).split(b"\n")
        if pos + n == end:
            pieces.pop()  # the empty piece after the region's final newline
        starts = list(accumulate((len(p) + 1 for p in pieces), initial=pos))
        for k in range(len(pieces) - 1, 0, -1):  # pieces[k] starts just after a newline: it begins a line
            if line_end >= 0:
                yield _spanning_line(f, starts[k], line_end, limit)
                line_end = -1
            elif len(pieces[k]) > limit:
                yield LongLine(offset=starts[k], size=len(pieces[k]), terminated=True)
            else:
                yield starts[k], pieces[k]
        if line_end < 0:
            line_end = pos + len(pieces[0])  # pieces[0] ends a line that begins in an earlier block
    if line_end >= 0:
        yield _spanning_line(f, 0, line_end, limit)


def _spanning_line(f: BinaryIO, start: int, stop: int, limit: int) -> tuple[int, bytes] | LongLine:
    if stop - start > limit:
        return LongLine(offset=start, size=stop - start, terminated=True)
    return start, _read_at(f, start, stop)


def _read_at(f: BinaryIO, start: int, stop: int) -> bytes:
    f.seek(start)
    return f.read(stop - start)


# How `message_record` and `boundary_record` begin a version-1 line: the quick readers take only those.
_MESSAGE_START = b'{"v":1,"type":"message",'
_BOUNDARY_START = b'{"v":1,"type":"compact_boundary",'
_COVERS_KEY = b'"covers":['
_HEAD_KEY = b'],"messages":['


def _decode(line: bytes) -> Record:
    """One line as Nova writes it, decoded by pydantic-core's JSON parser: two to three times faster than
    `json.loads` on records like these, and a resume decodes every record after the boundary. Raises
    for anything it does not take (a lone surrogate, a second value on the line); `parse_record`, the
    reference reader, then decides and names the error."""
    if line.startswith(_BOUNDARY_START):
        record = _decode_boundary(line)
        if record is not None:
            return record
    return record_from_json(_parse_json(line), "")


def _decode_message(line: bytes) -> Message | None:
    """Just the message of a message record (resume needs nothing else), or None for any other line or
    anything unexpected, which the caller then reads the full way."""
    if not line.startswith(_MESSAGE_START):
        return None
    try:
        data = _parse_json(line)
        if data.get("v") != 1 or data.get("type") != "message":  # a key repeated later wins
            return None
        return from_dict(data["message"])
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def _decode_boundary(line: bytes) -> Record | None:
    """A compact_boundary whose summary message lists the same folded ids as the boundary itself (a
    session's first compaction: 100,000 ids twice over for a long one), with the ids decoded once.
    None when that cannot be proven from the bytes; the caller then decodes the whole line.

    The line begins as `boundary_record` writes it, so the first `,"covers":[` is the boundary's own
    key: only scalars come before it, and no string holds an unescaped quote (a line laid out another
    way fails one of the checks below). Its ids hold no bracket
    or brace at all, so `[ids]` is one flat array wherever those bytes stand. The head holds exactly
    one more `"covers":[`, followed by the same bytes and `]`; it belongs to the head's one part with
    covers, a summary part, and the decoded head has one summary part: its ids were decoded from those
    bytes, so they are what the boundary's own list decodes to. A damaged copy differs from the other
    and is left to the full reader."""
    start = line.find(b"," + _COVERS_KEY)
    stop = line.find(_HEAD_KEY, start)
    if start < 0 or stop < 0:
        return None
    first = start + 1 + len(_COVERS_KEY)
    ids = memoryview(line)[first:stop]  # compared and searched in place: it can be megabytes
    key = line.find(_COVERS_KEY, stop + len(_HEAD_KEY))
    if (
        key < 0
        or line.find(_COVERS_KEY, key + 1) >= 0
        or not line.startswith(ids, key + len(_COVERS_KEY))
        or not line.startswith(b"]", key + len(_COVERS_KEY) + len(ids))
        or any(line.find(mark, first, stop) >= 0 for mark in (b"[", b"]", b"{", b"}"))
    ):
        return None
    data = _parse_json(line[:first] + line[stop:])
    listed = [
        part
        for message in (data.get("messages") or ()) if isinstance(message, dict)
        for part in (message.get("parts") or ()) if isinstance(part, dict) and "covers" in part
    ]
    if len(listed) != 1 or listed[0].get("kind") != "summary" or data.get("covers") != []:
        return None
    record = record_from_json(data, "")
    if not isinstance(record, BoundaryRecord):
        return None
    summaries = [p for m in record.messages for p in m.parts if isinstance(p, SummaryPart)]
    if len(summaries) != 1:
        return None
    # That one summary part was decoded from those bytes: its ids are the boundary's own.
    return replace(record, covers=summaries[0].covers)
