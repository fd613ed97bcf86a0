"""The database going away for a few seconds: calls wait and retry with backoff, say so in the log, and
carry on once it is back; only an outage longer than the retry window fails a call, with a StorageError
that says what happened (never a driver traceback)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from urllib.parse import urlsplit, urlunsplit

import pytest

import nova.sessions.postgres as pg
from nova.errors import StorageError
from nova.sessions.postgres import PostgresSessionStore
from nova.sessions.store import SessionRecord

from ..postgres_db import FlakyProxy, fresh_schema
from .conftest import user


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


def test_a_short_outage_is_retried_and_reported(proxied: tuple[str, FlakyProxy],
                                                caplog: pytest.LogCaptureFixture) -> None:
    url, proxy = proxied
    store = PostgresSessionStore(url)
    store.save_session(SessionRecord(id="s1", created_at=1.0, updated_at=1.0))
    proxy.down()
    threading.Timer(2.0, proxy.up).start()
    started = time.monotonic()
    with caplog.at_level(logging.WARNING):
        store.append_messages("s1", [user("written while the database was away", "m1")])
    assert time.monotonic() - started >= 1.5
    assert [s.message.id for s in store.get_messages("s1")] == ["m1"]
    # Said as it happens: by Nova when a call failed and is retried, by the pool when it reconnects.
    said = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert any("database is unreachable" in m or "error connecting" in m for m in said), said


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
