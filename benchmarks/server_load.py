"""Server load: `nova serve --provider demo` in a subprocess under 1, 10, 50 and 200 concurrent clients.

    python benchmarks/server_load.py [--levels 1,10,50,200] [--turns 20]

Each client is a thread with its own keep-alive connection and its own session; it sends `--turns`
turns one after another (`POST /api/sessions/{id}/messages`, the whole UI message stream read to
`[DONE]`). The demo model is offline and scripted: every turn lists the project's files, reads one and
answers (three model calls, two tool calls, all recorded), so the figures are the server's own cost.
Sessions are created before a level starts and are not timed; the levels run one after another on
the same server, so the sessions of the earlier levels stay open (or are evicted) while later ones run.

Measured per level: turns per second (all turns / the level's wall time) and the p95 turn latency. An
error is a non-200 answer, a stream that does not end with `[DONE]`, a stream carrying an error chunk,
or a dropped connection. Afterwards every session's record is read back through the API and each
turn's prompt is looked for among its user messages: a prompt not there is a lost turn.

Levels of at most 500 turns (1 and 10 clients) last seconds, so they run three times (fresh sessions
each time) and report the run of median throughput; p95, errors and lost turns cover every run.

Baseline (in the same run): the throughput at 10 clients. Targets: turns/s at 200 clients >= 0.8x that
at 10; no errors; no lost turns. Exits 1 on a miss.

Last line: {"turns_per_s": {"1", "10", "50", "200"}, "p95_ms": {...}, "errors", "lost_turns"}.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TARGET_RATIO = 0.8
SHORT_LEVEL_TURNS = 500
SHORT_LEVEL_RUNS = 3
TOKEN_FILE = "server-token"  # nova.server.token.TOKEN_FILE; not imported so the client stays light


@dataclass
class Client:
    """One keep-alive HTTP connection to the server with the bearer token."""

    port: int
    token: str
    conn: http.client.HTTPConnection = field(init=False)

    def __post_init__(self) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=300)

    def request(self, method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, bytes]:
        headers = {"authorization": f"Bearer {self.token}"}
        payload = None
        if body is not None:
            payload = json.dumps(body).encode()
            headers["content-type"] = "application/json"
        for attempt in (1, 2):
            try:
                self.conn.request(method, path, body=payload, headers=headers)
                response = self.conn.getresponse()
                return response.status, response.read()
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                # A keep-alive connection the server closed while idle: reconnect once, then give up.
                self.conn.close()
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def close(self) -> None:
        self.conn.close()


@dataclass
class LevelResult:
    clients: int
    turns: int
    wall_s: float
    latencies: list[float]
    errors: list[str]
    sessions: dict[str, list[str]]
    """Session id -> the prompts sent on it (for the lost-turn count)."""
    server_cpu_s: float | None = None
    runs: int = 1

    @property
    def cpu_ms_per_turn(self) -> float | None:
        return self.server_cpu_s / self.turns * 1000 if self.server_cpu_s is not None and self.turns else None

    @property
    def turns_per_s(self) -> float:
        return self.turns / self.wall_s if self.wall_s else 0.0

    @property
    def p95_ms(self) -> float:
        if not self.latencies:
            return 0.0
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))] * 1000


def median_run(runs: list[LevelResult]) -> LevelResult:
    """The run with the median throughput, with the latencies, errors and sessions of every run."""
    middle = sorted(runs, key=lambda r: r.turns_per_s)[len(runs) // 2]
    return LevelResult(
        clients=middle.clients, turns=middle.turns, wall_s=middle.wall_s, server_cpu_s=middle.server_cpu_s,
        latencies=[x for r in runs for x in r.latencies], errors=[e for r in runs for e in r.errors],
        sessions={sid: prompts for r in runs for sid, prompts in r.sessions.items()}, runs=len(runs),
    )


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of a process so far (Linux); None where /proc is not there."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def make_project(root: Path) -> Path:
    """A few small files: the demo model lists them and reads the first text file each turn."""
    (root / "src").mkdir(parents=True)
    (root / "README.md").write_text("# Load test\n\nA tiny project for the server benchmark.\n" * 4)
    for i in range(5):
        (root / "src" / f"mod{i}.py").write_text(f'"""Module {i}."""\n\ndef f{i}(x):\n    return x * {i}\n')
    return root


@contextmanager
def nova_serve(home: Path, project: Path) -> Iterator[tuple[int, str, subprocess.Popen[bytes]]]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NOVA_", "ANTHROPIC_", "OPENAI_"))}
    env["NOVA_HOME"] = str(home)
    log = (home.parent / "serve.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "nova.cli.main", "serve", "--port", str(port), "--provider", "demo", "--cwd", str(project)],
        env=env, stdout=log, stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                raise SystemExit("nova serve exited:\n" + (home.parent / "serve.log").read_text(errors="replace"))
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
                conn.request("GET", "/health")
                if conn.getresponse().status == 200:
                    conn.close()
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise SystemExit("nova serve did not come up in 60 s")
            time.sleep(0.1)
        yield port, (home / TOKEN_FILE).read_text().strip(), process
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def stream_problem(status: int, raw: bytes) -> str | None:
    """Why a turn's answer is not a good, complete stream; None when it is."""
    if status != 200:
        return f"HTTP {status}: {raw[:200]!r}"
    if not raw.rstrip().endswith(b"data: [DONE]"):
        return "the stream did not end with [DONE]"
    if b'"type":"error"' in raw or b'"type": "error"' in raw:
        return "the stream carried an error chunk"
    return None


def run_level(port: int, token: str, clients: int, turns: int, server_pid: int) -> LevelResult:
    sessions: list[str] = []
    setup = Client(port, token)
    for n in range(clients):
        status, raw = setup.request("POST", "/api/sessions", {"title": f"load {clients}.{n}"})
        if status != 201:
            raise SystemExit(f"creating a session failed: HTTP {status} {raw[:200]!r}")
        sessions.append(json.loads(raw)["id"])
    setup.close()

    latencies: list[float] = []
    errors: list[str] = []
    sent: dict[str, list[str]] = {sid: [] for sid in sessions}
    lock = threading.Lock()
    start = threading.Barrier(clients + 1)

    def client(session_id: str, n: int) -> None:
        http_client = Client(port, token)
        mine: list[float] = []
        problems: list[str] = []
        start.wait()
        for turn in range(turns):
            prompt = f"client {clients}.{n} turn {turn}: which files are here?"
            sent[session_id].append(prompt)
            began = time.perf_counter()
            try:
                status, raw = http_client.request("POST", f"/api/sessions/{session_id}/messages", {"text": prompt})
            except (OSError, http.client.HTTPException) as exc:
                problems.append(f"{type(exc).__name__}: {exc}")
                http_client.close()
                http_client = Client(port, token)
                continue
            mine.append(time.perf_counter() - began)
            if (problem := stream_problem(status, raw)) is not None:
                problems.append(problem)
        http_client.close()
        with lock:
            latencies.extend(mine)
            errors.extend(problems)

    threads = [threading.Thread(target=client, args=(sid, n), daemon=True) for n, sid in enumerate(sessions)]
    for thread in threads:
        thread.start()
    start.wait()
    began = time.perf_counter()
    cpu_before = cpu_seconds(server_pid)
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - began
    cpu_after = cpu_seconds(server_pid)
    cpu = cpu_after - cpu_before if cpu_before is not None and cpu_after is not None else None
    return LevelResult(clients=clients, turns=clients * turns, wall_s=wall, latencies=latencies, errors=errors,
                       sessions=sent, server_cpu_s=cpu)


def count_lost(port: int, token: str, levels: list[LevelResult]) -> int:
    """Prompts sent that are not among the user messages of their session's record."""
    reader = Client(port, token)
    lost = 0
    try:
        for level in levels:
            for session_id, prompts in level.sessions.items():
                status, raw = reader.request("GET", f"/api/sessions/{session_id}")
                if status != 200:
                    lost += len(prompts)
                    continue
                recorded = {m.get("text", "") for m in json.loads(raw)["messages"] if m.get("role") == "user"}
                lost += sum(1 for prompt in prompts if prompt not in recorded)
    finally:
        reader.close()
    return lost


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--levels", default="1,10,50,200", help="concurrent clients per level, comma-separated")
    parser.add_argument("--turns", type=int, default=20, help="turns per client")
    args = parser.parse_args()
    levels = [int(x) for x in args.levels.split(",")]

    tmp = Path(tempfile.mkdtemp(prefix="nova-load-"))
    results: list[LevelResult] = []
    try:
        home = tmp / "home"
        project = make_project(tmp / "project")
        with nova_serve(home, project) as (port, token, process):
            for clients in levels:
                # A level of a few hundred turns lasts a few seconds, short enough for another process
                # on the machine to skew it: run it three times and take the median.
                repeat = SHORT_LEVEL_RUNS if clients * args.turns <= SHORT_LEVEL_TURNS else 1
                result = median_run([run_level(port, token, clients, args.turns, process.pid)
                                     for _ in range(repeat)])
                results.append(result)
                print(f"  {clients:>4} clients: {result.turns_per_s:8.1f} turns/s  p95 {result.p95_ms:8.1f} ms  "
                      f"errors {len(result.errors)}  ({result.wall_s:.1f} s)",
                      file=sys.stderr, flush=True)
            lost = count_lost(port, token, results)
            if process.poll() is not None:
                raise SystemExit("nova serve died during the run")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    errors = [e for r in results for e in r.errors]
    by_clients = {r.clients: r for r in results}
    base = by_clients.get(10)
    top = by_clients.get(200)
    ratio = top.turns_per_s / base.turns_per_s if base and top and base.turns_per_s else None

    print(f"{'clients':>8}  {'turns':>6}  {'turns/s':>9}  {'p95 ms':>9}  {'server CPU ms/turn':>18}  {'errors':>6}"
          "  vs 10 clients")
    for r in results:
        vs = f"{r.turns_per_s / base.turns_per_s:.2f}x" if base and base.turns_per_s else "-"
        cpu = f"{r.cpu_ms_per_turn:.1f}" if r.cpu_ms_per_turn is not None else "-"
        print(f"{r.clients:>8}  {r.turns:>6}  {r.turns_per_s:>9.1f}  {r.p95_ms:>9.1f}  {cpu:>18}  {len(r.errors):>6}"
              f"  {vs}")
    for problem in sorted(set(errors))[:10]:
        print(f"  error: {problem}")
    missed: list[str] = []
    if ratio is not None:
        verdict = "ok" if ratio >= TARGET_RATIO else "MISSED"
        print(f"throughput at 200 clients / at 10 clients: {ratio:.2f} (target >= {TARGET_RATIO}) {verdict}")
        if ratio < TARGET_RATIO:
            missed.append("throughput at 200 clients")
    if base and top and base.cpu_ms_per_turn and top.cpu_ms_per_turn:
        # Less noisy than wall time on a shared machine: what one turn costs the server at each level.
        print(f"server CPU per turn at 200 clients / at 10 clients: {top.cpu_ms_per_turn / base.cpu_ms_per_turn:.2f}")
    print(f"errors: {len(errors)} (target 0); lost turns: {lost} (target 0)")
    if errors:
        missed.append("errors")
    if lost:
        missed.append("lost turns")
    if missed:
        print("MISSED: " + ", ".join(missed))
    print(json.dumps({
        "turns_per_s": {str(r.clients): round(r.turns_per_s, 2) for r in results},
        "p95_ms": {str(r.clients): round(r.p95_ms, 1) for r in results},
        "errors": len(errors),
        "lost_turns": lost,
    }))
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
