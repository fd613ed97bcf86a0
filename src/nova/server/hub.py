"""`SessionHub`: the server's open sessions, each with its agent, and the turns running on them.

A session is opened (resumed from its record) on first use and kept open while it is used; one turn or
compaction runs on it at a time. Each open session has one worker thread, and everything that writes
its record runs there (the SQLite connection belongs to the thread that opened it). A turn is never
tied to the HTTP request that started it: when the client goes away the turn goes on, is recorded, and
can be read back.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

from nova import events as ev
from nova.agent.loop import Agent
from nova.app import AgentOptions, build_agent
from nova.errors import NovaError, StorageError
from nova.messages import Message
from nova.providers.base import Provider
from nova.server.context_view import context_report
from nova.sessions.export import resume
from nova.sessions.meta import SessionMeta, session_dir, validate_session_id
from nova.sessions.session import Session, delete_session, list_sessions
from nova.settings import Settings

__all__ = ["LiveSession", "SessionBusy", "SessionHub", "SessionNotFound"]

log = logging.getLogger(__name__)

SHUTDOWN_GRACE_S = 10.0
T = TypeVar("T")

EventSink = Callable[[ev.Event | None], None]
"""Receives a turn's events, then None once the turn is over (however it ended)."""


class SessionNotFound(NovaError):
    pass


class SessionBusy(NovaError):
    pass


@dataclass(eq=False)
class LiveSession:
    session: Session
    agent: Agent
    worker: ThreadPoolExecutor
    """The session's one thread: turns, compactions and closing run here."""
    busy: threading.Lock = field(default_factory=threading.Lock)
    """Held while a turn or a compaction runs: the history has one writer at a time."""
    compacting: bool = False
    last_status: ev.ContextUpdate | None = None
    """The figure the agent last emitted; while a turn runs, the figure every surface shows."""
    turn: Future[None] | None = None
    last_touched: float = field(default_factory=time.monotonic)

    @property
    def id(self) -> str:
        return self.session.id

    @property
    def running(self) -> bool:
        return self.busy.locked()

    def track(self, event: ev.Event) -> None:
        # The "compacting…" indicator of a client that connects in the middle of a compaction.
        if isinstance(event, ev.ContextUpdate):
            self.last_status = event
        elif isinstance(event, ev.CompactionStart):
            self.compacting = True
        elif isinstance(event, ev.CompactionEnd):
            self.compacting = False

    def on_worker(self, fn: Callable[[], T]) -> T:
        """Run `fn` on the session's thread (it may read the session store) and wait for it."""
        return self.worker.submit(fn).result()

    def status(self) -> ev.ContextUpdate:
        """The one figure (TOK-3). While a turn runs the session's thread is busy and the history is
        moving: the figure is then the one the agent last emitted, which is what the stream carried
        and what the compaction decision used."""
        if self.running and self.last_status is not None:
            return self.last_status
        return self.on_worker(self.agent.context_status)

    def close(self) -> None:
        def close_here() -> None:
            try:
                self.agent.close()
            finally:
                self.session.close()

        try:
            self.worker.submit(close_here).result()
        finally:
            self.worker.shutdown(wait=False)


class SessionHub:
    def __init__(
        self,
        settings: Settings,
        *,
        options: AgentOptions,
        make_provider: Callable[[], Provider],
        max_live: int = 16,
    ) -> None:
        self.settings = settings
        self.options = options
        self.make_provider = make_provider
        self.max_live = max_live
        self._live: dict[str, LiveSession] = {}
        self._lock = threading.RLock()

    # -- records ------------------------------------------------------------------------------------
    def sessions(self) -> list[SessionMeta]:
        metas, problems = list_sessions(self.settings.home)
        for problem in problems:
            log.warning("skipping a session directory: %s", problem)
        return metas

    def check(self, session_id: str) -> str:
        """The id if it names a recorded session; a bad id is refused before it touches a path."""
        try:
            validate_session_id(session_id)
        except StorageError:
            raise SessionNotFound(f"no session {session_id!r}") from None
        if not session_dir(self.settings.home, session_id).is_dir():
            raise SessionNotFound(f"no session {session_id!r}")
        return session_id

    def create(self, title: str = "") -> LiveSession:
        def create_here() -> tuple[Session, list[Message]]:
            session = Session.create(self.settings.home, title=title, cwd=self.options.cwd,
                                     provider=self.settings.provider, model=self.settings.model)
            return session, []

        live = self._open(create_here)

        def record_prompt() -> None:
            live.session.record_event("system_prompt", {"text": live.agent.system_prompt})
            live.session.flush()

        live.worker.submit(record_prompt).result()
        return live

    def meta(self, session_id: str) -> SessionMeta:
        with self._lock:
            live = self._live.get(session_id)
        if live is not None:
            return live.session.meta
        for meta in self.sessions():
            if meta.id == session_id:
                return meta
        raise SessionNotFound(f"no session {session_id!r}")

    def delete(self, session_id: str) -> None:
        self.check(session_id)
        with self._lock:
            live = self._live.get(session_id)
            if live is not None:
                if live.running:
                    raise SessionBusy(f"session {session_id} is running a turn; cancel it first")
                del self._live[session_id]
                live.close()
        delete_session(self.settings.home, session_id)

    def open_ids(self) -> set[str]:
        with self._lock:
            return set(self._live)

    def is_running(self, session_id: str) -> bool:
        with self._lock:
            live = self._live.get(session_id)
        return live is not None and live.running

    # -- live sessions ------------------------------------------------------------------------------
    def live(self, session_id: str) -> LiveSession:
        self.check(session_id)
        with self._lock:
            live = self._live.get(session_id)
            if live is None:

                def resume_here() -> tuple[Session, list[Message]]:
                    resumed = resume(session_id, home=self.settings.home)
                    for notice in resumed.notices:
                        log.info("session %s: %s", session_id, notice)
                    return resumed.session, resumed.history

                live = self._open(resume_here)
            live.last_touched = time.monotonic()
            return live

    def _open(self, load: Callable[[], tuple[Session, list[Message]]]) -> LiveSession:
        worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="nova-session")

        def open_here() -> LiveSession:
            session, history = load()
            bus = ev.EventBus()
            # A resumed session works where it was started, when that folder is still there.
            recorded = Path(session.meta.cwd) if session.meta.cwd else None
            cwd = recorded if recorded is not None and recorded.is_dir() else self.options.cwd
            agent = build_agent(self.settings, self.make_provider(), replace(self.options, cwd=cwd), bus=bus,
                                session=session, session_id=session.id, session_dir=session.dir)
            agent.history = list(history)
            live = LiveSession(session=session, agent=agent, worker=worker)
            bus.subscribe(live.track)
            return live

        try:
            live = worker.submit(open_here).result()
        except BaseException:
            worker.shutdown(wait=False)
            raise
        with self._lock:
            self._live[live.id] = live
            self._evict()
        return live

    def _evict(self) -> None:
        idle = sorted((s for s in self._live.values() if not s.running), key=lambda s: s.last_touched)
        while len(self._live) > self.max_live and idle:
            oldest = idle.pop(0)
            del self._live[oldest.id]
            oldest.close()

    # -- work on a session ---------------------------------------------------------------------------
    def start_turn(self, session_id: str, text: str, sink: EventSink) -> Future[None]:
        live = self.live(session_id)
        if not live.busy.acquire(blocking=False):
            raise SessionBusy(f"session {session_id} is already running a turn")
        unsubscribe = live.agent.bus.subscribe(sink)

        def work() -> None:
            try:
                live.agent.run_turn(text)
            except Exception as exc:  # recorded by the agent as an ErrorEvent; the stream ends cleanly
                log.info("turn on %s ended with %s: %s", session_id, type(exc).__name__, exc)
                sink(ev.TurnFinished(session_id=session_id, stop_reason="error"))
            finally:
                unsubscribe()
                live.compacting = False
                live.busy.release()
                sink(None)

        try:
            live.turn = live.worker.submit(work)
        except RuntimeError:  # the session was closed under us (server shutting down)
            unsubscribe()
            live.busy.release()
            raise SessionBusy(f"session {session_id} is closing") from None
        return live.turn

    def cancel(self, session_id: str) -> bool:
        live = self.live(session_id)
        if not live.running:
            return False
        live.agent.cancel.set()
        return True

    def context(self, session_id: str) -> dict[str, Any]:
        """`GET …/context`: the one figure and what is in context."""
        live = self.live(session_id)
        return context_report(live.agent, live.status(), compacting=live.compacting, running=live.running)

    def compact(self, session_id: str, focus: str = "") -> tuple[bool, ev.ContextUpdate]:
        live = self.live(session_id)
        if not live.busy.acquire(blocking=False):
            raise SessionBusy(f"session {session_id} is running a turn")
        def compact_here() -> bool:
            changed = live.agent.compact(focus)
            live.session.flush()
            return changed

        try:
            changed = live.on_worker(compact_here)
            return changed, live.on_worker(live.agent.context_status)
        finally:
            live.compacting = False
            live.busy.release()

    def close(self) -> None:
        with self._lock:
            sessions = list(self._live.values())
            self._live.clear()
        for live in sessions:
            if live.running and live.turn is not None:
                # Shutting down: stop the turn at its next step so the record ends cleanly.
                live.agent.cancel.set()
                try:
                    live.turn.result(timeout=SHUTDOWN_GRACE_S)
                except Exception:  # the turn's own errors were reported on its stream
                    log.warning("session %s: the turn did not stop in time", live.id)
            try:
                live.close()
            except Exception:  # shutting down: close the others anyway
                log.exception("closing session %s", live.id)

