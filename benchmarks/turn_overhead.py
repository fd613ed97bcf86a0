"""One turn's own cost with 1,000, 10,000 and 100,000 messages of history already in the agent.

    python benchmarks/turn_overhead.py [--sizes 1000,10000,100000]

What is measured: one user turn through the production `nova.agent.builder.build_agent` with a real
`nova.sessions.Session` in a temporary NOVA home (SQLite record, transcript with its fsync at the turn's
end, context controller, context compiler, prompt cache, memory recall), the model played by a
`FunctionProvider`. The turn is the common shape: the model calls `read_file` on a small file, the tool
runs, the model answers, so two model calls, each with its pairing check, cache plan, cache-break
diagnosis, compile and context figure. The time spent inside the provider function is measured and
subtracted: what is left is Nova's overhead for the turn. Times are the CPU time of the thread that runs
the turn (`time.thread_time`): on a shared machine the wall time also counts waiting for a core, which
drowns the figure in noise; the wall-clock median is printed beside it for reference (it adds the
transcript's fsync and the memory-recall thread, neither of which depends on history length).

The history is a synthetic coding session (seeded): user requests, assistant steps with text and a
tool call (bash, read_file, grep, edit_file), tool results from a few dozen bytes to several KB, final
answers. It is put in the agent as a resumed session's would be (`agent.history`); the transcript is
not written for it. Steady state, not compaction: the window is set far above the history's size, so no
turn compacts (a compaction is a different, rarer path with its own benchmark), and the provider reports
cache reads that grow with the prefix, so no call is diagnosed as a cache break. Each agent first runs
two turns unmeasured (the first measures the whole loaded history once, as the first turn after a resume
does); then the agents take turns round by round, one turn each per round, and each size reports the
median of its turns (interleaving spreads whatever else the machine is doing over all sizes alike).

Baseline (same run, same history): what a naive implementation does per turn: every message
serialized with the one serializer, hashed (sha256) and counted with the same counter, no memo.

Targets: the turn at 100,000 messages costs < 2x the turn at 10,000, and >= 10x less than the naive
per-turn work at 100,000. Exits 1 when one is missed. The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from nova.agent.builder import AgentOptions, build_agent
from nova.agent.loop import Agent
from nova.messages import Message, TextPart, ToolResultPart, ToolUsePart, to_dict
from nova.model import ModelRequest, Usage
from nova.sessions.session import Session
from nova.settings import Settings, load_settings
from nova.testing import FunctionProvider, last_message, reply
from nova.tokens import count_message, counter_for_model

SIZES = (1_000, 10_000, 100_000)
WINDOW = 100_000_000  # the largest window the settings accept, far above any history here: the turn never compacts

_PROSE = ("the parser fails when a token spans two lines so the lexer must keep its state between calls "
          "check callers update tests config module import function value error return list dict path")
_WORDS = _PROSE.split(" ")
_CODE = [f"    {name} = {fn}({arg}, {n})  # {comment}" for n, (name, fn, arg, comment) in enumerate(
    (a, b, c, d) for a in ("result", "tokens", "state", "node") for b in ("parse", "lex", "emit", "walk")
    for c in ("source", "buffer", "tree") for d in ("keep state", "see issue", "fast path"))]


def _prose(rng: random.Random, words: int) -> str:
    return " ".join(rng.choices(_WORDS, k=words)).capitalize() + "."


def _output(rng: random.Random, index: int) -> str:
    """A tool output from a few dozen bytes to several KB (most are small, a few are long)."""
    lines = min(int(rng.lognormvariate(2.3, 1.1)) + 1, 160)
    body = [f"src/pkg/module_{index % 211}.py:{rng.randint(1, 900)}:{rng.choice(_CODE)}" for _ in range(lines)]
    return "\n".join(body) + f"\n[exit code: {0 if rng.random() < 0.9 else 1}]"


def _call(rng: random.Random, call_id: str, step: int) -> ToolUsePart:
    kind = rng.choice(("bash", "read_file", "grep", "edit_file"))
    if kind == "bash":
        return ToolUsePart(call_id, kind, {"command": f"pytest -x tests/test_module_{step % 97}.py -k case_{step}"})
    if kind == "read_file":
        return ToolUsePart(call_id, kind, {"path": f"src/pkg/module_{step % 211}.py"})
    if kind == "grep":
        return ToolUsePart(call_id, kind, {"pattern": f"def handler_{step % 50}", "path": "src"})
    return ToolUsePart(call_id, kind, {"path": f"src/pkg/module_{step % 211}.py", "old_string": rng.choice(_CODE),
                                       "new_string": rng.choice(_CODE)})


def build_history(n: int, seed: int = 11) -> list[Message]:
    """`n` (even) messages of a coding session: request, 1-4 tool steps, answer; the last one an answer."""
    rng = random.Random(seed)
    out: list[Message] = []
    turn = step = 0
    while len(out) < n - 10:  # a turn has at most 10 messages, and always an even number
        turn += 1
        out.append(Message(role="user", parts=(TextPart(f"Request {turn}: " + _prose(rng, rng.randint(8, 40))),),
                           id=f"u{turn:07d}", created_at=1.0))
        for _ in range(rng.randint(1, 4)):
            step += 1
            call = _call(rng, f"toolu_{step:07d}", step)
            parts = (TextPart(_prose(rng, rng.randint(3, 30))), call)
            out.append(Message(role="assistant", parts=parts, id=f"a{step:07d}", created_at=1.0))
            out.append(Message(role="user", parts=(ToolResultPart(call.id, _output(rng, step)),), id=f"r{step:07d}",
                               created_at=1.0))
        out.append(Message(role="assistant", parts=(TextPart(_prose(rng, rng.randint(10, 90))),), id=f"d{turn:07d}",
                           created_at=1.0))
    while len(out) < n:  # short exchanges to reach exactly n (n even)
        turn += 1
        out.append(Message.user(f"Request {turn}: " + _prose(rng, 6), id=f"u{turn:07d}", created_at=1.0))
        out.append(Message.assistant(_prose(rng, 12), id=f"d{turn:07d}", created_at=1.0))
    return out


class Model:
    """Calls read_file once per turn, then answers; keeps the time spent in here (CPU and wall)."""

    def __init__(self) -> None:
        self.spent_cpu = self.spent_wall = 0.0
        self.calls = 0

    def __call__(self, request: ModelRequest) -> reply:
        cpu, wall = time.thread_time(), time.perf_counter()
        self.calls += 1
        # Cache reads that grow with the prefix: each call reads all the previous one cached (no break).
        usage = Usage(input_tokens=300, output_tokens=40, cache_read_tokens=40_000 + 1_000 * self.calls,
                      cache_write_tokens=1_000)
        last = last_message(request)  # the observations block (environment, task state) comes after it
        if last.tool_results():
            answer = reply("The notes say the parser keeps its state between calls; nothing to change.", usage=usage)
        else:
            answer = reply("Reading the notes first.", [ToolUsePart(f"call_{self.calls}", "read_file",
                                                                     {"path": "notes.txt"})], usage=usage)
        self.spent_cpu += time.thread_time() - cpu
        self.spent_wall += time.perf_counter() - wall
        return answer


@dataclass
class Subject:
    """One agent with `n` messages of history loaded, and the overheads of its measured turns."""

    n: int
    agent: Agent
    provider: FunctionProvider
    model: Model
    history_length: int
    cpu: list[float] = field(default_factory=list)
    wall: list[float] = field(default_factory=list)
    turns: int = 0

    def turn(self, *, measured: bool) -> None:
        spent_cpu, spent_wall = self.model.spent_cpu, self.model.spent_wall
        started_cpu, started_wall = time.thread_time(), time.perf_counter()
        # A real provider keeps no request: freeing the previous ones is part of a turn's cost.
        self.provider.requests.clear()
        result = self.agent.run_turn(f"Question {self.turns}: what do the notes say about the parser state?")
        elapsed_cpu = time.thread_time() - started_cpu - (self.model.spent_cpu - spent_cpu)
        elapsed_wall = time.perf_counter() - started_wall - (self.model.spent_wall - spent_wall)
        self.turns += 1
        if result.steps != 2 or result.stop_reason != "end_turn":
            raise SystemExit(f"unexpected turn: {result.steps} steps, {result.stop_reason}")
        if len(self.agent.history) != self.history_length + 4 * self.turns:
            raise SystemExit("the history was compacted or rewritten: not the steady-state path")
        if measured:
            self.cpu.append(elapsed_cpu)
            self.wall.append(elapsed_wall)


def subject(n: int, history: list[Message], home: Path, session: Session, settings: Settings) -> Subject:
    work = home / f"work-{n}"
    work.mkdir()
    (work / "notes.txt").write_text("The parser keeps its state between calls.\n" * 20, encoding="utf-8")
    model = Model()
    provider = FunctionProvider(model)
    agent = build_agent(settings, provider, AgentOptions(cwd=work, yes=True), session=session,
                        session_id=session.id, session_dir=session.dir)
    agent.history = list(history)
    return Subject(n=n, agent=agent, provider=provider, model=model, history_length=len(history))


def naive_turn(history: list[Message], model: str) -> float:
    """What a turn costs when every message is serialized, hashed and counted again (CPU seconds)."""
    counter = counter_for_model(model)
    started = time.thread_time()
    total = 0
    for message in history:
        hashlib.sha256(json.dumps(to_dict(message), sort_keys=True, ensure_ascii=False).encode()).hexdigest()
        total += count_message(message, counter)
    assert total > 0
    return time.thread_time() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=",".join(str(s) for s in SIZES))
    parser.add_argument("--turns", type=int, default=15, help="measured turns per size (median)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    home = Path(tempfile.mkdtemp(prefix="nova-turn-"))
    model = load_settings(home=home / "nova", overrides={"provider": "demo"}).model
    rows: dict[int, tuple[float, float, float]] = {}
    # The steady-state turn: compaction timed by cost would fold a long history even far below the window
    # (it pays), so the threshold schedule keeps this on the path measured; compaction has its own benchmark.
    (home / "nova").mkdir(exist_ok=True)
    (home / "nova" / "config.json").write_text(json.dumps({"compaction": {"schedule": "threshold"}}))
    settings = load_settings(home=home / "nova", overrides={"provider": "demo", "context_window": WINDOW})
    subjects: list[Subject] = []
    sessions: list[Session] = []
    baseline: dict[int, float] = {}
    try:
        for n in sizes:
            history = build_history(n)
            baseline[n] = statistics.median(naive_turn(history, model) for _ in range(3 if n < 100_000 else 2))
            sessions.append(Session.create(home / "nova", cwd=home, provider="demo", model=settings.model))
            subjects.append(subject(n, history, home, sessions[-1], settings))
            for _ in range(2):  # the first turns measure the loaded history once
                subjects[-1].turn(measured=False)
        # Round by round, one turn of each: whatever else the machine does weighs on every size alike.
        for _ in range(args.turns):
            for each in subjects:
                each.turn(measured=True)
        rows = {s.n: (statistics.median(s.cpu), statistics.median(s.wall), baseline[s.n]) for s in subjects}
    finally:
        for each in subjects:
            each.agent.close()
        for session in sessions:
            session.close()
        shutil.rmtree(home, ignore_errors=True)

    print(f"{'messages':>9} {'turn ms':>9} {'(wall ms)':>10} {'naive ms':>10} {'naive/turn':>11}")
    for n, (cpu, wall, naive) in rows.items():
        print(f"{n:>9,} {cpu * 1000:>9.2f} {wall * 1000:>10.2f} {naive * 1000:>10.1f} {naive / cpu:>10.1f}x")
    ms = {n: cpu * 1000 for n, (cpu, _, _) in rows.items()}
    growth = ms[100_000] / ms[10_000] if {10_000, 100_000} <= ms.keys() else float("nan")
    speedup = rows[100_000][2] / rows[100_000][0] if 100_000 in rows else float("nan")
    met = growth < 2 and speedup >= 10
    print("turn ms and naive ms: CPU time of the thread running the turn (the machine may be shared); "
          "wall time for reference")
    print(f"targets (growth 10k→100k < 2x, >= 10x faster than naive at 100k): {'met' if met else 'MISSED'}")
    print(json.dumps({"ms_1k": round(ms.get(1_000, float("nan")), 3), "ms_10k": round(ms.get(10_000, float("nan")), 3),
                      "ms_100k": round(ms.get(100_000, float("nan")), 3), "growth_10k_100k": round(growth, 3),
                      "speedup_vs_naive_100k": round(speedup, 1)}))
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
