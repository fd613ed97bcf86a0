"""Scale-out benchmark: `nova serve --workers k` (k = 1, 2, 4) over one PostgreSQL, the demo provider,
many concurrent sessions each running turns one after another.

    NOVA_DATABASE_URL=postgresql://… python benchmarks/scale_out.py [--sessions 200] [--turns 2]

Without NOVA_DATABASE_URL (or NOVA_TEST_DATABASE_URL) a throwaway cluster is started with .ci/postgres.
Each k runs in a fresh schema. The issue asks for 20 turns per session; on a 2-core machine shared with
other work that is over two minutes per k, so the default is 2 turns (pass --turns 20 for the full run).
The baselines are measured in the same run: one `nova serve` process on SQLite (no database URL: the
home's files) and the 1-worker PostgreSQL run. Targets: one PostgreSQL worker >= 0.7 x the SQLite
process's turns/s; turns/s with k workers >= 0.7 x min(k, cores) x turns/s with 1 worker; 0 lost turns (a
turn is lost when its stream does not end in `finish`). `--workers 1` runs only the SQLite-vs-PostgreSQL
comparison.

Last line: {"turns_per_s": {"1", "2", "4"}, "scaling_4_vs_1", "sqlite_turns_per_s", "postgres_turns_per_s",
"postgres_vs_sqlite", "lost_turns", "cores"}.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import quote

import httpx2 as httpx

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "scale-out-benchmark-token"
PG_VS_SQLITE_TARGET = 0.7
"""One PostgreSQL worker serves at least this share of one SQLite process's turns/s."""


def database() -> tuple[str, str | None]:
    url = os.environ.get("NOVA_DATABASE_URL") or os.environ.get("NOVA_TEST_DATABASE_URL")
    if url:
        return url, None
    out = subprocess.run(["bash", str(ROOT / ".ci" / "postgres"), "start"], check=True, capture_output=True,
                         text=True).stdout
    env = dict(line.removeprefix("export ").split("=", 1) for line in out.splitlines() if "=" in line)
    return env["NOVA_TEST_DATABASE_URL"], env["NOVA_TEST_PGDATA"]


def run_k(base_url: str | None, k: int, sessions: int, turns: int, work: Path) -> dict[str, float]:
    """One `nova serve --workers k` run; `base_url` None is one process on SQLite (the home's files)."""
    import psycopg

    schema = "bench_" + uuid.uuid4().hex[:10]
    url = ""
    if base_url is not None:
        with psycopg.connect(base_url, autocommit=True) as conn:
            conn.execute(f"CREATE SCHEMA {schema}")
        sep = "&" if "?" in base_url else "?"
        url = f"{base_url}{sep}options={quote(f'-csearch_path={schema}')}"
    home = work / (f"home{k}" if base_url is not None else "home-sqlite")
    home.mkdir()
    (home / "server-token").write_text(TOKEN + "\n")
    os.chmod(home / "server-token", 0o600)
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    env = {kk: v for kk, v in os.environ.items() if not kk.startswith(("NOVA_", "ANTHROPIC_", "OPENAI_"))}
    env.update(NOVA_HOME=str(home))
    if url:
        env.update(NOVA_DATABASE_URL=url, NOVA_DATABASE_POOL_SIZE="8")
    proc = subprocess.Popen([sys.executable, "-m", "nova.cli.main", "serve", "--workers", str(k), "--port", str(port),
                             "--provider", "demo", "--cwd", str(work / "project")], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    headers = {"authorization": f"Bearer {TOKEN}"}
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{base}/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline or proc.poll() is not None:
                raise SystemExit(f"nova serve --workers {k} did not come up")
            time.sleep(0.1)
        time.sleep(0.5 * k)  # every worker up, not only the first
        with httpx.Client(base_url=base, headers=headers, timeout=120) as client:
            ids = [client.post("/api/sessions", json={"title": f"s{n}"}).json()["id"] for n in range(sessions)]
        latencies: list[float] = []
        lost = 0

        def drive(session_id: str) -> tuple[list[float], int]:
            mine: list[float] = []
            missed = 0
            with httpx.Client(base_url=base, headers=headers, timeout=300) as c:
                for _ in range(turns):
                    t0 = time.perf_counter()
                    try:
                        r = c.post(f"/api/sessions/{session_id}/messages", json={"text": "list the files"})
                        ok = r.status_code == 200 and '"type":"finish"' in r.text
                    except httpx.TransportError:
                        ok = False
                    mine.append(time.perf_counter() - t0)
                    missed += not ok
            return mine, missed

        start = time.perf_counter()
        with ThreadPoolExecutor(max_workers=sessions) as pool:
            for mine, missed in pool.map(drive, ids):
                latencies.extend(mine)
                lost += missed
        elapsed = time.perf_counter() - start
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
        if base_url is not None:
            with psycopg.connect(base_url, autocommit=True) as conn:
                conn.execute(f"DROP SCHEMA {schema} CASCADE")
    latencies.sort()
    return {"turns_per_s": (sessions * turns - lost) / elapsed, "lost": lost, "elapsed_s": elapsed,
            "p95_ms": 1000 * latencies[int(0.95 * (len(latencies) - 1))],
            "p50_ms": 1000 * statistics.median(latencies)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--turns", type=int, default=2)
    parser.add_argument("--workers", default="1,2,4", help="the worker counts to run, comma-separated (1 first)")
    args = parser.parse_args()
    counts = sorted({int(k) for k in args.workers.split(",")} | {1})
    cores = os.cpu_count() or 1
    url, started = database()
    results: dict[int, dict[str, float]] = {}
    try:
        with tempfile.TemporaryDirectory(prefix="nova-scale-out-") as tmp:
            work = Path(tmp)
            (work / "project").mkdir()
            (work / "project" / "notes.md").write_text("hello\n")
            sqlite = run_k(None, 1, args.sessions, args.turns, work)
            for k in counts:
                results[k] = run_k(url, k, args.sessions, args.turns, work)
    finally:
        if started:
            subprocess.run(["bash", str(ROOT / ".ci" / "postgres"), "stop", started], check=False)
    one = results[1]["turns_per_s"]
    vs_sqlite = one / sqlite["turns_per_s"]
    print(f"{args.sessions} concurrent sessions x {args.turns} turns, demo provider, {cores} cores")
    print(f"{'store':>10}  {'workers':>7}  {'turns/s':>8}  {'vs 1':>6}  {'target':>6}  {'p50 ms':>8}  {'p95 ms':>8}"
          f"  {'lost':>4}")
    missed = []
    print(f"{'sqlite':>10}  {1:>7}  {sqlite['turns_per_s']:>8.1f}  {'':>6}  {'':>6}  {sqlite['p50_ms']:>8.0f}  "
          f"{sqlite['p95_ms']:>8.0f}  {int(sqlite['lost']):>4}")
    for k, r in results.items():
        target = 0.7 * min(k, cores)
        ratio = r["turns_per_s"] / one
        if ratio < target:
            missed.append(f"{k} workers: {ratio:.2f}x < {target:.2f}x")
        print(f"{'postgres':>10}  {k:>7}  {r['turns_per_s']:>8.1f}  {ratio:>5.2f}x  {target:>5.2f}x  "
              f"{r['p50_ms']:>8.0f}  {r['p95_ms']:>8.0f}  {int(r['lost']):>4}")
    print(f"one PostgreSQL worker vs one SQLite process: {vs_sqlite:.2f}x (target >= {PG_VS_SQLITE_TARGET:.2f}x)")
    if vs_sqlite < PG_VS_SQLITE_TARGET:
        missed.append(f"postgres/sqlite turns/s {vs_sqlite:.2f}x < {PG_VS_SQLITE_TARGET:.2f}x")
    lost = int(sum(r["lost"] for r in results.values()) + sqlite["lost"])
    if lost:
        missed.append(f"{lost} lost turns")
    for line in missed:
        print("MISSED:", line)
    top = max(results)
    print(json.dumps({"turns_per_s": {str(k): round(r["turns_per_s"], 2) for k, r in results.items()},
                      f"scaling_{top}_vs_1": round(results[top]["turns_per_s"] / one, 3),
                      "sqlite_turns_per_s": round(sqlite["turns_per_s"], 2), "postgres_turns_per_s": round(one, 2),
                      "postgres_vs_sqlite": round(vs_sqlite, 3), "lost_turns": lost, "cores": cores}))
    if missed:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
