"""Recall scan (MEM-5) against a naive reader, over 200 and 10,000 memory files.

The scan (`nova.memory.recall.scan_headers`) picks the 200 most recently written files by mtime from
`os.scandir` and reads only the first 30 lines of each. The naive reader opens and parses every whole
file with python-frontmatter, sorts by the `updated` field and keeps 200. Only the scans are
timed; both results then feed the same BM25 selector with the same queries, and the picks must be
identical.

    python benchmarks/memory_scan.py            # prints a table, then one JSON line

Targets: >= 3x faster than naive at 200 files; scan time flat (< 1.5x) from 200 to 10,000 files.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import frontmatter

from nova.memory.recall import MemoryHeader, bm25_select, scan_headers
from nova.memory.reviews import ReviewLedger
from nova.memory.store import Memory, MemorySource, memory_from_meta, memory_to_text

HEAD_LINES = 30
LIMIT = 200
NOW = datetime(2025, 6, 1, tzinfo=UTC)
QUERIES = [
    "how do we run database migrations",
    "commit message style and small commits",
    "which python version and linter",
    "deploy to staging with the release script",
    "flaky integration tests on CI",
]
TOPICS = [
    ("database", "PostgreSQL 16, migrations with alembic, tests start a real server"),
    ("commits", "small commits, one topic each, imperative subject lines"),
    ("python", "Python 3.11, ruff for lint, mypy strict on the core"),
    ("deploy", "staging deploys through make release, production needs approval"),
    ("ci", "CI runs .ci/run; integration tests are flaky when the port is taken"),
    ("frontend", "the web page polls /context every two seconds"),
    ("tokens", "estimates are script aware, CJK costs more per character"),
    ("cache", "prompt cache breakpoints on system, last tool, last user message"),
]
_PROSE = ("the project uses a layered design where every store keeps its own lifecycle and the agent loop "
          "compiles the model view from rules recalled memory recent history and the current request "
          "tests never reach a network and fakes live in the testing module")
WORDS = _PROSE.split(" ")


def make_corpus(root: Path, count: int, seed: int = 7) -> list[Path]:
    """`count` memories split over a home and a project directory, bodies of 2-6 KB, mtime = updated."""
    rng = random.Random(seed)
    dirs = [root / "home" / "memory", root / "project" / ".nova" / "memory"]
    for d in dirs:
        d.mkdir(parents=True, exist_ok=True)
    order = list(range(count))
    rng.shuffle(order)  # write order differs from recency order
    written: list[Memory] = []
    for i in order:
        topic, summary = TOPICS[i % len(TOPICS)]
        mtype = ("user", "feedback", "project", "reference")[i % 4]
        paragraphs = []
        while sum(len(p) for p in paragraphs) < rng.randint(2000, 6000):
            paragraphs.append(" ".join(rng.choice(WORDS) for _ in range(rng.randint(15, 40))))
        body = f"{summary}.\n\n" + "\n\n".join(paragraphs)
        updated = NOW - timedelta(minutes=count - i)
        memory = Memory(
            name=f"{topic}-{i:05d}", description=f"{topic}: {summary[:60]}", type=mtype, body=body,
            created=updated - timedelta(days=1), updated=updated,
            status="revoked" if i % 37 == 0 else "active",
            expires=NOW - timedelta(days=1) if i % 41 == 0 else None,
            source=MemorySource(session=f"s{i % 13}", messages=(f"msg_{i}",), origin="user"),
        )
        directory = dirs[0] if mtype in ("user", "feedback") else dirs[1]
        path = directory / f"{memory.name}.md"
        path.write_text(memory_to_text(memory), encoding="utf-8")
        stamp = updated.timestamp()
        os.utime(path, (stamp, stamp))
        written.append(replace(memory, path=path))
    # The user approved them all: recall trusts the review ledger, not the files' frontmatter.
    ReviewLedger.for_memory_dir(dirs[0]).record_many(written, by="user")
    return dirs


def naive_headers(dirs: Sequence[Path]) -> list[MemoryHeader]:
    """Parse every whole file, keep the 200 newest by `updated`, cut the body to what the head holds."""
    headers = []
    for directory in dirs:
        for path in sorted(directory.glob("*.md")):
            post = frontmatter.load(str(path))
            text = path.read_text(encoding="utf-8")
            head_count = text.split("\n---\n", 1)[0].count("\n") + 2  # frontmatter lines with both fences
            body_head = "".join(post.content.splitlines(keepends=True)[: max(0, HEAD_LINES - head_count)])
            memory = memory_from_meta(post.metadata, body_head, path=path)
            headers.append(MemoryHeader(memory=memory, mtime_ns=0))
    headers.sort(key=lambda h: (-h.memory.updated.timestamp(), h.path.name))
    return [h for h in headers[:LIMIT] if h.memory.recallable(NOW)]


def scan(dirs: Sequence[Path]) -> list[MemoryHeader]:
    return scan_headers(dirs, limit=LIMIT, head_lines=HEAD_LINES, now=NOW)


def picks(headers: list[MemoryHeader]) -> list[list[str]]:
    return [bm25_select(q, headers, 5) for q in QUERIES]


def timed(fn: Callable[[], list[MemoryHeader]], repeat: int) -> tuple[float, list[MemoryHeader]]:
    times: list[float] = []
    result: list[MemoryHeader] = []
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def main() -> int:
    rows = []
    results: dict[int, dict[str, float | bool]] = {}
    with tempfile.TemporaryDirectory(prefix="nova-memscan-") as tmp:
        for count in (200, 10_000):
            dirs = make_corpus(Path(tmp) / str(count), count)
            for _ in itertools.repeat(None, 2):  # warm the page cache for both readers alike
                scan(dirs)
                naive_headers(dirs)
            # Timed: the scan alone (what grows with the number of files). The selection that follows
            # is the same code on the same 200 headers for both readers, so it is run once, untimed,
            # to check that both readers lead to the same picks.
            scan_time, scan_result = timed(lambda d=dirs: scan(d), 9)
            naive_time, naive_result = timed(lambda d=dirs: naive_headers(d), 3 if count > 1000 else 9)
            scan_picks, naive_picks = picks(scan_result), picks(naive_result)
            identical = scan_picks == naive_picks and any(scan_picks)
            results[count] = {"scan": scan_time, "naive": naive_time, "identical": identical}
            rows.append((count, scan_time, naive_time, naive_time / scan_time, identical))
    print(f"{'files':>7}  {'scan (ms)':>10}  {'naive (ms)':>11}  {'speedup':>8}  identical picks")
    for count, scan_time, naive_time, speedup, identical in rows:
        print(f"{count:>7}  {scan_time * 1000:>10.1f}  {naive_time * 1000:>11.1f}  {speedup:>7.1f}x  {identical}")
    speedup_200 = float(results[200]["naive"]) / float(results[200]["scan"])
    growth = float(results[10_000]["scan"]) / float(results[200]["scan"])
    identical_all = bool(results[200]["identical"]) and bool(results[10_000]["identical"])
    print(f"targets: speedup at 200 >= 3x ({speedup_200:.1f}x), growth 200 -> 10,000 < 1.5x ({growth:.2f}x)")
    print(json.dumps({"speedup_200": round(speedup_200, 2), "growth_200_to_10000": round(growth, 3),
                      "identical": identical_all}))
    return 0 if identical_all else 1


if __name__ == "__main__":
    sys.exit(main())
