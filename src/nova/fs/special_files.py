"""Opening files Nova reads for the model without ever blocking on one: only regular files are opened.

A FIFO blocks `open()` until a writer comes; `/dev/zero` and `/dev/urandom` never end; `/proc` and `/sys`
hold "regular" files that report size 0 yet stream, and some (`/proc/kmsg`) block on `read()`. So the
type is checked with `stat` before anything is opened, the open is non-blocking (a file swapped for a
FIFO in between still cannot hang it) and the type is checked again on the open descriptor. Searches
never enter the pseudo-filesystems at all.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO

from nova.errors import FileRefused, ToolError

__all__ = ["PSEUDO_FS_ROOTS", "NotRegularFile", "in_pseudo_fs", "open_regular", "read_regular_text", "special_kind"]

PSEUDO_FS_ROOTS = ("/proc", "/sys", "/dev")
"""Trees of pseudo-files: kernel state, devices. Never walked by a search."""


class NotRegularFile(FileRefused, ToolError):
    """The path names a FIFO, device, socket or directory: never opened for reading. A `ToolError` too,
    so a reading tool hands the message to the model as its result."""


def special_kind(mode: int) -> str | None:
    """What a stat mode names when it is not a regular file, or None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def in_pseudo_fs(path: Path | str) -> bool:
    """True when `path`, symlinks resolved, lies in /proc, /sys or /dev."""
    real = os.path.realpath(path)
    return any(real == root or real.startswith(root + "/") for root in PSEUDO_FS_ROOTS)


def open_regular(path: Path, shown: str, *, follow_symlinks: bool = True) -> BinaryIO:
    """`path` opened for binary reading, or `NotRegularFile` naming what it is instead (`shown` is the
    path as the model wrote it). Other failures are `OSError` as usual. `follow_symlinks=False` is for a
    caller that resolved and vetted the path itself: a link put there since is then an `OSError`
    (ELOOP) instead of being followed somewhere else."""
    kind = special_kind(os.stat(path).st_mode)
    if kind is not None:
        raise NotRegularFile(f"{shown} is {kind}; only regular files are read.")
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    if not follow_symlinks:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags)
    try:
        kind = special_kind(os.fstat(fd).st_mode)
        if kind is not None:
            raise NotRegularFile(f"{shown} is {kind}; only regular files are read.")
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular_text(path: Path, *, max_bytes: int) -> str | None:
    """The UTF-8 text of `path` if it is a regular text file of at most `max_bytes`, else None (special,
    too large, binary, unreadable): for readers that have no one to explain a refusal to."""
    try:
        with open_regular(path, str(path)) as handle:
            data = handle.read(max_bytes + 1) or b""
    except (OSError, NotRegularFile):
        return None
    if len(data) > max_bytes or b"\0" in data[:8192]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None
