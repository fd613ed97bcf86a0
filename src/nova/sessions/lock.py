"""One writer per session across processes: `session.lock` in the session directory.

A process that opens a session for writing takes an exclusive `flock` on the file and writes its pid and
the time into it; a second process (another `nova resume`, a server on the same home) finds the lock
taken and is refused with the holder's pid instead of interleaving its records with the first one's.
The kernel drops the lock when the holder's descriptor closes, so a crashed or killed holder leaves
nothing to clean up: the next opener takes the lock over, whatever the file still says. The descriptor
is not inherited by child processes (Python opens descriptors non-inheritable), so a tool's background
process cannot keep a session locked after Nova exits.

Readers (`sessions show`, `export`, the server's read of a transcript) take no lock: records are whole
lines appended with one system call, so a reader sees a prefix of the log, never a mixture.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

from nova.errors import FileRefused, SessionLocked, StorageError
from nova.fs.private import FILE_MODE
from nova.fs.safe_read import read_bytes

__all__ = ["LOCK_NAME", "SessionLock", "lock_holder"]

LOCK_NAME = "session.lock"

try:  # POSIX; elsewhere sessions are not locked (there is no stale-proof lock to build on)
    import fcntl
except ImportError:  # pragma: no cover - not on Linux or macOS
    fcntl = None  # type: ignore[assignment]


class SessionLock:
    """Held from `acquire` until `release` (or the process ends)."""

    def __init__(self, directory: Path, session_id: str) -> None:
        self.path = directory / LOCK_NAME
        self.session_id = session_id
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> None:
        """Take the lock or raise `SessionLocked` naming the holder. Never waits."""
        if self._fd is not None or fcntl is None:
            return
        try:
            # No O_TRUNC: the holder's pid must still be readable by the process that is refused.
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, FILE_MODE)
        except OSError as exc:
            raise StorageError(f"cannot open the session lock {self.path}: {exc.strerror}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise SessionLocked(_busy_message(self.session_id, lock_holder(self.path))) from None
        except OSError as exc:
            os.close(fd)
            raise StorageError(f"cannot lock {self.path}: {exc.strerror}") from None
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()} {stamp}\n".encode(), 0)
        except OSError:
            pass  # the lock itself holds; only the note for a refused process is missing
        self._fd = fd

    def release(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)  # a later reader of the file must not name a pid that has let go
        os.close(fd)  # closing the descriptor drops the flock


def lock_holder(path: Path) -> tuple[int | None, str]:
    """(pid, since) as the holder wrote them; (None, "") when the file says nothing usable."""
    try:
        text = read_bytes(path, limit=4096, what="a lock note").decode("utf-8", errors="replace")
    except (OSError, FileRefused):
        return None, ""
    pid_text, _, since = text.strip().partition(" ")
    return (int(pid_text), since) if pid_text.isdigit() else (None, "")


def _busy_message(session_id: str, holder: tuple[int | None, str]) -> str:
    pid, since = holder
    who = f"held by pid {pid}" if pid is not None else "held by another process"
    when = f" (since {since})" if since else ""
    return (f"session {session_id} is busy, {who}{when}; another Nova is writing to it. "
            "Wait for it to finish or stop it, then try again")
