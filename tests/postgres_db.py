"""A private schema on the test PostgreSQL for one test (`NOVA_TEST_DATABASE_URL`, set by .ci/postgres).

Tests that need the database take the `pg_url` fixture (from `pg_fixture`); without the variable, or
without the `postgres` extra, they skip and say why.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import uuid
from collections.abc import Iterator
from urllib.parse import quote

import pytest

SKIP_REASON = ("no test PostgreSQL: start one with `eval \"$(bash .ci/postgres start)\"` "
               "(sets NOVA_TEST_DATABASE_URL)")


def base_url() -> str | None:
    url = os.environ.get("NOVA_TEST_DATABASE_URL", "")
    if not url or importlib.util.find_spec("psycopg_pool") is None:
        return None
    return url


def require_base_url() -> str:
    url = base_url()
    if url is None:
        pytest.skip(SKIP_REASON if importlib.util.find_spec("psycopg_pool") else
                    "the postgres extra is not installed (pip install 'nova-context-engine[postgres]')")
    return url


def with_schema(url: str, schema: str) -> str:
    """`url` with every connection's search_path set to `schema`."""
    sep = "&" if "?" in url else "?"
    return f"{url}{sep}options={quote(f'-csearch_path={schema}')}"


def fresh_schema() -> Iterator[str]:
    """A URL whose tables live in a new, empty schema, dropped afterwards."""
    import psycopg

    from nova.sessions.postgres import close_pools

    base = require_base_url()
    schema = "t_" + uuid.uuid4().hex[:12]
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    try:
        yield with_schema(base, schema)
    finally:
        close_pools()
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")


class FlakyProxy:
    """A loopback TCP proxy in front of the test database that can be taken away (`down`): every
    connection through it is cut and new ones are refused until `up`, as when the database restarts."""

    def __init__(self, target_host: str, target_port: int) -> None:
        import socket
        import threading

        self._target = (target_host, target_port)
        self._listener = socket.socket()
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._listener.listen(64)
        self._open: list[socket.socket] = []
        self._lock = threading.Lock()
        self.accepting = True
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        import socket
        import threading

        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            if not self.accepting:
                client.close()
                continue
            try:
                server = socket.create_connection(self._target)
            except OSError:
                client.close()
                continue
            for end in (client, server):  # small messages both ways: no waiting for delayed ACKs
                end.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._lock:
                self._open += [client, server]
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(src: object, dst: object) -> None:
        import socket

        assert isinstance(src, socket.socket) and isinstance(dst, socket.socket)
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    s.close()

    def down(self) -> None:
        import socket

        self.accepting = False
        with self._lock:
            sockets, self._open = self._open, []
        for s in sockets:
            try:
                s.shutdown(socket.SHUT_RDWR)
                s.close()
            except OSError:
                pass

    def up(self) -> None:
        self.accepting = True

    def close(self) -> None:
        self.down()
        self._listener.close()
