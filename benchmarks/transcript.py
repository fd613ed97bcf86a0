"""Transcript benchmark: append rate against a plain json.dumps + write loop, and resume time vs file size.

    python benchmarks/transcript.py [--records 20000] [--big-mb 1024]

Append: the same messages are written by `Transcript.append_message` and by a plain loop that does what a
careful hand-written logger would (the one serializer `to_dict`, `json.dumps`, one `os.write` per line on
an O_APPEND file), both with the same durability: fsync every `--turn` records (turn end). A second pair
of rows without fsync isolates the per-record CPU cost.

Resume: a 1 MB and a 1 GB transcript (generated in a temp dir, deleted afterwards) whose last
compact_boundary is followed by the same 200 records; resume = read the tail backwards + repair.

The last line printed is one JSON object: {"append_ratio": Nova/plain, "resume_ratio": 1GB/1MB, ...}.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from nova.messages import Message, TextPart, ToolResultPart, ToolUsePart, to_dict
from nova.model import Usage
from nova.sessions.repair import repair_history
from nova.sessions.schema import BoundaryRecord, boundary_record, encode, message_record
from nova.sessions.transcript import Transcript


def make_messages(n: int) -> list[tuple[Message, Usage | None]]:
    """A coding-agent-like mix: user turns, assistant tool calls with usage, tool results of a few KB."""
    out: list[tuple[Message, Usage | None]] = []
    for i in range(n):
        kind = i % 3
        if kind == 0:
            out.append((Message(role="user", parts=(TextPart(f"please look at module {i} " * 8),), id=f"u{i}"), None))
        elif kind == 1:
            call = ToolUsePart(id=f"c{i}", name="bash", input={"command": f"grep -rn 'def f{i}' src | head -50"})
            message = Message(role="assistant", parts=(TextPart("THOUGHT: checking the definition. " * 4), call), id=f"a{i}")
            out.append((message, Usage(4000 + i, 300, cache_read_tokens=3000)))
        else:
            body = "\n".join(f"src/mod{i}.py:{k}: def f{i}_{k}(x): return x * {k}" for k in range(60))
            out.append((Message(role="user", parts=(ToolResultPart(f"c{i - 1}", body),), id=f"r{i}"), None))
    return out


def time_nova(path: Path, messages: list[tuple[Message, Usage | None]], turn: int) -> float:
    t = Transcript(path)
    start = time.perf_counter()
    for k, (m, u) in enumerate(messages, 1):
        t.append_message(m, u)
        if turn and k % turn == 0:
            t.sync()
    t.sync()
    elapsed = time.perf_counter() - start
    t.close()
    return elapsed


def time_plain(path: Path, messages: list[tuple[Message, Usage | None]], turn: int) -> float:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    start = time.perf_counter()
    for k, (m, u) in enumerate(messages, 1):
        record = {"message": to_dict(m), "usage": u.to_dict() if u else None}
        os.write(fd, (json.dumps(record) + "\n").encode())
        if turn and k % turn == 0:
            os.fsync(fd)
    os.fsync(fd)
    elapsed = time.perf_counter() - start
    os.close(fd)
    return elapsed


def best_rate(run: Callable[[Path], float], tmp: Path, n: int, repeats: int = 3) -> float:
    times = []
    for r in range(repeats):
        path = tmp / f"append-{r}.jsonl"
        times.append(run(path))
        path.unlink()
    return n / min(times)


def build_transcript(path: Path, target_bytes: int, tail: list[tuple[Message, Usage | None]]) -> None:
    """Filler records up to ~target size, then a boundary, then the same tail for every size."""
    filler = b"".join(encode(message_record(m, u, ts=0.0)) for m, u in make_messages(30))
    tail_bytes = encode(boundary_record(BoundaryRecord(id="b-last", summary="summary " * 200, covers=("x",) * 50)))
    tail_bytes += b"".join(encode(message_record(m, u)) for m, u in tail)
    prefix = max(target_bytes - len(tail_bytes), 0)
    with path.open("wb") as f:
        written = 0
        while written + len(filler) <= prefix:
            f.write(filler)
            written += len(filler)
        f.write(tail_bytes)


def time_resume(path: Path, repeats: int = 7) -> tuple[float, int]:
    times = []
    count = 0
    for _ in range(repeats):
        start = time.perf_counter()
        messages = Transcript(path).read_tail().messages()
        repaired, _ = repair_history(messages)
        times.append(time.perf_counter() - start)
        count = len(repaired)
    return statistics.median(times), count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--turn", type=int, default=4, help="records per turn (fsync at turn end)")
    parser.add_argument("--big-mb", type=int, default=1024)
    parser.add_argument("--dir", type=Path, default=None, help="where to generate files (default: a temp dir)")
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="nova-bench-", dir=args.dir))
    free = shutil.disk_usage(tmp).free
    if free < (args.big_mb + 512) * 2**20:
        raise SystemExit(f"need {args.big_mb + 512} MB free in {tmp}, have {free // 2**20} MB")
    try:
        messages = make_messages(args.records)
        rows: list[tuple[str, str, str]] = []
        nova_sync = best_rate(lambda p: time_nova(p, messages, args.turn), tmp, args.records)
        plain_sync = best_rate(lambda p: time_plain(p, messages, args.turn), tmp, args.records)
        nova_raw = best_rate(lambda p: time_nova(p, messages, 0), tmp, args.records)
        plain_raw = best_rate(lambda p: time_plain(p, messages, 0), tmp, args.records)
        rows.append((f"append, fsync every {args.turn} (Nova)", f"{nova_sync:,.0f} rec/s", ""))
        rows.append((f"append, fsync every {args.turn} (plain)", f"{plain_sync:,.0f} rec/s", f"ratio {nova_sync / plain_sync:.2f}"))
        rows.append(("append, no fsync (Nova)", f"{nova_raw:,.0f} rec/s", ""))
        rows.append(("append, no fsync (plain)", f"{plain_raw:,.0f} rec/s", f"ratio {nova_raw / plain_raw:.2f}"))

        tail = make_messages(200)
        small, big = tmp / "small.jsonl", tmp / "big.jsonl"
        build_transcript(small, 2**20, tail)
        build_transcript(big, args.big_mb * 2**20, tail)
        t_small, n_small = time_resume(small)
        t_big, n_big = time_resume(big)
        assert n_small == n_big, (n_small, n_big)
        rows.append((f"resume {small.stat().st_size / 2**20:.1f} MB", f"{t_small * 1000:.2f} ms", f"{n_small} messages"))
        rows.append((f"resume {big.stat().st_size / 2**20:.0f} MB", f"{t_big * 1000:.2f} ms", f"ratio {t_big / t_small:.2f}"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    width = max(len(r[0]) for r in rows)
    print(f"{'measure':<{width}}  {'value':>16}  note")
    for name, value, note in rows:
        print(f"{name:<{width}}  {value:>16}  {note}")
    print(
        json.dumps(
            {
                "append_ratio": round(min(nova_sync / plain_sync, nova_raw / plain_raw), 3),
                "append_ratio_fsync": round(nova_sync / plain_sync, 3),
                "append_ratio_no_fsync": round(nova_raw / plain_raw, 3),
                "resume_ratio": round(t_big / t_small, 3),
                "resume_ms_1mb": round(t_small * 1000, 3),
                "resume_ms_1gb": round(t_big * 1000, 3),
            }
        )
    )


if __name__ == "__main__":
    main()
