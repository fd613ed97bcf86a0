"""The database going away for a few seconds: calls wait and retry with backoff, say so in the log, and
carry on once it is back; only an outage longer than the retry window fails a call, with a StorageError
that says what happened (never a driver traceback)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from urllib.parse import urlsplit, urlunsplit

import pytest

import nova.sessions.postgres as pg
from nova.errors import StorageError
from nova.sessions.postgres import PostgresSessionStore
from nova.sessions.store import SessionRecord

from ..postgres_db import FlakyProxy, fresh_schema
from .conftest import user

# Slow tier: a real PostgreSQL behind a proxy taken away (the pool waits out its 5 s).
pytestmark = pytest.mark.slow


@pytest.fixture
def proxied() -> Iterator[tuple[str, FlakyProxy]]:
    schema = fresh_schema()
    url = next(schema)
    parts = urlsplit(url)
    assert parts.hostname is not None and parts.port is not None
    proxy = FlakyProxy(parts.hostname, parts.port)
    netloc = parts.netloc.replace(f":{parts.port}", f":{proxy.port}")
    yield urlunsplit(parts._replace(netloc=netloc)), proxy
    proxy.close()
    schema.close()


def _says_unreachable(message: str) -> bool:
    # Said as it happens: by Nova when a call failed and is retried, by the pool when it reconnects.
    return "database is unreachable" in message or "error connecting" in message


class _BackOnceReported(logging.Handler):
    """Brings the database back once a failed attempt has been reported, and keeps the order of events."""

    def __init__(self, proxy: FlakyProxy, events: list[str]) -> None:
        super().__init__(logging.WARNING)
        self.proxy, self.events = proxy, events

    def emit(self, record: logging.LogRecord) -> None:
        if _says_unreachable(record.getMessage()) and "up" not in self.events:
            self.events += ["reported", "up"]
            self.proxy.up()


def test_a_short_outage_is_retried_and_reported(proxied: tuple[str, FlakyProxy]) -> None:
    url, proxy = proxied
    store = PostgresSessionStore(url)
    store.save_session(SessionRecord(id="s1", created_at=1.0, updated_at=1.0))
    events: list[str] = []
    handler = _BackOnceReported(proxy, events)
    root = logging.getLogger()
    level, root.level = root.level, logging.WARNING
    root.addHandler(handler)
    try:
        proxy.down()
        # The call waits out the outage: it fails, says so, and lands once the database is back.
        store.append_messages("s1", [user("written while the database was away", "m1")])
        events.append("written")
    finally:
        root.removeHandler(handler)
        root.setLevel(level)
    assert events == ["reported", "up", "written"]
    assert [s.message.id for s in store.get_messages("s1")] == ["m1"]


def test_a_long_outage_fails_the_call_with_a_storage_error(proxied: tuple[str, FlakyProxy],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    url, proxy = proxied
    store = PostgresSessionStore(url)
    monkeypatch.setattr(pg, "RETRY_WINDOW_S", 1.0)
    proxy.down()
    with pytest.raises(StorageError, match=r"database is unreachable \(reading a session\).*gave up after"):
        store.get_session("s1")
    proxy.up()
    assert store.get_session("s1") is None  # and it works again once the database is back
