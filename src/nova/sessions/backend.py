"""Which `SessionStore` a Nova home uses: PostgreSQL when a database URL is configured, else the SQLite
file `<home>/nova.db` (the default, unchanged).

The URL comes from `NOVA_DATABASE_URL` or, failing that, the config's `store` section:
`{"store": {"url": "postgresql://user@host/db"}}`. Anything else there is refused with the file named.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from nova.errors import ConfigError
from nova.sessions.sqlite import SQLiteSessionStore
from nova.sessions.store import SessionStore

__all__ = ["DATABASE_ENV", "database_url", "open_store"]

DATABASE_ENV = "NOVA_DATABASE_URL"


def database_url(home: Path, env: Mapping[str, str] | None = None) -> str | None:
    """The configured PostgreSQL URL, or None for the SQLite default."""
    from nova.sessions.postgres import is_postgres_url

    environ = os.environ if env is None else env
    url = environ.get(DATABASE_ENV, "").strip()
    source = f"${DATABASE_ENV}"
    if not url:
        from nova.settings import config_path, read_config_file

        path = config_path(home)
        section = read_config_file(path).get("store") or {}
        if not isinstance(section, dict):
            raise ConfigError(f"{path}: store must be an object like {{\"url\": \"postgresql://…\"}}")
        url = str(section.get("url") or "").strip()
        source = f"{path} [store] url"
    if not url:
        return None
    if not is_postgres_url(url):
        raise ConfigError(f"{source}: {url.split('://')[0]!r} is not a database Nova can use "
                          "(expected postgresql://user@host:port/database)")
    return url


def open_store(home: Path) -> SessionStore:
    """A store connection for `home`; the caller closes it."""
    url = database_url(home)
    if url is None:
        return SQLiteSessionStore(home / "nova.db")
    from nova.sessions.postgres import PostgresSessionStore

    return PostgresSessionStore(url)
