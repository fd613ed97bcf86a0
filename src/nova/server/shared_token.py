"""The server token when workers share a PostgreSQL database: one token for all of them, on every host.

The first worker to start records its token (`nova_server_tokens`); every other worker serves that one
and writes it into its own `<home>/server-token` (mode 0600), so `nova serve --print-token` on any host
prints the token every worker accepts. Without a database this is `load_or_create_token`, unchanged.
"""

from __future__ import annotations

import time
from pathlib import Path

from nova.errors import ConfigError
from nova.fs.private import replace_private_file
from nova.server.token import TOKEN_FILE, load_or_create_token

__all__ = ["server_token"]


def server_token(home: Path) -> tuple[str, bool]:
    """(token, created): `created` when this call made the token every worker now uses."""
    from nova.sessions.backend import database_url

    local, created = load_or_create_token(home)
    url = database_url(home)
    if url is None:
        return local, created
    from nova.sessions.postgres import shared_pool, with_retry

    pool = shared_pool(url)

    def record() -> str:
        with pool.connection() as conn:
            conn.execute("INSERT INTO nova_server_tokens (name, token, created_at) VALUES ('server', %s, %s)"
                         " ON CONFLICT (name) DO NOTHING", (local, time.time()))
            row = conn.execute("SELECT token FROM nova_server_tokens WHERE name = 'server'").fetchone()
        assert row is not None
        return str(row[0])

    shared = with_retry(record, what="reading the server token")
    if shared == local:
        return local, created
    _replace_token_file(home / TOKEN_FILE, shared)
    return shared, False


def _replace_token_file(path: Path, token: str) -> None:
    try:
        replace_private_file(path, token + "\n", durable=True)
    except OSError as exc:
        raise ConfigError(f"cannot write {path}: {exc.strerror}") from None
