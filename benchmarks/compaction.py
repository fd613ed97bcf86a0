"""Compaction benchmark: 20 real trajectories x windows 32k and 64k x four context policies.

For each policy it prints the total input tokens sent over all calls, the peak context, and the share
still visible in the final model view of (a) the original user messages, (b) the paths of the files the
agent modified, (c) the last failing command and its error. The last line is one JSON object keyed by
window, then policy.

Definitions (stated so the figures can be checked):
- user messages: what a person wrote in the imported session (`user_entries_in`: wherever it sits), kept
  when its text appears verbatim in the final view (a summary's verbatim user section counts).
- modified paths: the files in the run's final submission diff that the agent's own tool calls name (its
  last call included). The diff also holds files the environment changed (SWE-bench images pin versions
  in `setup.py` and `tox.ini`) and files a command made without naming them (a migration, a `.orig`):
  the model never modified those by name, and sees them, if at all, only in a listing or in the diff
  printed after its last call, so no policy can be asked to keep them. Kept when the path string is
  visible.
- last failure: the last tool call whose output reports a non-zero return code; kept when the first
  200 characters of its command and of its last error line are both visible.
Token counts use the Gemini heuristic profile (the runs are Gemini 3 Pro); Nova's layer 2 uses the
extractive summarizer (no model calls, so no summary tokens to add).

Exits 1 when a target is missed.

    python benchmarks/compaction.py [--quick]
"""

from __future__ import annotations

import json
import logging
import re
import sys
import time
from pathlib import Path
from typing import Any

from nova.context.summarize import error_lines, failure_code, user_entries_in
from nova.evaluation.replay import POLICIES, replay_messages, view_text
from nova.messages import Message, ToolUsePart
from nova.sessions.importers import read_session_file
from nova.testing import mini_swe_trajectories, shared_data_dir
from nova.tokens import counter_for_model

WINDOWS = (32000, 64000)


def ground_truth(path: Path, messages: list[Message]) -> dict[str, Any]:
    named = " ".join(str(value) for m in messages for call in m.tool_uses() for value in call.input.values())
    doc = json.loads(path.read_text(encoding="utf-8"))
    submission = (doc.get("info") or {}).get("submission") or ""
    paths = [p for p in dict.fromkeys(re.findall(r"^diff --git a/(\S+)", submission, re.M)) if p in named]
    calls = {u.id: u for m in messages for u in m.tool_uses()}
    last: tuple[str, str] | None = None
    for m in messages:
        for r in m.tool_results():
            if failure_code(r) is not None and r.tool_use_id in calls:
                use: ToolUsePart = calls[r.tool_use_id]
                lines = error_lines(r.content, 1)
                last = (str(use.input.get("command", ""))[:200], lines[0][:200] if lines else "")
    users = [text for m in messages for _, text in user_entries_in(m)]
    return {"users": users, "paths": paths, "failure": last}


def score(view: list[Message], truth: dict[str, Any]) -> tuple[int, int, int, int, int, int]:
    text = view_text(view)
    users = sum(1 for u in truth["users"] if u in text)
    paths = sum(1 for p in truth["paths"] if p in text)
    failure = truth["failure"]
    err_total = 1 if failure else 0
    err = 1 if failure and failure[0] in text and failure[1] in text else 0
    return users, len(truth["users"]), paths, len(truth["paths"]), err, err_total


def main(argv: list[str]) -> int:
    logging.getLogger("nova.agent").setLevel(logging.ERROR)
    files = mini_swe_trajectories()
    if not files:
        print(f"no trajectories under {shared_data_dir()}; set NOVA_SHARED_DATA", file=sys.stderr)
        return 1
    if "--quick" in argv:
        files = files[:4]
    counter = counter_for_model("gemini-3-pro")
    sessions = [(f, read_session_file(f)) for f in files]
    truths = [ground_truth(f, s.messages) for f, s in sessions]
    results: dict[str, dict[str, dict[str, float | int]]] = {}
    started = time.monotonic()
    missed: list[str] = []
    for window in WINDOWS:
        results[str(window)] = {}
        print(f"\nwindow {window:,} ({len(files)} trajectories)")
        print(f"  {'policy':<17}{'input tokens':>14}{'vs truncate':>12}{'peak':>8}{'user':>7}{'paths':>7}"
              f"{'error':>7}{'compact':>8}{'viol':>6}")
        rows = {}
        for policy in POLICIES:
            tot = dict(input=0, peak=0, u=0, ut=0, p=0, pt=0, e=0, et=0, comp=0, viol=0, trips=0)
            for (_, session), truth in zip(sessions, truths, strict=True):
                report = replay_messages(session.messages, system=session.system, window=window,
                                         policy=policy, counter=counter)
                u, ut, p, pt, e, et = score(report.final_view, truth)
                tot["input"] += report.input_tokens
                tot["peak"] = max(tot["peak"], report.peak_context_tokens)
                tot["comp"] += report.compactions
                tot["viol"] += report.invariant_violations
                tot["trips"] += report.breaker_trips
                for key, value in zip(("u", "ut", "p", "pt", "e", "et"), (u, ut, p, pt, e, et), strict=True):
                    tot[key] += value
            rows[policy] = tot
        base = rows["truncate"]["input"] or 1
        for policy, tot in rows.items():
            entry = {
                "input_tokens": tot["input"],
                "peak_context_tokens": tot["peak"],
                "user_kept": round(tot["u"] / max(tot["ut"], 1), 4),
                "paths_kept": round(tot["p"] / max(tot["pt"], 1), 4),
                "error_kept": round(tot["e"] / max(tot["et"], 1), 4),
            }
            results[str(window)][policy] = entry
            print(f"  {policy:<17}{tot['input']:>14,}{tot['input'] / base:>11.2f}x{tot['peak']:>8,}"
                  f"{entry['user_kept']:>7.0%}{entry['paths_kept']:>7.0%}{entry['error_kept']:>7.0%}"
                  f"{tot['comp']:>8}{tot['viol']:>6}")
        nova = results[str(window)]["nova"]
        ratio = rows["nova"]["input"] / base
        verdict = all(nova[k] == 1.0 for k in ("user_kept", "paths_kept", "error_kept")) and ratio <= 1.1
        print(f"  target (nova keeps 100% of a, b, c at <= 1.1x truncate's input): {'met' if verdict else 'MISSED'}"
              f" (ratio {ratio:.2f}, breaker trips {rows['nova']['trips']})")
        if not verdict:
            missed.append(f"window {window:,}: user {nova['user_kept']:.0%}, paths {nova['paths_kept']:.0%}, "
                          f"error {nova['error_kept']:.0%}, input {ratio:.2f}x truncate")
    print(f"\n({time.monotonic() - started:.1f}s)")
    for miss in missed:
        print(f"MISSED: {miss}")
    print(json.dumps(results, sort_keys=True))
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
