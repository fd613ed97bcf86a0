"""MEM-6: gates with an injected clock, merges and deletes with a log, a lock taken over between real
processes when its holder is dead or the lock is stale."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from nova.memory.consolidate import ConsolidationLock, Consolidator, count_sessions_since
from nova.memory.store import Memory, MemorySource, MemoryStore

T0 = 1_750_000_000.0
HOUR = 3600.0


class FakeClock:
    def __init__(self, now: float = T0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def make(store: MemoryStore, state_dir: Path, clock: FakeClock, sessions: list[int]) -> Consolidator:
    return Consolidator(store=store, state_dir=state_dir, clock=clock, count_sessions=lambda since: sessions[0])


def test_gates_time_sessions_and_scan_throttle(store: MemoryStore, tmp_path: Path) -> None:
    clock, sessions = FakeClock(), [0]
    consolidator = make(store, tmp_path / "state", clock, sessions)
    first = consolidator.maybe_run()
    assert not first.ran and first.reason == "not enough sessions since the last run (0 of 5)"
    sessions[0] = 5
    clock.advance(9 * 60)  # inside the 10-minute scan throttle: not even counted
    assert consolidator.maybe_run().reason.startswith("throttled")
    clock.advance(61)
    assert consolidator.maybe_run().ran
    clock.advance(11 * 60)
    sessions[0] = 0  # the counter restarts from the last run
    assert consolidator.maybe_run().reason.startswith("too soon")
    clock.advance(24 * HOUR)
    assert consolidator.maybe_run().reason.startswith("not enough sessions")
    clock.advance(11 * 60)
    sessions[0] = 4
    assert consolidator.maybe_run().reason == "not enough sessions since the last run (4 of 5)"
    clock.advance(11 * 60)
    sessions[0] = 5
    assert consolidator.maybe_run().ran


def test_session_count_passes_the_last_run_time(store: MemoryStore, tmp_path: Path) -> None:
    clock, asked = FakeClock(), []

    def count(since: float) -> int:
        asked.append(since)
        return 9

    consolidator = Consolidator(store=store, state_dir=tmp_path, clock=clock, count_sessions=count)
    assert consolidator.maybe_run().ran
    clock.advance(25 * HOUR)
    assert consolidator.maybe_run().ran
    assert asked == [0.0, T0]


def test_count_sessions_since_uses_session_directories(tmp_path: Path) -> None:
    for name, mtime in (("old", T0 - 10), ("new1", T0 + 10), ("new2", T0 + 20)):
        (tmp_path / name).mkdir()
        os.utime(tmp_path / name, (mtime, mtime))
    assert count_sessions_since(tmp_path)(T0) == 2
    assert count_sessions_since(tmp_path / "missing")(T0) == 0


def test_merges_duplicates_deletes_expired_and_logs(store: MemoryStore, tmp_path: Path) -> None:
    now = datetime.fromtimestamp(T0, UTC)

    def put(name: str, description: str, body: str, **kw: object) -> None:
        fields: dict[str, object] = {"created": now - timedelta(days=3), "updated": now - timedelta(days=3), **kw}
        store.write(Memory(name=name, description=description, body=body, **fields))  # type: ignore[arg-type]

    put("db-engine", "Database engine", "PostgreSQL 16.", type="project",
        source=MemorySource(messages=("a",)))  # approved: never merged into or out of
    put("db-again", "Which database", "PostgreSQL 16.", type="project", status="candidate")
    put("ci", "CI runner", "CI runs .ci/run.", type="project", status="candidate",
        source=MemorySource(messages=("b",)))
    put("ci-notes", "ci runner", "Integration tests are flaky.", type="project", status="candidate",
        updated=now - timedelta(days=1), source=MemorySource(messages=("c",)))
    put("old-sprint", "sprint goal", "Ship v2 by Friday.", type="project", expires=now - timedelta(hours=1))
    put("user-db", "Database engine", "Prefers SQLite locally.", type="user")  # other type: not a duplicate
    put("revoked", "Database engine", "x", type="project", status="revoked")
    approved_before = store.get("db-engine")
    report = make(store, tmp_path, FakeClock(), [5]).run()
    assert report.ran
    assert [e["name"] for e in report.deleted] == ["old-sprint"]
    [merge] = report.merged
    assert merge["into"] == "ci-notes" and merge["merged"] == ["ci"]
    assert [(e["name"], e["duplicates"]) for e in report.held] == [("db-again", "db-engine")]
    assert any("kept 'ci-notes' ← merged 'ci'" in line for line in report.describe())
    names = sorted(m.name for m in store.memories())
    assert names == ["ci-notes", "db-again", "db-engine", "revoked", "user-db"]
    assert store.get("db-engine") == approved_before  # the approved memory is untouched and active
    merged = store.get("ci-notes")
    assert merged.body == "Integration tests are flaky.\n\nCI runs .ci/run."
    assert merged.status == "candidate"  # a merge of unreviewed text stays unreviewed
    assert set(merged.source.messages) == {"b", "c"}
    log = [json.loads(line) for line in (tmp_path / "consolidation.log").read_text().splitlines()]
    assert sorted(e["action"] for e in log) == ["delete", "hold", "merge"]
    assert "old-sprint" not in (store.project_dir / "MEMORY.md").read_text()


def test_a_merge_keeps_every_description_and_the_latest_expiry(store: MemoryStore, tmp_path: Path) -> None:
    now = datetime.fromtimestamp(T0, UTC)
    base: dict[str, object] = {"type": "project", "status": "candidate", "created": now - timedelta(days=3)}
    store.write(Memory(name="deploy", description="How to deploy", body="Run make deploy.",  # type: ignore[arg-type]
                       updated=now - timedelta(days=1), expires=now + timedelta(days=5), **base))
    store.write(Memory(name="deploy-staging", description="Staging first", body="Run make deploy.",  # type: ignore[arg-type]
                       updated=now - timedelta(days=2), **base))
    store.write(Memory(name="deploy-longer", description="how to deploy",  # type: ignore[arg-type]
                       body="Run make deploy. It takes ten minutes.", updated=now - timedelta(days=2),
                       expires=now + timedelta(days=1), **base))
    report = make(store, tmp_path, FakeClock(), [5]).run()
    [merge] = report.merged
    assert merge["into"] == "deploy"
    merged = store.get("deploy")
    # The longer body replaces the shorter one it contains; the other description is kept, not dropped.
    assert merged.body == "Run make deploy. It takes ten minutes.\n\nStaging first"
    assert merged.expires is None  # one of them never expired: the merged text does not either


# -- the lock, between real processes ----------------------------------------------------------------
HOLDER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from nova.memory.consolidate import ConsolidationLock
    lock = ConsolidationLock(Path(sys.argv[1]), stale_after=float(sys.argv[2]))
    go = Path(sys.argv[3]) if len(sys.argv) > 3 else None
    while go is not None and not go.exists():
        time.sleep(0.005)
    acquired = lock.acquire()
    print("held" if acquired else "refused", flush=True)
    time.sleep(float(sys.argv[4]) if len(sys.argv) > 4 else 60)
""")


def spawn(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", HOLDER, *args], stdout=subprocess.PIPE, text=True)


@pytest.fixture
def processes() -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    yield started
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)
        if proc.stdout:
            proc.stdout.close()


def test_lock_held_by_a_live_process_is_respected_then_taken_over_when_it_dies(
        tmp_path: Path, processes: list[subprocess.Popen[str]], store: MemoryStore) -> None:
    lock_path = tmp_path / ".consolidate.lock"
    holder = spawn(str(lock_path), "3600")
    processes.append(holder)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    data = json.loads(lock_path.read_text())
    assert data["pid"] == holder.pid and data["host"] and data["started"] > 0

    contender = ConsolidationLock(lock_path, stale_after=3600)
    assert not contender.acquire()
    report = Consolidator(store=store, state_dir=tmp_path, count_sessions=lambda s: 9).run()
    assert not report.ran and f"locked by pid {holder.pid}" in report.reason

    holder.send_signal(signal.SIGKILL)
    holder.wait(10)
    assert contender.acquire()
    assert contender.took_over is not None and contender.took_over["reason"] == f"holder pid {holder.pid} is dead"
    assert json.loads(lock_path.read_text())["pid"] == os.getpid()
    contender.release()
    assert not lock_path.exists()


def test_lock_older_than_the_stale_age_is_taken_over_from_a_live_process(
        tmp_path: Path, processes: list[subprocess.Popen[str]]) -> None:
    lock_path = tmp_path / ".consolidate.lock"
    holder = spawn(str(lock_path), "3600")
    processes.append(holder)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    later = ConsolidationLock(lock_path, stale_after=3600, clock=lambda: time.time() + 2 * HOUR)
    assert later.acquire()
    assert later.took_over is not None and "older than the stale age" in later.took_over["reason"]
    # The old holder never deletes a lock it no longer owns.
    assert json.loads(lock_path.read_text())["pid"] == os.getpid()


def test_only_one_of_several_processes_takes_over_a_dead_lock(
        tmp_path: Path, processes: list[subprocess.Popen[str]]) -> None:
    lock_path = tmp_path / ".consolidate.lock"
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True)
    lock_path.write_text(json.dumps({"pid": int(dead.stdout), "host": socket.gethostname(),
                                     "started": time.time()}))
    go = tmp_path / "go"
    contenders = [spawn(str(lock_path), "3600", str(go), "3") for _ in range(4)]
    processes.extend(contenders)
    time.sleep(0.5)
    go.touch()
    answers = sorted(p.stdout.readline().strip() for p in contenders if p.stdout)
    assert answers == ["held", "refused", "refused", "refused"]


# -- what it did, undo, and edits made while it ran ----------------------------------------------------
def _pair(store: MemoryStore) -> None:
    now = datetime.fromtimestamp(T0, UTC)
    base: dict[str, object] = {"type": "project", "status": "candidate", "created": now - timedelta(days=3)}
    store.write(Memory(name="ci", description="CI runner", body="CI runs .ci/run.",  # type: ignore[arg-type]
                       updated=now - timedelta(days=2), **base))
    store.write(Memory(name="ci-notes", description="ci runner", body="Integration tests are flaky.",  # type: ignore[arg-type]
                       updated=now - timedelta(days=1), **base))
    store.write(Memory(name="sprint", description="sprint goal", body="Ship v2 by Friday.",  # type: ignore[arg-type]
                       type="project", expires=now - timedelta(hours=1)))


def test_every_change_says_why_and_undo_restores_it_with_its_review_state(store: MemoryStore, tmp_path: Path) -> None:
    from nova.memory.trash import Trash

    _pair(store)
    before = {p.name: p.read_text() for p in store.project_dir.glob("*.md") if p.name != "MEMORY.md"}
    report = make(store, tmp_path, FakeClock(), [5]).run()
    [merge], [delete] = report.merged, report.deleted
    assert merge["why"] == "'ci' has the same description"
    lines = report.describe()
    assert any("(\'ci\' has the same description)" in line and f"nova memory undo {merge['undo']}" in line
               for line in lines)
    assert any(line.startswith("deleted 'sprint': expired") and delete["undo"] in line for line in lines)
    trash = Trash(store.home_dir, clock=FakeClock())
    assert {op.id for op in trash.operations()} == {merge["undo"], delete["undo"]}

    trash.undo(store, delete["undo"])
    assert store.get("sprint").status == "active"  # approved before it expired, approved again
    undone = trash.undo(store, merge["undo"])
    assert sorted(Path(p).name for p in undone.restored) == ["ci-notes.md", "ci.md"]
    after = {p.name: p.read_text() for p in store.project_dir.glob("*.md") if p.name != "MEMORY.md"}
    assert after == before
    assert store.get("ci").status == "candidate" and store.get("ci").recorded
    assert trash.operations() == []


def test_undo_never_overwrites_an_edit_made_after_the_merge(store: MemoryStore, tmp_path: Path) -> None:
    from nova.memory.trash import Trash

    _pair(store)
    [merge] = make(store, tmp_path, FakeClock(), [5]).run().merged
    survivor = store.get("ci-notes")
    assert survivor.path is not None
    edited = survivor.path.read_text().replace("flaky.", "flaky on Mondays.")
    survivor.path.write_text(edited)
    report = Trash(store.home_dir, clock=FakeClock()).undo(store, merge["undo"])
    assert survivor.path.read_text() == edited and report.kept == [str(survivor.path)]
    assert store.get("ci").body == "CI runs .ci/run."  # the merged-away memory is back beside it


def test_the_trash_keeps_thirty_days(store: MemoryStore, tmp_path: Path) -> None:
    from nova.memory.trash import NothingToUndo, Trash

    _pair(store)
    clock = FakeClock()
    make(store, tmp_path, clock, [5]).run()
    clock.advance(29 * 24 * HOUR)
    assert len(Trash(store.home_dir, clock=clock).operations()) == 2
    clock.advance(2 * 24 * HOUR)
    assert Trash(store.home_dir, clock=clock).operations() == []
    with pytest.raises(NothingToUndo):
        Trash(store.home_dir, clock=clock).undo(store)


def test_an_edit_made_after_the_scan_started_is_never_lost(store: MemoryStore, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    _pair(store)
    consolidator = make(store, tmp_path, FakeClock(), [5])
    real_scan = store.memories

    def scan_then_user_edits(**kw: bool) -> list[Memory]:
        scanned = real_scan(**kw)
        # The user edits two files right after the scan read them (recorded, as `nova memory edit` does).
        for name, body in (("ci", "CI runs .ci/run in 90 minutes."), ("sprint", "Ship v2 by Monday.")):
            store.write(replace(store.get(name), body=body), by="user")
        return scanned

    monkeypatch.setattr(store, "memories", scan_then_user_edits)
    report = consolidator.run()
    assert report.merged == [] and report.deleted == []
    assert sorted(n for e in report.skipped for n in e["names"]) == ["ci", "sprint"]
    assert "edited after the consolidation scan started" in report.describe()[-1]
    assert "90 minutes" in (store.project_dir / "ci.md").read_text()
    assert "Monday" in (store.project_dir / "sprint.md").read_text()
    assert (store.project_dir / "ci-notes.md").exists()
