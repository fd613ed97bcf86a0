"""Needle survival: facts planted in the 20 shared mini-swe-agent runs, through N forced compactions.

At 10 depths of each run (the middle of each tenth) one episode is planted between two exchanges: the
user answers the agent's question with a constraint, the agent states a decision with its reason, writes
a file (a path) and reads a number back from the tool, then runs a check that fails with a distinctive
error (`nova.evaluation.needles`). Each planted run is replayed at a 32k window under the `nova` policy
(the controller and extractive summarizer `nova replay` uses) with N = 1, 3, 5, 10 compactions forced at
even steps from the first planted episode to the end, the last right before the final view; the
controller's own compactions at its threshold come on top (the table shows the mean made). A fact
survives when its exact text is readable in the final view: in a kept message or in the summary.

Baseline, same process: `truncate` (the system prompt and task statement kept, the oldest messages after
them dropped) over the same planted runs; it never compacts, so it has one figure per class.

Targets, at every N (1, 3, 5, 10): user constraints, decisions and paths 100 % in the view; errors >= 90 %;
numbers >= 60 % in the view and 100 % reachable (the view names the message that holds them: a summary's
`(msg ID)` pointer, or the file a cut saved the full text to). The last line: {"constraint_survival":
{"1", "3", "5", "10"}, "decision_survival": {...}, "path_survival": {...}, "error_survival": {...},
"number_survival": {...}, "number_reachable": {...}}, fractions 0..1.

    python benchmarks/needles.py [--quick]      # --quick: 4 of the 20 runs
"""

from __future__ import annotations

import json
import logging
import sys
import time
from collections import Counter

from nova.evaluation.needles import DEPTHS, FACT_CLASSES, plant, survive
from nova.evaluation.replay import replay_messages, view_text
from nova.sessions.importers import read_session_file
from nova.testing import mini_swe_trajectories, shared_data_dir
from nova.tokens import counter_for_model

WINDOW = 32_000
COMPACTIONS = (1, 3, 5, 10)
# The share of each class the view must keep, at every N; numbers must also be reachable, every one.
TARGETS = {"constraint": 1.0, "decision": 1.0, "path": 1.0, "error": 0.9, "number": 0.6}
REACHABLE = {"number": 1.0}


def main(argv: list[str]) -> int:
    logging.getLogger("nova").setLevel(logging.ERROR)
    files = mini_swe_trajectories()
    if not files:
        print(f"no trajectories under {shared_data_dir()}; set NOVA_SHARED_DATA", file=sys.stderr)
        return 1
    quick = "--quick" in argv
    if quick:
        files = files[:4]
    counter = counter_for_model("gemini-3-pro")  # the runs are Gemini's
    started = time.monotonic()
    held: Counter[tuple[int, str]] = Counter()
    reached: Counter[tuple[int, str]] = Counter()
    total: Counter[tuple[int, str]] = Counter()
    made: Counter[int] = Counter()
    base_held: Counter[str] = Counter()
    base_total: Counter[str] = Counter()
    for seed, path in enumerate(files):
        session = read_session_file(path)
        planted = plant(session.messages, seed=seed)
        for n in COMPACTIONS:
            run = survive(planted, system=session.system, compactions=n, window=WINDOW, counter=counter)
            made[n] += run.compactions
            for (needle, ok), (_, readable) in zip(run.survived, run.reachable, strict=True):
                total[n, needle.kind] += 1
                held[n, needle.kind] += ok
                reached[n, needle.kind] += readable
        baseline = view_text(replay_messages(planted.messages, system=session.system, window=WINDOW,
                                             policy="truncate", counter=counter).final_view)
        for needle in planted.needles:
            base_total[needle.kind] += 1
            base_held[needle.kind] += needle.text in baseline
    print(f"{len(files)} mini-swe-agent runs{' (--quick: a sample)' if quick else ''}, {len(DEPTHS)} depths each, "
          f"{len(FACT_CLASSES)} facts per depth; window {WINDOW:,}; every depth and run, no sampling")
    print(f"  {'policy':<10}{'N':>4}{'made':>7}" + "".join(f"{k:>12}" for k in FACT_CLASSES) + f"{'reachable':>12}")
    survival: dict[str, dict[str, float]] = {f"{k}_survival": {} for k in FACT_CLASSES}
    survival["number_reachable"] = {}
    for n in COMPACTIONS:
        row = ""
        for kind in FACT_CLASSES:
            share = held[n, kind] / total[n, kind] if total[n, kind] else 0.0
            survival[f"{kind}_survival"][str(n)] = round(share, 4)
            row += f"{100 * share:>11.1f}%"
        reach = reached[n, "number"] / total[n, "number"] if total[n, "number"] else 0.0
        survival["number_reachable"][str(n)] = round(reach, 4)
        print(f"  {'nova':<10}{n:>4}{made[n] / len(files):>7.1f}{row}{100 * reach:>11.1f}%")
    row = "".join(f"{100 * base_held[k] / max(base_total[k], 1):>11.1f}%" for k in FACT_CLASSES)
    print(f"  {'truncate':<10}{'-':>4}{0:>7}{row}")
    print("  (made: mean compactions per run, the forced ones that had something to fold plus the controller's own;"
          " reachable: numbers in the view or in a message it names)")
    print(f"\n({time.monotonic() - started:.1f}s)")
    misses = [f"{kind} survival {100 * survival[f'{kind}_survival'][str(n)]:.1f} % at N = {n} < {100 * target:.0f} %"
              for kind, target in TARGETS.items() for n in COMPACTIONS if survival[f"{kind}_survival"][str(n)] < target]
    misses += [f"{kind} reachable {100 * survival[f'{kind}_reachable'][str(n)]:.1f} % at N = {n} < {100 * target:.0f} %"
               for kind, target in REACHABLE.items() for n in COMPACTIONS
               if survival[f"{kind}_reachable"][str(n)] < target]
    for miss in misses:
        print(f"MISSED: {miss}")
    if not misses:
        print("all targets met: constraints, decisions, paths 100 %, errors >= 90 %, numbers >= 60 % in view and "
              "100 % reachable, at N = 1, 3, 5, 10")
    print(json.dumps(survival))
    return 1 if misses else 0

if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
