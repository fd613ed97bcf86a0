"""A recency journal per memory directory, so a recall scan does not stat every file.

Choosing the 200 newest of 10,000 files by mtime costs 10,000 `stat` calls — more than reading the 200
heads. The journal `<dir>/.nova-scan/recency` lists the newest `KEEP` files (mtime and name) and the
directory's own mtime when it was written. It is trusted only while the directory's mtime is unchanged:
adding, removing or renaming a file (which is how the store and most editors save) changes it and sends
the next scan back to a full listing, which rewrites the journal. The journal lives in a subdirectory so
that writing it does not itself change the directory's mtime.

What it cannot see: a file rewritten in place by another program keeps its old rank until the next
write through the store. The content read is always current; only its position in the ranking may lag.
"""

from __future__ import annotations

import contextlib
import heapq
import os
from pathlib import Path

from nova.fs.private import replace_private_file

__all__ = ["JOURNAL_DIR", "KEEP", "list_newest", "read_journal", "write_journal"]

JOURNAL_DIR = ".nova-scan"
_JOURNAL = "recency"
_HEADER = "nova-recency-v1"
KEEP = 1000
INDEX_NAME = "MEMORY.md"

Entry = tuple[int, str]  # (mtime_ns, file name)


def list_newest(directory: Path, limit: int) -> tuple[list[Entry], int]:
    """The `limit` newest memory files by a full listing (one stat each), and how many there are."""
    entries: list[Entry] = []
    with os.scandir(directory) as it:
        for entry in it:
            name = entry.name
            if not name.endswith(".md") or name == INDEX_NAME or name.startswith("."):
                continue
            try:
                if entry.is_file():
                    entries.append((entry.stat().st_mtime_ns, name))
            except OSError:
                continue
    # Newest first; ties broken by name so two scans of the same tree agree.
    return heapq.nsmallest(limit, entries, key=lambda e: (-e[0], e[1])), len(entries)


def write_journal(directory: Path, *, dir_mtime_ns: int | None = None,
                  listing: tuple[list[Entry], int] | None = None) -> None:
    """Best effort: a journal that cannot be written only makes the next scan slower.

    `dir_mtime_ns` must be read before `listing` was taken: a file added in between then makes the
    journal look stale rather than complete."""
    with contextlib.suppress(OSError):
        journal_dir = directory / JOURNAL_DIR
        if not journal_dir.is_dir():
            journal_dir.mkdir()  # changes the directory's mtime, so it comes before reading it
            dir_mtime_ns = None
            listing = None
        if dir_mtime_ns is None:
            dir_mtime_ns = directory.stat().st_mtime_ns
        entries, total = listing if listing is not None else list_newest(directory, KEEP)
        lines = [f"{_HEADER} {dir_mtime_ns} {total}\n", *(f"{m} {n}\n" for m, n in entries[:KEEP])]
        replace_private_file(journal_dir / _JOURNAL, "".join(lines))


def read_journal(directory: Path, limit: int) -> list[Entry] | None:
    """The `limit` newest entries from the journal, or None when it is missing, stale or too short."""
    try:
        dir_mtime = directory.stat().st_mtime_ns
        with (directory / JOURNAL_DIR / _JOURNAL).open(encoding="utf-8") as handle:
            header = handle.readline().split()
            if len(header) != 3 or header[0] != _HEADER or int(header[1]) != dir_mtime:
                return None
            total = int(header[2])
            entries: list[Entry] = []
            for line in handle:
                if len(entries) >= limit:
                    break
                mtime, _, name = line.rstrip("\n").partition(" ")
                entries.append((int(mtime), name))
    except (OSError, ValueError):
        return None
    if len(entries) < min(limit, total):
        return None  # the journal keeps fewer entries than this scan wants
    return entries
