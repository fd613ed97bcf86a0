"""The session host: `SessionHub`, the open sessions of one process, each with its agent, and the turns
running on them. The server and the TUI both drive their sessions through it.

A session is opened (resumed from its record) on first use and kept open while it is used; one turn or
compaction runs on it at a time. Each open session has one worker thread, and everything that writes
its record runs there. A turn is never tied to the HTTP request that started it: when the client goes
away the turn goes on, is recorded, and can be read back.

An idle open session costs one parked thread, one connection to the session store and its history in
memory, so many are kept (`HostLimits`): past `max_live` the least recently used idle ones are closed,
and a sweeper closes those unused for `idle_timeout_s`. A session in use is never closed to make room:
every call on a session holds a lease on it from the moment it is found (or opened) to the end of its
work (a turn's lease lasts until the turn ends), taken and counted under the hub's lock, so eviction
cannot close a session between a caller finding it and using it. When leases keep the hub over its
limit, the sessions past it are closed as their leases end.

Locking: the hub's lock guards only its maps (which sessions are open, and which are being opened or
closed) and nothing waits while it is held. Opening (a resume reads the record) and closing (which
waits for the session's worker and its memory extraction, up to a minute) run outside it; an evicted
session closes on its own worker thread while its evictor goes on. A session being opened or closed has
an entry in `_pending`; whoever needs it meanwhile waits on that outside the lock and looks again, so a
session is never open twice (two writers on one record).

One worker among several (`shared`, see `nova.host.workers`): a turn, a compaction, a delete and a read
of a session's live state first claim the session across workers (refused at once when another has
it). Before the claim is let go (a turn's claim outlives the turn until its records are stored) the
session is handed back: its background work settled, its meta and store row saved, the shared record's
version noted and its `session.lock` let go, so the next claimant, on any worker and on this home too,
sees everything; this hub keeps the open copy (its agent built, its history in memory). The next claim
here asks the shared record, in one query, whether anything wrote to the session since that version:
if not, the kept copy goes on as it is (resuming and building the agent again cost most of a turn);
if so (another worker ran a turn), the copy is closed and the record rewritten from the shared one and
resumed, as on a worker that never had it. The claim is taken and let go only while no lock of the
hub's own is held: it is always the outer one.
"""

from __future__ import annotations

import heapq
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol, TypeVar

from nova import events as ev
from nova.agent.builder import AgentOptions, build_agent, record_fixed_prompt
from nova.agent.loop import Agent
from nova.errors import NovaError, SessionBusy, SessionLocked, SessionNotFound, StorageError
from nova.host.context_view import context_report
from nova.host.workers import Claim, SharedWorkers
from nova.messages import Message
from nova.providers.base import Provider
from nova.sessions.export import resume
from nova.sessions.meta import SessionMeta, read_meta, session_dir, validate_session_id
from nova.sessions.session import Session, default_store, delete_session, list_sessions
from nova.sessions.store import (
    ConcurrentWrites,
    SessionRecord,
    SessionStore,
    SetAsideReport,
    StoredMessage,
    StoredTaskState,
)
from nova.settings import Settings
from nova.skills.runtime import turn_input
from nova.tools.approval import Approver

__all__ = ["DEFAULT_IDLE_TIMEOUT_S", "DEFAULT_MAX_LIVE", "Approvals", "HostLimits", "LiveSession", "SessionHub"]

log = logging.getLogger(__name__)

SHUTDOWN_GRACE_S = 10.0
# Hundreds of idle sessions are cheap (a parked thread and a store connection each); reopening one
# costs a resume. Half an hour unused is long past any pause between two turns of one conversation.
DEFAULT_MAX_LIVE = 256
DEFAULT_IDLE_TIMEOUT_S = 1800.0
# A call that finds its session closed under it opens it again; this bounds that in a pathological
# churn (a tiny max_live and many callers) so a caller gets SessionBusy rather than spinning.
REOPEN_ATTEMPTS = 5
T = TypeVar("T")

EventSink = Callable[[ev.Event | None], None]
"""Receives a turn's events, then None once the turn is over (however it ended)."""


class Approvals(Protocol):
    """Where the hub's sessions ask the user about a tool call (the server's `ApprovalDesk`)."""

    def approver(self, session_id: str, bus: ev.EventBus,
                 record: Callable[[str, Mapping[str, Any]], None]) -> Approver: ...

    def withdraw(self, session_id: str | None = None) -> None:
        """Deny whatever waits in that session (all when None): the turn is cancelled or the hub closes."""


@dataclass(frozen=True, slots=True, kw_only=True)
class HostLimits:
    max_live: int = DEFAULT_MAX_LIVE
    """Open sessions kept; past this the least recently used idle ones are closed."""
    idle_timeout_s: float | None = DEFAULT_IDLE_TIMEOUT_S
    """An open session unused this long is closed; None keeps it until `max_live` pushes it out."""

    @property
    def sweep_interval_s(self) -> float:
        # Often enough that a session outlives its timeout by at most a quarter of it, and at least once
        # a minute; never so often that the sweeper shows up in a profile.
        assert self.idle_timeout_s is not None
        return max(0.01, min(self.idle_timeout_s / 4, 60.0))


class _Retired(SessionBusy):
    """The session was closed between finding it and using it; the hub opens it again and retries."""


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
    leases: int = 0
    """Calls using it right now (counted under the hub's lock): a leased session is never evicted."""
    retired: bool = False
    """Set under the hub's lock when the hub decides to close it: no turn starts on it after that."""
    closed: bool = False
    """Set on the worker when it is closed: work queued behind the close is refused, not run."""
    kept: object = None
    """With shared workers, while it waits between two claims: the shared record's version when it was
    handed back (its session lock let go). None while in use, or when it must not be reused."""
    suspect: bool = False
    """A turn on it raised: its history may differ from its record, so it is not kept for another claim."""

    @property
    def id(self) -> str:
        return self.session.id

    @property
    def running(self) -> bool:
        return self.busy.locked()

    @property
    def idle(self) -> bool:
        """Nothing uses it: it may be closed (read under the hub's lock)."""
        return self.leases == 0 and not self.running

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

        def unless_closed() -> T:
            if self.closed:
                raise _Retired(f"session {self.id} is closing")
            return fn()

        try:
            future = self.worker.submit(unless_closed)
        except RuntimeError:  # the worker was shut down: the session is closed
            raise _Retired(f"session {self.id} is closing") from None
        return future.result()

    def status(self) -> ev.ContextUpdate:
        """The one figure (TOK-3). While a turn runs the session's thread is busy and the history is
        moving: the figure is then the one the agent last emitted, which is what the stream carried
        and what the compaction decision used."""
        if self.running and self.last_status is not None:
            return self.last_status
        return self.on_worker(self.agent.context_status)

    def close_async(self) -> Future[None]:
        """Close on the session's own thread, after whatever is queued there; returns at once."""

        def close_here() -> None:
            self.closed = True
            _shut(self.agent, self.session)

        try:
            return self.worker.submit(close_here)
        except RuntimeError:  # already shut down: a close was queued before this one, and it closes it
            done: Future[None] = Future()
            done.set_result(None)
            return done
        finally:
            self.worker.shutdown(wait=False)

    def close(self) -> None:
        self.close_async().result()


class SessionHub:
    def __init__(
        self,
        settings: Settings,
        *,
        options: AgentOptions,
        make_provider: Callable[[], Provider],
        limits: HostLimits | None = None,
        open_store: Callable[[Path], SessionStore] = default_store,
        approvals: Approvals | None = None,
        provider_for: Callable[[Settings], Provider] | None = None,
        shared: SharedWorkers | None = None,
    ) -> None:
        """With `approvals`, a call the rules send to the user waits there for an answer; without, it is
        refused unless `options` allow it (`yes`, `allowed_tools`). With `provider_for`, a resumed
        session recorded on another provider, model or endpoint continues on its own (see
        `nova.sessions.model_settings`); without, every session uses `settings`. With `shared`, this
        hub is one worker among several sharing the session records (see the module docstring); the
        hub closes it when it closes."""
        self.settings = settings
        self.approvals = approvals
        self.options = options
        self.make_provider = make_provider
        self.provider_for = provider_for
        self.limits = limits or HostLimits()
        self.open_store = open_store
        """Opens a connection to the session store under a Nova home (one per open session)."""
        self._lock = threading.Lock()
        self._live: dict[str, LiveSession] = {}
        self._pending: dict[str, threading.Event] = {}
        """Sessions being opened or closed; each event is set when that is over."""
        self._sweeper_stop: threading.Event | None = None
        self._store_writes = threading.Lock()
        """Every write of this hub's sessions to the session store, one at a time (see `_QueuedWrites`)."""
        self.builds = 0
        """Agents built so far (each session created or resumed); a kept session's next turn builds none."""
        self.shared = shared
        if shared is not None:
            shared.listen_for_cancels(self._cancel_here)

    def _new_store(self) -> SessionStore:
        """A session's own store connection; the caller closes it."""
        store = self.open_store(self.settings.home)
        if isinstance(store, ConcurrentWrites):  # a database server: nothing to queue for
            return store
        return _QueuedWrites(store, self._store_writes)

    # -- records ------------------------------------------------------------------------------------
    def sessions(self) -> list[SessionMeta]:
        if self.shared is not None:
            return self.shared.list_sessions()
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
        if self.shared is not None:
            recorded = self.shared.is_recorded(session_id)
        else:
            recorded = session_dir(self.settings.home, session_id).is_dir()
        if not recorded:
            raise SessionNotFound(f"no session {session_id!r}")
        return session_id

    def create(self, title: str = "") -> LiveSession:
        def create_here() -> tuple[Session, list[Message]]:
            store = self._new_store()
            try:
                session = Session.create(self.settings.home, title=title, cwd=self.options.cwd,
                                         provider=self.settings.provider, model=self.settings.model,
                                         base_url=self.settings.base_url or "", store=store)
            except BaseException:
                store.close()
                raise
            return session, []

        def record_prompt(live: LiveSession) -> None:
            record_fixed_prompt(live.session, live.agent)
            live.session.flush()

        # Nobody else knows the new id yet, so it needs no entry in `_pending` while it opens.
        live = self._open(create_here, then=record_prompt)
        self._register(live)
        if self.shared is not None:
            # Recorded and handed back at once: its next turn may run on any worker, which must not find
            # its files locked here.
            self._keep_local(live.id)
        return live

    def meta(self, session_id: str) -> SessionMeta:
        if self.shared is not None:
            meta = self.shared.read_meta(session_id)
            if meta is None:
                raise SessionNotFound(f"no session {session_id!r}")
            return meta
        with self._lock:
            live = self._live.get(session_id)
        if live is not None:
            return live.session.meta
        self.check(session_id)
        try:
            return read_meta(session_dir(self.settings.home, session_id))
        except StorageError as exc:  # a broken directory is not a session, as in the listing
            raise SessionNotFound(f"no session {session_id!r} ({exc})") from None

    def delete(self, session_id: str) -> None:
        with self._shared_claim(session_id):
            self._delete_here(session_id)

    def _delete_here(self, session_id: str) -> None:
        self.check(session_id)
        while True:
            with self._lock:
                pending = self._pending.get(session_id)
                if pending is None:
                    live = self._live.get(session_id)
                    if live is not None and live.running:
                        raise SessionBusy(f"session {session_id} is running a turn; cancel it first")
                    # Pending until the files are gone, so nobody opens it again in between.
                    done = self._retire(live) if live is not None else self._mark_pending(session_id)
                    break
            pending.wait()
        try:
            if live is not None:
                live.close()
            store = self._new_store()
            try:
                delete_session(self.settings.home, session_id, store=store)
            finally:
                store.close()
        finally:
            self._settle(session_id, done)

    def open_ids(self) -> set[str]:
        with self._lock:
            return set(self._live)

    def is_running(self, session_id: str) -> bool:
        with self._lock:
            live = self._live.get(session_id)
        return live is not None and live.running

    # -- live sessions ------------------------------------------------------------------------------
    def live(self, session_id: str) -> LiveSession:
        """The open session, opened (resumed from its record) if it is not. Not leased: a caller that
        works on it across several calls uses `leased` so it is not closed in between."""
        live = self._lease(session_id)
        self._release(live)
        return live

    @contextmanager
    def leased(self, session_id: str) -> Iterator[LiveSession]:
        """The open session, kept open (never evicted) until the block ends."""
        live = self._lease(session_id)
        try:
            yield live
        finally:
            self._release(live)

    def _lease(self, session_id: str) -> LiveSession:
        """The open session with a lease taken for the caller, opened (resumed from its record) if it
        is not; waits, outside the lock, for an open or a close of the same session already under way."""
        self.check(session_id)
        while True:
            with self._lock:
                live = self._live.get(session_id)
                if live is not None:
                    live.last_touched = time.monotonic()
                    live.leases += 1
                    return live
                pending = self._pending.get(session_id)
                if pending is None:
                    done = self._mark_pending(session_id)
                    break
            pending.wait()

        def resume_here() -> tuple[Session, list[Message]]:
            self.check(session_id)  # deleted while this caller waited
            store = self._new_store()
            try:
                resumed = resume(session_id, home=self.settings.home, store=store)
            except BaseException:
                store.close()
                raise
            for notice in resumed.notices:
                log.warning("session %s: %s", session_id, notice)
            return resumed.session, resumed.history

        try:
            live = self._open(resume_here)
            self._register(live, leased=True)
        finally:
            self._settle(session_id, done)
        return live

    def _release(self, live: LiveSession) -> None:
        """End a lease; sessions kept past the limit only by leases are closed once theirs end."""
        with self._lock:
            live.leases -= 1
            live.last_touched = time.monotonic()
            victims = self._retire_over_limit(keep=None)
        self._close_later(victims)

    def _open(
        self,
        load: Callable[[], tuple[Session, list[Message]]],
        *,
        then: Callable[[LiveSession], None] | None = None,
    ) -> LiveSession:
        """A new LiveSession on its own thread. Runs outside the hub's lock: a resume reads the record."""
        worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="nova-session")

        def open_here() -> LiveSession:
            session, history = load()
            agent: Agent | None = None
            try:
                bus = ev.EventBus()
                # A resumed session works where it was started, when that folder is still there.
                recorded = Path(session.meta.cwd) if session.meta.cwd else None
                cwd = recorded if recorded is not None and recorded.is_dir() else self.options.cwd
                options = replace(self.options, cwd=cwd)
                if self.approvals is not None:
                    options = replace(options, interactive=True,
                                      ask=self.approvals.approver(session.id, bus, session.record_event))
                settings, provider = self._provider_of(session)
                agent = build_agent(settings, provider, options, bus=bus,
                                    session=session, session_id=session.id, session_dir=session.dir,
                                    history=history)
                with self._lock:
                    self.builds += 1
                live = LiveSession(session=session, agent=agent, worker=worker)
                bus.subscribe(live.track)
                if then is not None:
                    then(live)
                return live
            except BaseException:
                _shut(agent, session)
                raise

        try:
            return worker.submit(open_here).result()
        except BaseException:
            worker.shutdown(wait=False)
            raise

    def _provider_of(self, session: Session) -> tuple[Settings, Provider]:
        """The settings and provider `session` runs on: those it was recorded with, when they differ
        from the hub's and the hub can make another provider."""
        from nova.sessions.model_settings import settings_for_resume

        own = settings_for_resume(self.settings, session.meta)
        if self.provider_for is None or _target(own) == _target(self.settings):
            return self.settings, self.make_provider()
        return own, self.provider_for(own)

    def _register(self, live: LiveSession, *, leased: bool = False) -> None:
        """Make `live` findable (leased for the caller, in the same step, when `leased`), and close
        whatever that pushes past the limit (outside the lock)."""
        with self._lock:
            self._live[live.id] = live
            live.leases += leased
            victims = self._retire_over_limit(keep=live)
            self._start_sweeper()
        self._close_later(victims)

    # -- closing (decided under the lock, done outside it) ----------------------------------------
    def _mark_pending(self, session_id: str) -> threading.Event:
        done = threading.Event()
        self._pending[session_id] = done
        return done

    def _settle(self, session_id: str, done: threading.Event) -> None:
        with self._lock:
            if self._pending.get(session_id) is done:
                del self._pending[session_id]
        done.set()

    def _retire(self, live: LiveSession) -> threading.Event:
        """Under the lock: take `live` out of use; the caller closes it, then settles the event."""
        del self._live[live.id]
        live.retired = True
        return self._mark_pending(live.id)

    def _retire_over_limit(self, *, keep: LiveSession | None) -> list[tuple[LiveSession, threading.Event]]:
        """Under the lock: the least recently used idle sessions past the limit, `keep` (just opened
        for a caller) aside. When the others are all in use, the hub is over its limit until a lease ends."""
        excess = len(self._live) - self.limits.max_live
        if excess <= 0:
            return []
        idle = (s for s in self._live.values() if s.idle and s is not keep)
        return [(s, self._retire(s)) for s in heapq.nsmallest(excess, idle, key=lambda s: s.last_touched)]

    def _retire_idle(self) -> list[tuple[LiveSession, threading.Event]]:
        if self.limits.idle_timeout_s is None:
            return []
        cutoff = time.monotonic() - self.limits.idle_timeout_s
        with self._lock:
            stale = [s for s in self._live.values() if s.idle and s.last_touched < cutoff]
            return [(s, self._retire(s)) for s in stale]

    def _close_later(self, victims: list[tuple[LiveSession, threading.Event]]) -> None:
        """Close each on its own thread; the caller does not wait."""
        for live, done in victims:
            log.debug("closing idle session %s", live.id)

            def settle(future: Future[None], live: LiveSession = live, done: threading.Event = done) -> None:
                if (exc := future.exception()) is not None:
                    log.error("closing session %s failed: %s", live.id, exc, exc_info=exc)
                self._settle(live.id, done)

            live.close_async().add_done_callback(settle)

    def _start_sweeper(self) -> None:
        """Under the lock: the idle-timeout sweeper, started with the first open session."""
        if self.limits.idle_timeout_s is None or self._sweeper_stop is not None:
            return
        stop = threading.Event()
        self._sweeper_stop = stop
        interval = self.limits.sweep_interval_s

        def sweep() -> None:
            while not stop.wait(interval):
                try:
                    self._close_later(self._retire_idle())
                except Exception:  # the sweeper must outlive one bad close
                    log.exception("closing idle sessions")

        threading.Thread(target=sweep, name="nova-session-sweeper", daemon=True).start()

    # -- work on a session ---------------------------------------------------------------------------
    def _claim(self, session_id: str, busy_message: str) -> LiveSession:
        """The open session, leased, with its `busy` lock held by the caller (one turn or compaction at a
        time); the caller releases both."""
        for _ in range(REOPEN_ATTEMPTS):
            live = self._lease(session_id)
            with self._lock:  # against a delete or a shutdown deciding its close right now
                retired = live.retired
                acquired = not retired and live.busy.acquire(blocking=False)
            if acquired:
                return live
            self._release(live)
            if not retired:
                raise SessionBusy(busy_message)
        raise SessionBusy(f"session {session_id} keeps being closed; try again")

    def _unclaim(self, live: LiveSession) -> None:
        live.compacting = False
        live.busy.release()
        self._release(live)

    def _with_live(self, session_id: str, fn: Callable[[LiveSession], T]) -> T:
        """`fn(live)` on the leased session; again on a freshly opened one if a delete or a shutdown
        closed it between finding and using it. With shared workers, on a fresh copy under the session's
        claim: while a turn runs on another worker this answers `SessionBusy`, as a turn would."""
        with self._shared_claim(session_id):
            return self._with_live_here(session_id, fn)

    def _with_live_here(self, session_id: str, fn: Callable[[LiveSession], T]) -> T:
        for _ in range(REOPEN_ATTEMPTS):
            try:
                with self.leased(session_id) as live:
                    return fn(live)
            except _Retired:
                continue
        raise SessionBusy(f"session {session_id} keeps being closed; try again")

    def start_turn(self, session_id: str, text: str, sink: EventSink) -> Future[None]:
        """Start a turn on the session's thread and return at once; `sink` gets its events, then None.
        With shared workers the claim is let go, and `sink` gets None, only once the session is handed
        back after the turn (its records, meta and store row written)."""
        claim = self._claim_shared(session_id)
        if claim is None:
            return self._start_turn_here(session_id, text, sink)
        finished = threading.Event()

        def forward(event: ev.Event | None) -> None:
            if event is None:
                finished.set()  # the stream ends after the session is handed back and the claim let go
            else:
                sink(event)

        def finish(_: Future[None]) -> None:
            # Not on the session's own thread: handing back runs there, and closing waits for it.
            threading.Thread(target=self._end_shared_turn, args=(session_id, claim, sink, finished),
                             name="nova-turn-end", daemon=True).start()

        try:
            future = self._start_turn_here(session_id, text, forward)
        except BaseException:  # refused before it ran (`/skill` naming no skill): handed back all the same
            self._let_go(session_id, claim)
            raise
        future.add_done_callback(finish)
        return future

    def _end_shared_turn(self, session_id: str, claim: Claim, sink: EventSink, finished: threading.Event) -> None:
        try:
            finished.wait(timeout=60)
            self._keep_local(session_id)
        except Exception:
            log.exception("handing session %s back after its turn", session_id)
        finally:
            claim.release()
            sink(None)

    def _start_turn_here(self, session_id: str, text: str, sink: EventSink) -> Future[None]:
        live = self._claim(session_id, f"session {session_id} is already running a turn")
        try:
            prompt = turn_input(live.agent.extensions, text)  # `/skill NAME …` loads a skill (SKL-1)
        except NovaError:
            self._unclaim(live)
            raise
        unsubscribe = live.agent.bus.subscribe(sink)

        def work() -> None:
            try:
                # A session made without a title (the page's "New session") is named after its first request.
                live.session.title_if_untitled(text)
                live.agent.run_turn(prompt)
            except Exception as exc:  # recorded by the agent as an ErrorEvent; the stream ends cleanly
                log.info("turn on %s ended with %s: %s", session_id, type(exc).__name__, exc)
                live.suspect = True
                sink(ev.TurnFinished(session_id=session_id, stop_reason="error"))
            finally:
                unsubscribe()
                # A long turn counts as use up to its end, not its start, for the idle timeout.
                self._unclaim(live)
                sink(None)

        try:
            live.turn = live.worker.submit(work)
        except RuntimeError:  # the session was closed under us (the host shutting down)
            unsubscribe()
            self._unclaim(live)
            raise SessionBusy(f"session {session_id} is closing") from None
        return live.turn

    def cancel(self, session_id: str) -> bool:
        """Stop the session's turn at its next step, wherever it runs (with shared workers, on another
        worker by passing the cancel on). False when no turn runs on it."""
        self.check(session_id)
        with self._lock:
            live = self._live.get(session_id)
        # A session that is not open here runs nothing here: no need to open it to say so.
        if live is None or not live.running:
            return self.shared is not None and self.shared.cancel_elsewhere(session_id)
        live.agent.cancel.set()
        if self.approvals is not None:  # a call waiting for approval is refused, so the turn can stop
            self.approvals.withdraw(session_id)
        return True

    def _cancel_here(self, session_id: str) -> None:
        """A cancel another worker passed on: stop the turn if it runs here."""
        with self._lock:
            live = self._live.get(session_id)
        if live is not None and live.running:
            live.agent.cancel.set()

    def status(self, session_id: str) -> ev.ContextUpdate:
        """The session's one context figure (see `LiveSession.status`)."""
        return self._with_live(session_id, lambda live: live.status())

    def context(self, session_id: str) -> dict[str, Any]:
        """`GET …/context`: the one figure and what is in context."""

        def report(live: LiveSession) -> dict[str, Any]:
            return context_report(live.agent, live.status(), compacting=live.compacting, running=live.running,
                                  meta=live.session.meta)

        return self._with_live(session_id, report)

    def compact(self, session_id: str, focus: str = "") -> tuple[bool, ev.ContextUpdate]:
        with self._shared_claim(session_id):
            return self._compact_here(session_id, focus)

    def _compact_here(self, session_id: str, focus: str) -> tuple[bool, ev.ContextUpdate]:
        live = self._claim(session_id, f"session {session_id} is running a turn")

        def compact_here() -> bool:
            changed = live.agent.compact(focus)
            live.session.flush()
            return changed

        try:
            changed = live.on_worker(compact_here)
            return changed, live.on_worker(live.agent.context_status)
        finally:
            self._unclaim(live)

    def close(self) -> None:
        """Close every open session (a running turn is cancelled first) and wait for the closes under
        way. The hub stays usable: a later call opens its session again from the record."""
        with self._lock:
            already = list(self._pending.values())
            closing = [(live, self._retire(live)) for live in list(self._live.values())]
            if self._sweeper_stop is not None:
                self._sweeper_stop.set()
                self._sweeper_stop = None
        for live, _ in closing:
            if live.running and live.turn is not None:
                # Shutting down: stop the turn at its next step so the record ends cleanly.
                live.agent.cancel.set()
        if self.approvals is not None:
            self.approvals.withdraw()
        for live, _ in closing:
            if live.turn is not None and not live.turn.done():
                try:
                    live.turn.result(timeout=SHUTDOWN_GRACE_S)
                except Exception:  # the turn's own errors were reported on its stream
                    log.warning("session %s: the turn did not stop in time", live.id)
        # Each closes on its own thread, all at once: one slow close does not hold up the others.
        futures = []
        for live, done in closing:
            try:
                futures.append((live, done, live.close_async()))
            except Exception:  # shutting down: close the others anyway
                log.exception("closing session %s", live.id)
                self._settle(live.id, done)
        for live, done, future in futures:
            try:
                future.result()
            except Exception:
                log.exception("closing session %s", live.id)
            finally:
                self._settle(live.id, done)
        for event in already:  # evictions and deletes that were under way
            event.wait()
        if self.shared is not None:
            self.shared.close()

    # -- shared with other workers (see the module docstring) -----------------------------------------
    def _claim_shared(self, session_id: str) -> Claim | None:
        """None alone in the process. With shared workers: the session claimed for this worker, with
        this hub's kept copy still current, or else closed and the record rewritten from the shared one;
        `SessionBusy` when another worker has it, `SessionNotFound` when it is not recorded. The caller
        hands the session back (`_keep_local`) and releases the claim."""
        if self.shared is None:
            return None
        try:  # the id's form only: `refresh` asks the shared record, under the claim
            validate_session_id(session_id)
        except StorageError:
            raise SessionNotFound(f"no session {session_id!r}") from None
        claim = self.shared.claim(session_id)
        try:
            if not self._reclaim_kept(session_id):
                self._drop_local(session_id)
                if not self.shared.refresh(session_id):
                    raise SessionNotFound(f"no session {session_id!r}")
        except BaseException:
            claim.release()
            raise
        return claim

    @contextmanager
    def _shared_claim(self, session_id: str) -> Iterator[None]:
        """The block runs under the session's claim (`_claim_shared`; nothing to claim alone in the
        process), and the session is let go (`_let_go`) when it ends, however it ends."""
        claim = self._claim_shared(session_id)
        try:
            yield
        finally:
            if claim is not None:
                self._let_go(session_id, claim)

    def _reclaim_kept(self, session_id: str) -> bool:
        """Under the claim: True when this hub's copy, kept since it was last handed back, is current
        (nothing wrote to the session since) and locked for this process again; False when there is no
        such copy or it is behind the shared record."""
        assert self.shared is not None
        with self._lock:
            live = self._live.get(session_id)
            kept = live.kept if live is not None and live.idle and not live.retired else None
        if live is None or kept is None or not self.shared.resume_kept(session_id, kept):
            return False
        try:
            live.on_worker(live.session.take_lock)
        except (_Retired, SessionLocked):  # being closed (an eviction), or another process writes it
            return False
        with self._lock:
            live.kept = None
        return True

    def _let_go(self, session_id: str, claim: Claim) -> None:
        """Hand the session back (`_keep_local`), then release its claim, even if the hand-back failed."""
        try:
            self._keep_local(session_id)
        finally:
            claim.release()

    def _keep_local(self, session_id: str) -> None:
        """Under the claim, its work done (or just created): hand the session back but keep this hub's
        copy open for the next claim here. On the session's thread, its background work is drained (a memory
        extraction's call is charged to it), its meta and store row are saved, the shared record's
        version is noted and its `session.lock` let go. A copy that cannot be kept so is closed."""
        assert self.shared is not None
        shared = self.shared
        with self._lock:
            live = self._live.get(session_id)
            usable = live is not None and live.idle and not live.retired and not live.suspect
        if live is None or not usable:
            self._drop_local(session_id)
            return

        def hand_back() -> object:
            live.agent.drain()
            live.session.flush()
            version = shared.version(session_id)
            live.session.release_lock()
            return version

        try:
            version = live.on_worker(hand_back)
        except _Retired:  # closed meanwhile (a shutdown): nothing is left to keep
            version = None
        except Exception:
            log.exception("handing session %s back", session_id)
            version = None
        if version is None:
            self._drop_local(session_id)
            return
        with self._lock:
            live.kept = version

    def _drop_local(self, session_id: str) -> None:
        """Close this hub's open copy of the session if nothing uses it (its history may be behind the
        shared record), and wait for a close already under way (an eviction): the record must not be
        rewritten under a session still closing."""
        with self._lock:
            live = self._live.get(session_id)
            done = self._retire(live) if live is not None and live.idle else None
        if live is not None and done is not None:
            try:
                live.close()
            finally:
                self._settle(session_id, done)
        while True:
            with self._lock:
                pending = self._pending.get(session_id)
            if pending is None:
                return
            pending.wait()


def _shut(agent: Agent | None, session: Session) -> None:
    """Close what an open session holds, each part even if one before it fails: the agent (its memory
    extraction may run a while), the record, then the store connection the hub opened for it."""
    try:
        if agent is not None:
            agent.close()
    finally:
        try:
            session.close()
        finally:
            session.store.close()


class _QueuedWrites(SessionStore, SetAsideReport):
    """One session's own store connection, its writes queued on a lock all the hub's sessions share.

    Hundreds of sessions writing at once through their own connections contend for SQLite's file lock,
    whose waiters poll and sleep (up to 100 ms a time) while the lock sits free: the server's throughput
    fell with the number of sessions. Queued here they take turns at once. Reads go straight through
    (readers do not wait on a writer in WAL mode), so a resume reading a long history holds nobody up.
    """

    def __init__(self, store: SessionStore, writes: threading.Lock) -> None:
        self._store = store
        self._writes = writes

    def describe_set_aside(self) -> str:
        """The store's warning when it replaced an unreadable database on opening, else ""."""
        return self._store.describe_set_aside() if isinstance(self._store, SetAsideReport) else ""

    def save_session(self, record: SessionRecord) -> None:
        with self._writes:
            self._store.save_session(record)

    def get_session(self, session_id: str) -> SessionRecord | None:
        return self._store.get_session(session_id)

    def list_sessions(self) -> list[SessionRecord]:
        return self._store.list_sessions()

    def list_children(self, parent_id: str) -> list[SessionRecord]:
        return self._store.list_children(parent_id)

    def delete_session(self, session_id: str) -> None:
        with self._writes:
            self._store.delete_session(session_id)

    def append_messages(self, session_id: str, messages: Sequence[Message]) -> None:
        with self._writes:
            self._store.append_messages(session_id, messages)

    def get_messages(self, session_id: str, *, include_compacted: bool = False) -> list[StoredMessage]:
        return self._store.get_messages(session_id, include_compacted=include_compacted)

    def get_rewritten_messages(self, session_id: str) -> list[StoredMessage]:
        return self._store.get_rewritten_messages(session_id)

    def update_message_content(self, session_id: str, message_id: str, message: Message) -> None:
        with self._writes:
            self._store.update_message_content(session_id, message_id, message)

    def mark_compacted(self, session_id: str, message_ids: Iterable[str]) -> int:
        with self._writes:
            return self._store.mark_compacted(session_id, message_ids)

    def get_task_state(self, session_id: str) -> dict[str, Any] | None:
        return self._store.get_task_state(session_id)

    def get_versioned_task_state(self, session_id: str) -> StoredTaskState | None:
        return self._store.get_versioned_task_state(session_id)

    def put_task_state(
        self, session_id: str, state: Mapping[str, Any], *, expected_version: int | None = None
    ) -> int:
        with self._writes:
            return self._store.put_task_state(session_id, state, expected_version=expected_version)

    def close(self) -> None:
        self._store.close()


def _target(settings: Settings) -> tuple[str, str, str | None]:
    return settings.provider, settings.model, settings.base_url
