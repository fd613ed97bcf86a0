"""Cancelling a turn that runs on another worker: `pg_notify('nova_cancel', <session id>)`, which every
worker hears on one listening connection and applies to the turn it runs, if it runs it.

A notification, not a table: a cancel concerns a turn running now, so one heard by nobody (that worker
died, the turn ended) is rightly lost. The listener reconnects with backoff when the database goes away.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

__all__ = ["CHANNEL", "CancelListener", "send_cancel"]

CHANNEL = "nova_cancel"
log = logging.getLogger(__name__)


def send_cancel(url: str, session_id: str) -> None:
    from nova.sessions.postgres import shared_pool, with_retry

    pool = shared_pool(url)

    def notify() -> None:
        with pool.connection() as conn:
            conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, session_id))

    with_retry(notify, what="sending a cancel")


class CancelListener:
    def __init__(self, url: str, on_cancel: Callable[[str], None]) -> None:
        self._url = url
        self._on_cancel = on_cancel
        self._stop = threading.Event()
        self.ready = threading.Event()
        """Set once the listener is listening (a cancel sent before that is not heard)."""
        self._thread = threading.Thread(target=self._run, name="nova-cancel-listener", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        import psycopg

        from nova.sessions.postgres import worker_name

        delay = 0.5
        while not self._stop.is_set():
            try:
                with psycopg.connect(self._url, autocommit=True, application_name=worker_name(),
                                     connect_timeout=10) as conn:
                    conn.execute(f"LISTEN {CHANNEL}")
                    self.ready.set()
                    delay = 0.5
                    while not self._stop.is_set():
                        for note in conn.notifies(timeout=1.0):
                            self._on_cancel(note.payload)
            except psycopg.Error as exc:
                self.ready.clear()
                log.warning("listening for cancels: %s; again in %.1f s", str(exc).strip().splitlines()[0]
                            if str(exc).strip() else type(exc).__name__, delay)
                time.sleep(delay)
                delay = min(delay * 2, 10.0)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=3)
