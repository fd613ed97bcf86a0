"""The server's bearer token: made on first start, kept in `<home>/server-token` readable by the owner only."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from nova.errors import ConfigError
from nova.fs.internal_paths import SERVER_TOKEN_FILE

__all__ = ["TOKEN_FILE", "load_or_create_token"]

TOKEN_FILE = SERVER_TOKEN_FILE


def load_or_create_token(home: Path) -> tuple[str, bool]:
    """(token, created). The file is created with O_EXCL and mode 0600 in one step, so the token is never
    readable by others, not even for a moment, and two servers starting together agree on one token."""
    path = home / TOKEN_FILE
    token = secrets.token_urlsafe(32)
    try:
        home.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return _read(path), False
    except OSError as exc:
        raise ConfigError(f"cannot create {path}: {exc.strerror}") from None
    try:
        os.write(fd, (token + "\n").encode("ascii"))
        os.fsync(fd)
    finally:
        os.close(fd)
    return token, True


def _read(path: Path) -> str:
    try:
        if path.stat().st_mode & 0o077:
            # Someone loosened it: tighten rather than serve with a token others can read.
            os.chmod(path, 0o600)
        token = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from None
    if len(token) < 16:
        raise ConfigError(f"{path} holds no usable token; delete it and start `nova serve` again")
    return token
