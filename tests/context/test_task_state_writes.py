"""Task state is written from several threads (the session's worker, the TUI, the server's request pool)
and from several store connections: every change must survive, whatever the interleaving."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from nova.context.state import MemoryStateSource, TaskState, TaskStateStore, apply_command
from nova.sessions.recorder import TaskStateSource
from nova.sessions.session import Session
from nova.sessions.store import StoredTaskState, TaskStateConflict


class SlowWrites:
    """A state source whose writes take `delay` seconds before they reach the real one: wide enough
    that two writers have both read the same version before either writes."""

    def __init__(self, inner: TaskStateSource, delay: float) -> None:
        self.inner = inner
        self.delay = delay

    def get_versioned_task_state(self) -> StoredTaskState | None:
        return self.inner.get_versioned_task_state()

    def put_task_state(self, state: Mapping[str, Any], *, expected_version: int | None = None) -> int:
        time.sleep(self.delay)
        return self.inner.put_task_state(state, expected_version=expected_version)


@pytest.fixture
def session(nova_home: Path) -> Iterator[Session]:
    s = Session.create(nova_home, title="t", cwd=str(nova_home))
    yield s
    s.close()


def run_together(*jobs: Callable[[], object]) -> None:
    """Start the jobs at the same moment on their own threads; re-raise the first failure."""
    start = threading.Barrier(len(jobs))
    errors: list[BaseException] = []

    def run(job: Callable[[], object]) -> None:
        try:
            start.wait()
            job()
        except BaseException as exc:  # collected: a thread's failure must fail the test
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(job,)) for job in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def test_two_threads_with_a_slow_write_both_keep_their_change(session: Session) -> None:
    """The lost update: the TUI sets the goal while the worker records a constraint; each write is
    delayed inside the store call, so both changes are computed from the same version."""
    store = TaskStateStore(SlowWrites(session, delay=0.05))
    run_together(
        lambda: store.update(lambda s: apply_command(s, "/goal ship the parser", now=1.0)),
        lambda: store.update(lambda s: apply_command(s, "/constraint never push to main", now=1.0)),
    )
    stored = session.get_versioned_task_state()
    assert stored is not None and stored.version == 2
    saved = TaskState.from_dict(stored.state)
    assert saved.goal == "ship the parser"
    assert [c.text for c in saved.constraints] == ["never push to main"]
    assert store.load() == TaskState.from_dict(stored.state)  # what the compiler pins is the stored state


def test_two_processes_sharing_the_database_keep_both_changes(session: Session, nova_home: Path) -> None:
    """Two connections to one SQLite file (the server and a `nova` command in another process). The
    second handle is opened read-only: one process writes the record, but task state is the store's,
    compare-and-set across connections."""
    other = Session.open(nova_home, session.id, readonly=True)
    first = TaskStateStore(SlowWrites(session, delay=0.05))
    second = TaskStateStore(SlowWrites(other, delay=0.05))
    first.load(), second.load()  # both have read version 0 before either writes
    run_together(
        lambda: first.update(lambda s: apply_command(s, "/open from the server", now=1.0)),
        lambda: second.update(lambda s: apply_command(s, "/open from the command line", now=1.0)),
    )
    other.close()
    state = TaskStateStore(session).load()
    assert sorted(state.open_items) == ["from the command line", "from the server"] and state.version == 2


@pytest.mark.parametrize("where", ["sqlite", "memory"])
def test_many_concurrent_updates_all_survive(where: str, session: Session, nova_home: Path) -> None:
    """Eight writers, ten updates each, half of them through a shared store object (threads of one
    process), half through their own store object and, for SQLite, their own connection."""
    opened: list[Session] = []
    memory = MemoryStateSource()

    def source() -> TaskStateSource:
        if where == "memory":
            return memory
        # Read-only handles: the record has one writer, task state takes writes from every connection.
        opened.append(Session.open(nova_home, session.id, readonly=True))
        return opened[-1]

    shared = TaskStateStore(source())
    stores = [shared if n % 2 else TaskStateStore(source()) for n in range(8)]

    def writer(n: int) -> Callable[[], None]:
        def write() -> None:
            for i in range(10):
                stores[n].update(lambda s, i=i: apply_command(s, f"/open item {n}-{i}", now=1.0))
        return write

    run_together(*(writer(n) for n in range(8)))
    for s in opened:
        s.close()
    final = TaskStateStore(memory if where == "memory" else session).load()
    assert sorted(final.open_items) == sorted(f"item {n}-{i}" for n in range(8) for i in range(10))
    assert final.version == 80


def test_a_save_from_a_stale_state_is_refused_and_writes_nothing(session: Session) -> None:
    first, second = TaskStateStore(session), TaskStateStore(session)
    stale = second.load()
    first.update(lambda s: apply_command(s, "/goal the real goal", now=1.0))
    with pytest.raises(TaskStateConflict):
        second.save(apply_command(stale, "/goal an outdated goal", now=1.0))
    assert TaskStateStore(session).load().goal == "the real goal"
    # `update` re-reads and applies the change to the newest state instead.
    assert second.update(lambda s: apply_command(s, "/accept tests pass", now=1.0)).goal == "the real goal"


def test_an_update_that_changes_nothing_writes_nothing(session: Session) -> None:
    store = TaskStateStore(session)
    store.update(lambda s: apply_command(s, "/constraint never push", now=1.0))
    before = session.get_versioned_task_state()
    same = store.update(lambda s: apply_command(s, "/constraint never push", now=2.0))  # already there
    assert same.version == 1 and session.get_versioned_task_state() == before


def test_state_written_around_this_class_is_read_at_the_stored_version(session: Session) -> None:
    """A state put by other code has no version of its own inside; writes are checked against the
    store's version, so the next update still goes through."""
    session.put_task_state({"goal": "set by hand"})
    session.put_task_state({"goal": "set by hand again"})
    store = TaskStateStore(session)
    assert store.load().version == 2
    assert store.update(lambda s: apply_command(s, "/open next", now=1.0)).version == 3
