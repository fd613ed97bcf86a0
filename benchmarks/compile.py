"""One turn's context compile at 100, 1,000 and 10,000 messages of history.

  nova   `ContextCompiler` kept for the session: per-message token counts and digests cached by message
         id (validated by the message itself), the stable history's segments extended as it grows.
  naive  the same view built from scratch every turn by a fresh compiler: every message re-serialized
         (the one serializer, for its digest) and re-counted, every segment rebuilt.

Both compile the same view with the same counter and a token ledger anchored on the last assistant
reply (what a live session has after its first call). The history is synthetic but shaped like the
real runs: turns of user request → bash call → 1-2 KB output → answer. Timed: the compile right after a
new turn was appended (median of 15): the view and its size, which is what a call needs; nova builds the
manifest when it is first read (`/context`), naive reads it (the baseline's own work, unchanged). Targets: nova grows < 2x from 1k to 10k messages, and is >= 10x
faster than naive at 10k. Last line: one JSON object.
Run: python benchmarks/compile.py
"""

from __future__ import annotations

import json
import statistics
import sys
import time

from nova.context.compiler import CompileInput, ContextCompiler, SourceText
from nova.messages import Message, ToolResultPart, ToolUsePart
from nova.model import ToolSpec, Usage
from nova.tokens import TokenLedger
from nova.tokens.counters import CL100K_PROFILE, HeuristicCounter

SIZES = (100, 1_000, 10_000)
REPEATS = 15
TOOLS = [ToolSpec(name, f"The {name} tool. " * 20, {"type": "object", "properties": {"path": {"type": "string"}}})
         for name in ("bash", "edit_file", "glob", "grep", "read_file", "write_file")]
HEAD = [SourceText(id="system.contract", cls="always-on", source="nova", text="You are Nova. " * 60,
                   reason="contract"),
        SourceText(id="rules:NOVA.md", cls="always-on", source="file:NOVA.md", text="Use 4 spaces. " * 40,
                   reason="rules")]
PINNED = SourceText(id="task.state", cls="pinned", source="task state", text="Goal: fix the parser\n"
                    "Constraint: never push to main", reason="pinned")
ENV = SourceText(id="environment", cls="always-on", source="env", text="[Environment]\ncwd: /repo", reason="env")


def one_turn(i: int) -> list[Message]:
    use = ToolUsePart(f"toolu_{i:06d}", "bash", {"command": f"grep -rn 'symbol_{i}' src/ | head -40"})
    output = "\n".join(f"src/module_{i % 97}/file_{j}.py:{j * 7}: def symbol_{i}_{j}(arg): return arg + {j}"
                       for j in range(12 + i % 20))
    return [Message.user(f"Step {i}: look for symbol_{i} and fix its callers.", id=f"u{i:06d}"),
            Message(role="assistant", parts=(use,), id=f"a{i:06d}"),
            Message(role="user", parts=(ToolResultPart(use.id, output + "\n[exit code: 0]"),), id=f"r{i:06d}"),
            Message.assistant(f"symbol_{i} has {12 + i % 20} callers; updated them.", id=f"d{i:06d}")]


def build_history(n: int) -> list[Message]:
    out: list[Message] = []
    i = 0
    while len(out) < n:
        out.extend(one_turn(i))
        i += 1
    return out[:n]


def inputs(history: list[Message], ledger: TokenLedger) -> CompileInput:
    return CompileInput(head=HEAD, tools=TOOLS, history=history, pinned=PINNED, observations=[ENV],
                        limit=10_000_000, ledger=ledger)


def naive(history: list[Message], counter: HeuristicCounter) -> int:
    """A compiler that remembers nothing: every message is re-serialized (for its digest) and re-counted."""
    compiled = ContextCompiler().compile(inputs(history, TokenLedger(counter)))
    return compiled.manifest.used


def measure(n: int) -> tuple[float, float]:
    counter = HeuristicCounter(CL100K_PROFILE)
    history = build_history(n)
    compiler = ContextCompiler()
    ledger = TokenLedger(counter)
    compiler.compile(inputs(history, ledger))  # the session's earlier turns
    nova_times: list[float] = []
    naive_times: list[float] = []
    for r in range(REPEATS):
        turn = one_turn(1_000_000 + r)
        history = history + turn
        ledger.record(history[-1].id, Usage(input_tokens=50_000 + r, output_tokens=20))
        started = time.perf_counter()
        compiled = compiler.compile(inputs(history, ledger))
        nova_times.append(time.perf_counter() - started)
        assert sum(s.tokens for s in compiled.manifest.segments) == compiled.manifest.used
        if r < 5 or n < 10_000:
            started = time.perf_counter()
            naive(history, counter)
            naive_times.append(time.perf_counter() - started)
    return statistics.median(nova_times), statistics.median(naive_times)


def main() -> int:
    rows = {n: measure(n) for n in SIZES}
    print(f"{'messages':>9} {'nova ms':>9} {'naive ms':>10} {'speedup':>8}")
    for n, (fast, slow) in rows.items():
        print(f"{n:>9,} {fast * 1000:>9.3f} {slow * 1000:>10.2f} {slow / fast:>7.1f}x")
    growth = rows[10_000][0] / rows[1_000][0]
    speedup = rows[10_000][1] / rows[10_000][0]
    met = growth < 2 and speedup >= 10
    print(f"targets (growth 1k→10k < 2x, >= 10x faster than naive at 10k): {'met' if met else 'MISSED'}")
    print(json.dumps({"growth_1k_to_10k": round(growth, 3), "speedup_vs_naive_10k": round(speedup, 1)}))
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
