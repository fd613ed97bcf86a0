"""Resume benchmark: reopening a session for its next call, against the size of the session.

    python benchmarks/resume.py [--repeats 5]

Measured: `nova.sessions.export.resume`, the path the CLI (`--resume`) and the server take: `Session.open`
(meta, store, torn-tail check, the tail read once) plus the working history the next model call needs
(the records after the last compact_boundary, snips from the store, repair). Sessions of 1,000, 10,000
and 100,000 records with no compaction, and one of 100,000 records whose single compaction sits 200
records from the end.

The sessions are written through the real `Session` API, the way the agent loop and the compaction
controller write them: `record_message` per record (turns of user request, assistant tool call with
usage, tool result of ~1.5 KB, assistant answer; every record the same size in every session, so 10x
the records is 10x the bytes), one `flush` at the end instead of one per turn (fsync changes nothing
that is read back), and `record_compact_boundary` with the `BoundaryRecord` the controller builds (a
summary message covering every folded id, then the kept verbatim tail). The two 100,000-record
sessions share their first 99,800 records: that home is built once and copied.

Each resume runs in a fresh interpreter, as `nova --resume` does, after resuming a tiny session there
(one-time costs of a process, such as the message validator built on first use, are not a cost of a
long session), so no case runs on memory another case warmed. Times are CPU time of that process
(user + system; the other work on a shared machine does not count), the best of `--repeats` runs,
interleaved; wall time is printed beside them. Targets: the compacted 100,000-record session within
2x of the 1,000-record one; 10,000 -> 100,000 uncompacted growth < 10x.
The last line is one JSON object: {"ms_10k", "ms_100k", "ms_100k_compacted", "ms_1k"} (CPU ms).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from nova.messages import Message, SummaryPart, TextPart, ToolResultPart, ToolUsePart
from nova.model import Usage
from nova.sessions.export import resume
from nova.sessions.schema import BoundaryRecord
from nova.sessions.session import Session

TAIL_AFTER_BOUNDARY = 200
T0 = 1_750_000_000.0  # message timestamps: same width for every record
# The compaction keeps the last turn's tool loop word for word (call, result, answer): a kept tail
# starts on an assistant message, as `find_split_point` places it.
KEPT_VERBATIM = 3


def records(start: int, stop: int) -> Iterator[tuple[Message, Usage | None]]:
    """Record i of a session, in turns of four: user request, assistant tool call (with usage), tool
    result of ~1.5 KB, assistant answer (with usage). Numbers are zero-padded so every record has the
    same size in every session: 10x the records is 10x the bytes."""
    for i in range(start, stop):
        n = f"{i:06d}"
        kind = i % 4
        if kind == 0:
            yield Message(role="user", parts=(TextPart(f"now look at module {n} and fix what fails " * 3),),
                          id=f"u{n}", created_at=T0 + i), None
        elif kind == 1:
            call = ToolUsePart(id=f"c{n}", name="bash", input={"command": f"grep -rn 'def f{n}' src | head -30"})
            yield (Message(role="assistant", parts=(TextPart("Checking where it is defined."), call), id=f"a{n}",
                           created_at=T0 + i), Usage(4000, 120, cache_read_tokens=3800))
        elif kind == 2:
            body = "\n".join(f"src/mod{n}.py:{k:02d}: def f{n}_{k:02d}(x): return x * {k:02d}" for k in range(30))
            yield Message(role="user", parts=(ToolResultPart(f"c{i - 1:06d}", body),), id=f"r{n}",
                          created_at=T0 + i), None
        else:
            yield (Message(role="assistant", parts=(TextPart(f"Fixed f{i - 3:06d}: the guard was inverted."),),
                           id=f"d{n}", created_at=T0 + i), Usage(4200, 40, cache_read_tokens=4000))


def append(session: Session, start: int, stop: int) -> None:
    for message, usage in records(start, stop):
        session.record_message(message, usage)


def compact(session: Session, upto: int) -> None:
    """One compaction over records [0, upto), recorded as the controller records it
    (`ContextController._record_compaction`): a summary message covering every folded id, then the
    kept verbatim tail, in a `BoundaryRecord`."""
    kept = [m for m, _ in records(upto - KEPT_VERBATIM, upto)]
    covers = tuple(m.id for m, _ in records(0, upto - KEPT_VERBATIM))
    text = "[Previous conversation summary]\n" + "The user asked for fixes across many modules. " * 40
    summary = Message(role="user", parts=(SummaryPart(text, covers=covers),), id="summary-1", created_at=T0 + upto,
                      origin="summary")
    session.record_compact_boundary(BoundaryRecord(
        id="", summary=text, trigger="threshold", tokens_before=900_000, tokens_after=9_000, duration_ms=1500.0,
        covers=covers, messages=(summary, *kept),
    ))


def build(home: Path, total: int, *, boundary_at: int | None = None, base: Path | None = None) -> str:
    """A session of `total` records in `home`. With `base`, start from a copy of that home (its one
    session holding the first records) instead of writing them again."""
    if base is not None:
        shutil.copytree(base, home)
        (sid,) = [p.name for p in (home / "sessions").iterdir()]
        session = Session.open(home, sid)
        done = session.meta.message_count
    else:
        session = Session.create(home, title=f"{total} records", cwd=str(home), provider="anthropic", model="bench")
        done = 0
    with session:
        if boundary_at is not None:
            append(session, done, boundary_at)
            compact(session, boundary_at)
            done = boundary_at
        append(session, done, total)
    return session.id


def measure_one(home: Path, sid: str, warm: tuple[Path, str]) -> dict[str, float]:
    """One resume in this (fresh) interpreter: CPU and wall ms, and the size of the working history.
    A tiny session is resumed first, so one-time costs of the process (imports, the message validator
    built on first use) are not counted as the cost of a long session."""
    resume(warm[1], home=warm[0]).session.close()
    cpu, wall = time.process_time(), time.perf_counter()
    resumed = resume(sid, home=home)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    assert not resumed.notices, resumed.notices  # a clean session: nothing to repair or quarantine
    count = len(resumed.history)
    resumed.session.close()
    return {"cpu_ms": cpu * 1000, "wall_ms": wall * 1000, "history": count}


def time_resume(home: Path, sid: str, warm: tuple[Path, str]) -> dict[str, float]:
    """Resume in a fresh interpreter, as `nova --resume` does: no case runs on a heap another case
    warmed (a small session resumed after a big one would reuse its freed memory for nothing)."""
    command = [sys.executable, __file__, "--measure-one", str(home), sid, str(warm[0]), warm[1]]
    done = subprocess.run(command, check=True, capture_output=True, text=True)
    result: dict[str, float] = json.loads(done.stdout.splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--dir", type=Path, default=None, help="where to build the sessions (default: a temp dir)")
    parser.add_argument("--measure-one", nargs=4, metavar=("HOME", "SESSION", "WARM_HOME", "WARM_SESSION"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure_one:
        home, sid, warm_home, warm_sid = args.measure_one
        print(json.dumps(measure_one(Path(home), sid, (Path(warm_home), warm_sid))))
        return

    tmp = Path(tempfile.mkdtemp(prefix="nova-bench-resume-", dir=args.dir))
    os.environ["NOVA_HOME"] = str(tmp / "unused-home")  # nothing may touch the user's ~/.nova
    try:
        started = time.perf_counter()
        warm = (tmp / "warm-up", build(tmp / "warm-up", 8))
        cases: dict[str, tuple[Path, str]] = {}
        for name, total in (("1k", 1_000), ("10k", 10_000)):
            cases[name] = (tmp / name, build(tmp / name, total))
        shared = tmp / "shared-prefix"
        build(shared, 100_000 - TAIL_AFTER_BOUNDARY)
        cases["100k"] = (tmp / "100k", build(tmp / "100k", 100_000, base=shared))
        cases["100k_compacted"] = (
            tmp / "100k-compacted",
            build(tmp / "100k-compacted", 100_000, boundary_at=100_000 - TAIL_AFTER_BOUNDARY, base=shared),
        )
        shutil.rmtree(shared)
        build_s = time.perf_counter() - started

        best: dict[str, dict[str, float]] = {}
        for _ in range(args.repeats):  # interleaved, so a busy moment does not land on one case only
            for name, (home, sid) in cases.items():
                got = time_resume(home, sid, warm)
                if name not in best or got["cpu_ms"] < best[name]["cpu_ms"]:
                    best[name] = got
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    ms = {name: got["cpu_ms"] for name, got in best.items()}
    growth = ms["100k"] / ms["10k"]
    compacted_vs_1k = ms["100k_compacted"] / ms["1k"]
    rows = [
        ("1,000 records", "1k", 1_000, ""),
        ("10,000 records", "10k", 10_000, f"x{ms['10k'] / ms['1k']:.2f} of 1,000"),
        ("100,000 records", "100k", 100_000, f"x{growth:.2f} of 10,000 (target < 10)"),
        ("100,000 records, compacted 200 from the end", "100k_compacted", 100_000,
         f"x{compacted_vs_1k:.2f} of 1,000 (target <= 2)"),
    ]
    width = max(len(r[0]) for r in rows)
    print(f"sessions built in {build_s:.1f} s; best of {args.repeats} resumes each, each in a fresh interpreter")
    print(f"{'session':<{width}}  {'CPU ms':>9}  {'wall ms':>9}  {'us/record':>9}  {'history':>8}  ratio")
    for label, key, size, note in rows:
        got = best[key]
        per_record = ms[key] * 1000 / size
        print(f"{label:<{width}}  {ms[key]:>9.1f}  {got['wall_ms']:>9.1f}  {per_record:>9.2f}  {got['history']:>8.0f}  {note}")
    missed = []
    if growth >= 10:
        missed.append(f"uncompacted growth 10k -> 100k is x{growth:.2f}, target < 10")
    if compacted_vs_1k > 2:
        missed.append(f"compacted 100k is x{compacted_vs_1k:.2f} of the 1k session, target <= 2")
    for line in missed:
        print(f"MISSED: {line}")
    print(json.dumps({f"ms_{key}": round(ms[key], 3) for key in ("10k", "100k", "100k_compacted", "1k")}))
    sys.exit(1 if missed else 0)


if __name__ == "__main__":
    main()
