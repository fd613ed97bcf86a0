"""Nova's own files are private to the user: folders 0700, files 0600, whatever the umask. Transcripts,
the session store, spilled tool output and memories hold whatever the user pasted or a tool printed
(keys, tokens, customer data); on a shared machine another account must not read them."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

__all__ = ["FILE_MODE", "FOLDER_MODE", "create_private_file", "private_dir", "replace_private_file", "write_private_text"]

FOLDER_MODE = 0o700
FILE_MODE = 0o600


def private_dir(path: Path) -> Path:
    """Create `path` (and missing parents) and make it private. Only `path` itself is changed: parents
    that already existed keep the modes their owner gave them."""
    path.mkdir(parents=True, exist_ok=True)
    os.chmod(path, FOLDER_MODE)
    return path


def create_private_file(path: Path, *, exclusive: bool = False) -> None:
    """Create `path` empty with mode 0600 (never briefly world-readable, as a `touch` then `chmod` is).
    With `exclusive`, an existing file raises `FileExistsError`."""
    flags = os.O_WRONLY | os.O_CREAT | (os.O_EXCL if exclusive else 0)
    os.close(os.open(path, flags, FILE_MODE))


def write_private_text(path: Path, text: str) -> None:
    """Write `text` to `path` (created 0600, truncated if it exists)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
        handle.write(text)


def replace_private_file(path: Path, data: str | bytes, *, durable: bool = False) -> None:
    """Replace `path` whole with `data` (text is written as UTF-8, exactly as given): written to a private
    temporary file beside it (`.NAME.XXXX.tmp`, a name no other writer picks) and renamed over it, so a
    reader sees the old file or the new one, never half of one, and a failed write leaves no temporary
    file behind. `durable` fsyncs the data before the rename, for a record that must survive a crash; a
    file rewritten often for convenience skips it."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)  # created 0600
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data.encode("utf-8") if isinstance(data, str) else data)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
