"""Several `nova serve` workers over one PostgreSQL: any worker continues any session, a busy session
answers 409 naming its holder, a client follows a turn from another worker, and a worker killed with
SIGKILL mid-turn (20 times, after a different number of streamed events each time) loses no record the
stream acknowledged (a finished step), leaves no unpaired tool call, and the next turn on the other worker succeeds.

Each worker is a real `nova serve` subprocess with its own NOVA_HOME (as on separate hosts) sharing the
database of `.ci/postgres`; without it these tests skip."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx2 as httpx
import pytest

from nova.history.invariants import check_tool_pairing
from nova.messages import ToolResultPart
from nova.sessions.repair import repair_history
from nova.sessions.schema import MessageRecord, parse_record

from ..postgres_db import fresh_schema
from .helpers import free_socket, wait_serving

# Slow tier: several nova serve processes over a real PostgreSQL.
pytestmark = pytest.mark.slow

TOKEN = "scale-out-test-token"


class Worker:
    def __init__(self, home: Path, project: Path, url: str) -> None:
        self.home, self.project, self.url = home, project, url
        sock = free_socket()
        self.port = sock.getsockname()[1]
        sock.close()
        self.base = f"http://127.0.0.1:{self.port}"
        home.mkdir(parents=True, exist_ok=True)
        (home / "server-token").write_text(TOKEN + "\n")
        os.chmod(home / "server-token", 0o600)
        self.proc: subprocess.Popen[str] | None = None

    def start(self) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("NOVA_", "ANTHROPIC_", "OPENAI_"))}
        env.update(NOVA_HOME=str(self.home), NOVA_DATABASE_URL=self.url)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "nova.cli.main", "serve", "--port", str(self.port), "--provider", "demo",
             "--cwd", str(self.project)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

    def wait_up(self) -> None:
        assert self.proc is not None
        wait_serving(self.base, self.proc, seconds=60)

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.base, headers={"authorization": f"Bearer {TOKEN}"}, timeout=60)


@pytest.fixture
def workers(tmp_path: Path) -> Iterator[tuple[Worker, Worker]]:
    schema = fresh_schema()
    url = next(schema)
    project = tmp_path / "project"
    project.mkdir()
    (project / "notes.md").write_text("hello\n")
    pair = (Worker(tmp_path / "a", project, url), Worker(tmp_path / "b", project, url))
    try:
        for w in pair:
            w.start()
        for w in pair:
            w.wait_up()
        yield pair
    finally:
        for w in pair:
            w.stop()
        schema.close()


def _chunks(lines: Iterator[str]) -> Iterator[dict[str, object]]:
    for line in lines:
        if line.startswith("data: {"):
            yield json.loads(line[6:])


def _turn(worker: Worker, session_id: str, text: str) -> list[dict[str, object]]:
    with worker.client() as client, client.stream("POST", f"/api/sessions/{session_id}/messages",
                                                  json={"text": text}) as response:
        assert response.status_code == 200, response.read()
        return list(_chunks(response.iter_lines()))


def _records(url: str, session_id: str) -> list[MessageRecord]:
    import psycopg

    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT record::text FROM nova_records WHERE session_id = %s ORDER BY seq",
                            (session_id,)).fetchall()
    records = [parse_record(r[0], "test") for r in rows]
    return [r for r in records if isinstance(r, MessageRecord)]


def test_any_worker_continues_any_session(workers: tuple[Worker, Worker]) -> None:
    a, b = workers
    with a.client() as client:
        session_id = client.post("/api/sessions", json={"title": "shared"}).json()["id"]
    first = _turn(a, session_id, "list the files")
    assert first[-1]["type"] == "finish"
    second = _turn(b, session_id, "read notes.md")
    assert second[-1]["type"] == "finish"
    with b.client() as client:
        detail = client.get(f"/api/sessions/{session_id}").json()
        listed = [s["id"] for s in client.get("/api/sessions").json()]
    assert session_id in listed
    users = [m["text"] for m in detail["messages"] if m["role"] == "user" and m["text"]]
    assert users[:1] == ["list the files"] and "read notes.md" in users
    assert detail["session"]["message_count"] == len(detail["messages"])


def test_a_busy_session_answers_409_naming_the_holder(workers: tuple[Worker, Worker]) -> None:
    import psycopg

    from nova.sessions.turn_lock import lock_key

    a, _ = workers
    with a.client() as client:
        session_id = client.post("/api/sessions", json={}).json()["id"]
        with psycopg.connect(a.url, autocommit=True, application_name="nova other-host:4242") as holder:
            holder.execute("SELECT pg_advisory_lock(%s)", (lock_key(session_id),))
            busy = client.post(f"/api/sessions/{session_id}/messages", json={"text": "hi"})
            assert busy.status_code == 409
            assert "nova other-host:4242" in busy.json()["detail"]
        # The holder's connection ended: its lock went with it.
        assert _turn(a, session_id, "list the files")[-1]["type"] == "finish"


def test_every_use_of_a_session_held_by_another_worker_answers_409(workers: tuple[Worker, Worker]) -> None:
    """Reading the live context, compacting and deleting claim the session across workers as a turn does:
    while another holds it they are refused naming the holder; once it is free they work."""
    import psycopg

    from nova.sessions.turn_lock import lock_key

    a, b = workers
    with a.client() as client:
        session_id = client.post("/api/sessions", json={}).json()["id"]
    assert _turn(a, session_id, "list the files")[-1]["type"] == "finish"
    with b.client() as client:
        with psycopg.connect(b.url, autocommit=True, application_name="nova other-host:4343") as holder:
            holder.execute("SELECT pg_advisory_lock(%s)", (lock_key(session_id),))
            refused = [client.get(f"/api/sessions/{session_id}/context"),
                       client.post(f"/api/sessions/{session_id}/compact", json={}),
                       client.delete(f"/api/sessions/{session_id}")]
            assert [r.status_code for r in refused] == [409, 409, 409]
            assert all("nova other-host:4343" in r.json()["detail"] for r in refused)
            # The index is not claimed: the session is listed and shown meanwhile.
            assert client.get(f"/api/sessions/{session_id}").status_code == 200
        context = client.get(f"/api/sessions/{session_id}/context")
        assert context.status_code == 200 and context.json()["used"] > 0
        assert client.post(f"/api/sessions/{session_id}/compact", json={}).status_code == 200
        assert client.delete(f"/api/sessions/{session_id}").status_code == 204
    with a.client() as client:
        assert client.get(f"/api/sessions/{session_id}").status_code == 404
        assert session_id not in [s["id"] for s in client.get("/api/sessions").json()]


def test_a_client_follows_and_resumes_a_turn_from_another_worker(workers: tuple[Worker, Worker]) -> None:
    a, b = workers
    with a.client() as client:
        session_id = client.post("/api/sessions", json={}).json()["id"]
    sent = _turn(a, session_id, "list the files")
    with b.client() as client:
        whole = client.get(f"/api/sessions/{session_id}/events").text
        ids = [int(line[4:]) for line in whole.splitlines() if line.startswith("id: ")]
        assert list(_chunks(iter(whole.splitlines()))) == sent
        resumed = client.get(f"/api/sessions/{session_id}/events", headers={"last-event-id": str(ids[2])}).text
    assert [int(line[4:]) for line in resumed.splitlines() if line.startswith("id: ")] == ids[3:]


def test_killing_a_worker_mid_turn_loses_no_acknowledged_record(workers: tuple[Worker, Worker]) -> None:
    pair = list(workers)
    with pair[0].client() as client:
        session_id = client.post("/api/sessions", json={"title": "faults"}).json()["id"]
    for attempt in range(20):
        victim, other = pair[attempt % 2], pair[(attempt + 1) % 2]
        victim.wait_up()
        seen: list[dict[str, object]] = []
        kill_after = 1 + attempt  # a different moment each time: after this many streamed events
        with victim.client() as client:
            try:
                with client.stream("POST", f"/api/sessions/{session_id}/messages",
                                   json={"text": "list the files"}) as response:
                    assert response.status_code == 200, response.read()
                    for chunk in _chunks(response.iter_lines()):
                        seen.append(chunk)
                        if len(seen) == kill_after:
                            victim.kill()
            except httpx.TransportError:
                pass  # the worker died under the stream: expected
        if victim.proc is not None and victim.proc.poll() is None:
            victim.kill()
        victim.start()  # comes back while the other worker takes the next turn
        stored = _records(victim.url, session_id)
        results = {p.tool_use_id for r in stored for p in r.message.parts if isinstance(p, ToolResultPart)}
        # A step's records (the assistant's calls, then all its results as one message) are stored when
        # the step ends, which the stream acknowledges with `finish-step`; a tool's output is streamed as
        # soon as that tool ends, before its step's record, so it counts once its step was acknowledged.
        ends = [n for n, c in enumerate(seen) if c["type"] == "finish-step"]
        acknowledged = {str(c["toolCallId"]) for c in seen[: ends[-1] if ends else 0]
                        if c["type"] == "tool-output-available"}
        assert acknowledged <= results, (attempt, acknowledged - results)
        other.wait_up()  # killed the round before and started again meanwhile
        assert _turn(other, session_id, "read notes.md")[-1]["type"] == "finish", attempt
        history = [r.message for r in _records(other.url, session_id)]
        repaired, _ = repair_history(history)
        assert check_tool_pairing(repaired) == []
    with other.client() as client:
        detail = client.get(f"/api/sessions/{session_id}").json()
    assert detail["session"]["message_count"] >= 20
    # The working view the next worker resumes: every tool call paired.
    final = _records(pair[0].url, session_id)
    assert check_tool_pairing(repair_history([r.message for r in final])[0]) == []


def test_workers_sharing_one_home_alternate_on_the_same_sessions(tmp_path: Path) -> None:
    """`nova serve --workers N` shares one NOVA_HOME: a session created (or last used) on one worker is
    not held open there, so the next turn on another worker resumes it instead of finding it locked."""
    from concurrent.futures import ThreadPoolExecutor

    schema = fresh_schema()
    url = next(schema)
    project = tmp_path / "project"
    project.mkdir()
    pair = (Worker(tmp_path / "home", project, url), Worker(tmp_path / "home", project, url))
    try:
        for w in pair:
            w.start()
        for w in pair:
            w.wait_up()
        with pair[0].client() as client:
            ids = [client.post("/api/sessions", json={}).json()["id"] for _ in range(4)]

        def drive(session_id: str) -> list[str]:
            return [str(_turn(pair[n % 2], session_id, "list the files")[-1]["type"]) for n in range(1, 4)]

        with ThreadPoolExecutor(4) as pool:
            assert list(pool.map(drive, ids)) == [["finish"] * 3] * 4
    finally:
        for w in pair:
            w.stop()
        schema.close()


def test_workers_on_different_hosts_serve_one_token(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from nova.server.shared_token import server_token

    schema = fresh_schema()
    monkeypatch.setenv("NOVA_DATABASE_URL", next(schema))
    try:
        first, created = server_token(tmp_path / "host-a")
        assert created
        (tmp_path / "host-b").mkdir()
        (tmp_path / "host-b" / "server-token").write_text("a-token-made-before-the-database-was-set\n")
        second, created_b = server_token(tmp_path / "host-b")
        assert second == first and not created_b
        path = tmp_path / "host-b" / "server-token"
        assert path.read_text().strip() == first and path.stat().st_mode & 0o777 == 0o600
    finally:
        schema.close()


def test_serve_workers_refuses_without_a_database(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NOVA_", "ANTHROPIC_", "OPENAI_"))}
    env["NOVA_HOME"] = str(tmp_path / "home")
    run = subprocess.run([sys.executable, "-m", "nova.cli.main", "serve", "--workers", "2", "--provider", "demo"],
                         env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode != 0
    assert "several workers share their sessions through PostgreSQL: set NOVA_DATABASE_URL" in run.stderr + run.stdout
    assert "Traceback" not in run.stderr


def test_serve_workers_restarts_a_killed_worker(tmp_path: Path) -> None:
    """`nova serve --workers 2`: one port, two processes; a worker killed with SIGKILL is replaced and
    the sessions go on over the survivor meanwhile."""
    schema = fresh_schema()
    url = next(schema)
    project = tmp_path / "project"
    project.mkdir()
    worker = Worker(tmp_path / "home", project, url)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NOVA_", "ANTHROPIC_", "OPENAI_"))}
    env.update(NOVA_HOME=str(worker.home), NOVA_DATABASE_URL=url)
    supervisor = subprocess.Popen(
        [sys.executable, "-m", "nova.cli.main", "serve", "--workers", "2", "--port", str(worker.port), "--provider",
         "demo", "--cwd", str(project)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    worker.proc = supervisor  # type: ignore[assignment]
    try:
        worker.wait_up()
        assert supervisor.stdout is not None
        line = ""
        while "workers (pids" not in line:
            line = supervisor.stdout.readline()
            assert line, "the supervisor ended"
        pids = [int(p) for p in line.split("(pids ")[1].split(")")[0].split(", ")]
        assert len(pids) == 2
        with worker.client() as client:
            session_id = client.post("/api/sessions", json={}).json()["id"]
        assert _turn(worker, session_id, "list the files")[-1]["type"] == "finish"
        os.kill(pids[0], signal.SIGKILL)
        for _ in range(3):  # served by the survivor while the replacement starts
            assert _turn(worker, session_id, "read notes.md")[-1]["type"] == "finish"
        restarted = supervisor.stdout.readline()
        assert f"worker {pids[0]} ended" in restarted and "starting another" in restarted
    finally:
        supervisor.terminate()
        try:
            supervisor.wait(timeout=20)
        except subprocess.TimeoutExpired:
            supervisor.kill()
        schema.close()


def test_cancel_reaches_a_turn_running_on_another_worker(workers: tuple[Worker, Worker]) -> None:
    a, b = workers
    with a.client() as client:
        left_alone = client.post("/api/sessions", json={}).json()["id"]
    whole = _turn(b, left_alone, "list the files")  # the turn, left to run
    assert whole[-1]["type"] == "finish" and whole[-1]["finishReason"] != "other"
    whole_steps = sum(c["type"] == "start-step" for c in whole)
    # The demo turn takes milliseconds: a cancel sent after its first event can arrive once the turn is over
    # (then it rightly finishes) or during its last step (stopped, with every step started). A few fresh
    # turns give the cancel its chance; one must stop before all the turn's steps ran.
    for _ in range(8):
        with a.client() as client:
            session_id = client.post("/api/sessions", json={}).json()["id"]
        with b.client() as other:
            assert other.post(f"/api/sessions/{session_id}/cancel").json() == {"cancelled": False}  # nothing runs
        seen: list[dict[str, object]] = []
        with a.client() as client, b.client() as other, client.stream(
                "POST", f"/api/sessions/{session_id}/messages", json={"text": "list the files"}) as response:
            for chunk in _chunks(response.iter_lines()):
                if not seen:
                    assert other.post(f"/api/sessions/{session_id}/cancel").json()["cancelled"] in (True, False)
                seen.append(chunk)
        stopped = seen[-1] == {"type": "finish", "finishReason": "other"}
        if stopped and sum(c["type"] == "start-step" for c in seen) < whole_steps:
            break
    else:
        raise AssertionError("no cancel sent from the other worker stopped a running turn early in 8 tries")


def test_turn_events_keep_only_the_latest_turns(workers: tuple[Worker, Worker]) -> None:
    import psycopg

    a, b = workers
    with a.client() as client:
        session_id = client.post("/api/sessions", json={}).json()["id"]
    for worker in (a, b, a):
        _turn(worker, session_id, "list the files")
    with psycopg.connect(a.url) as conn:
        turns = conn.execute("SELECT COUNT(DISTINCT turn_id) FROM nova_events WHERE session_id = %s",
                             (session_id,)).fetchone()
    assert turns == (2,)
