"""Anchor benchmark: Nova compacting where the recorded agent compacted, against that agent's own summary.

For every session in the shared data (`sessions/` under $NOVA_SHARED_DATA) that holds a real compaction by
the agent that recorded it — a Claude Code `compact_boundary` with its `isCompactSummary` record — and for
any file named on the command line, the history is cut where that agent compacted, Nova is made to compact
at the same message (`nova.evaluation.anchor.at_recorded_compaction`: the import replayed under the `nova`
policy at a 200k window, one compaction forced before the final view, the extractive summarizer), and
three texts are scored on the facts of the transcript itself (`nova.evaluation.facts`, a deterministic
extractor that reads neither summary): the recorded summary, Nova's summary, and Nova's whole view
(summary, restore attachment and kept tail). Facts: user requests (every message typed before the
boundary), files written before it, the last error (command and exit code), open tasks (the agent's task
tools), decisions (its stated choices; rejected ones must be carried as rejected). "needed" are the facts
the next 30 messages after the boundary used. The Claude Code sessions that never compacted are cut at half
and three quarters of their file and scored the same way on Nova's side alone (no recorded summary to
compare; the targets on Nova's view hold for them too).

Per session and per class it prints how many facts each text kept and the tokens of each summary.
Targets, on every session: Nova's view keeps 100 % of user requests, files written and the last error,
>= 90 % of open tasks and decisions, at least as many facts as the recorded summary, and 100 % of the
needed facts; Nova's summary is no larger than the recorded one. The last line is one JSON object:
nova_view_kept_pct, nova_summary_kept_pct, recorded_summary_kept_pct, user_requests_kept_pct (Nova's
view), needed_kept_pct (Nova's view), nova_summary_tokens, recorded_summary_tokens (sums).

    python benchmarks/anchor_summary.py [FILE ...] [--verbose]
"""

from __future__ import annotations

import json
import logging
import sys
import time
from collections import Counter
from pathlib import Path

from nova.evaluation.anchor import SOURCES, AnchorComparison, at_recorded_compaction, find_recorded_compaction
from nova.evaluation.facts import FACT_KINDS, kept
from nova.testing import shared_data_dir

WINDOW = 200_000
FULL = ("user_request", "file_written", "last_error")
MOSTLY = ("open_task", "decision")
MOSTLY_PCT = 90.0
# Sessions that never compacted are cut at these shares of their lines (when they have enough of them).
CUT_AT = (0.5, 0.75)
CUT_MIN_LINES = 40


def recorded_sessions(extra: list[Path]) -> list[Path]:
    root = shared_data_dir() / "sessions"
    found = [p for p in sorted(root.rglob("*.jsonl")) if find_recorded_compaction(p) is not None]
    return found + [p for p in extra if p not in found and find_recorded_compaction(p) is not None]


def uncompacted_sessions(extra: list[Path]) -> list[tuple[Path, int]]:
    """Claude Code sessions of the shared data (and the files named) that never compacted, each with the
    lines to cut them at (half and three quarters of the file): Nova's side alone, on the same facts."""
    root = shared_data_dir() / "sessions"
    out: list[tuple[Path, int]] = []
    for path in [*sorted(root.rglob("*.jsonl")), *extra]:
        if find_recorded_compaction(path) is not None or path.name.startswith("agent-") or any(p == path for p, _ in out):
            continue
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        if len(lines) < CUT_MIN_LINES or '"sessionId"' not in lines[-1]:
            continue
        out += [(path, int(len(lines) * share)) for share in CUT_AT]
    return out


def pct(kept_n: int, total: int) -> str:
    return f"{100 * kept_n / total:5.0f}%" if total else "    -"


def misses_of(c: AnchorComparison) -> list[str]:
    name = c.recorded.path.name
    scores = c.scores()
    view = scores["nova_view"]
    out: list[str] = []
    for kind in FULL:
        s = view[kind]
        if s.total and s.kept < s.total:
            out.append(f"{name}: Nova's view keeps {s.kept} of {s.total} {kind} (target 100 %)")
    for kind in MOSTLY:
        s = view[kind]
        if s.total and (s.pct or 0.0) < MOSTLY_PCT:
            out.append(f"{name}: Nova's view keeps {s.kept} of {s.total} {kind} (target >= {MOSTLY_PCT:.0f} %)")
    if view["all"].kept < scores["recorded_summary"]["all"].kept:
        out.append(f"{name}: Nova's view keeps {view['all'].kept} facts, the recorded summary "
                   f"{scores['recorded_summary']['all'].kept}")
    needed = c.scores(c.needed())["nova_view"]["all"]
    if needed.kept < needed.total:
        out.append(f"{name}: Nova's view keeps {needed.kept} of the {needed.total} facts the next messages used")
    if c.recorded.trigger == "cut":
        return out  # no recorded summary to measure against
    if c.nova_tokens > c.recorded_tokens:
        out.append(f"{name}: Nova's summary is {c.nova_tokens:,} tokens, the recorded one {c.recorded_tokens:,}")
    return out


def main(argv: list[str]) -> int:
    logging.getLogger("nova").setLevel(logging.ERROR)
    verbose = "--verbose" in argv
    named = [Path(a) for a in argv if not a.startswith("--")]
    for path in named:
        if not path.is_file():
            print(f"{path}: no such file", file=sys.stderr)
            return 2
    files = recorded_sessions(named)
    if not files and not named:
        print(f"no session with a recorded compaction under {shared_data_dir() / 'sessions'}; set NOVA_SHARED_DATA",
              file=sys.stderr)
        return 1
    started = time.monotonic()
    runs = [at_recorded_compaction(path, window=WINDOW) for path in files]
    totals: Counter[tuple[str, str]] = Counter()
    needed_totals: Counter[tuple[str, str]] = Counter()
    misses: list[str] = []
    print(f"{len(runs)} session(s) with a compaction by the recorded agent; Nova replayed at {WINDOW:,} and made to "
          "compact at the same message (extractive summarizer)")
    header = f"    {'class':<14}{'facts':>6}{'recorded':>10}{'nova sum':>10}{'nova view':>10}{'needed':>8}{'view/needed':>13}"
    for c in runs:
        scores = c.scores()
        needed = c.needed()
        needed_scores = c.scores(needed)
        print(f"\n{c.recorded.path.relative_to(c.recorded.path.parents[2])} (boundary at line {c.recorded.boundary_line}, "
              f"{c.recorded.trigger}, {c.recorded.tokens_before:,} tokens before; {c.replayed_messages} messages "
              f"replayed; Nova's view {'starts with its summary' if c.nova_summary else 'is the history, whole'})")
        if c.note:
            print(f"    note: {c.note}")
        print(header)
        for kind in (*FACT_KINDS, "all"):
            row = {source: scores[source][kind] for source in SOURCES}
            total = row["nova_view"].total
            n_needed = needed_scores["nova_view"][kind]
            print(f"    {kind:<14}{total:>6}" + "".join(f"{pct(row[s].kept, total):>10}" for s in SOURCES)
                  + f"{n_needed.total:>8}{pct(n_needed.kept, n_needed.total):>13}")
            if kind != "all":
                for source in SOURCES:
                    totals[source, kind] += row[source].kept
                    needed_totals[source, kind] += needed_scores[source][kind].kept
                totals["total", kind] += total
                needed_totals["total", kind] += n_needed.total
        print(f"    summary tokens: recorded {c.recorded_tokens:,}, Nova {c.nova_tokens:,}")
        if verbose:
            for fact in c.recorded.facts:
                flags = "".join("K" if kept(fact, c.text_of(s)) else "-" for s in SOURCES)
                used = "used" if fact in needed else "    "
                print(f"      {flags} {used} {fact.kind:<13}{' REJECTED' if fact.rejected else ''} {fact.text[:90]!r}")
        misses += misses_of(c)
    print("\nall sessions, per class (kept by: recorded summary, Nova's summary, Nova's view)")
    print(header)
    for kind in FACT_KINDS:
        total = totals["total", kind]
        n_needed = needed_totals["total", kind]
        print(f"    {kind:<14}{total:>6}" + "".join(f"{pct(totals[s, kind], total):>10}" for s in SOURCES)
              + f"{n_needed:>8}{pct(needed_totals['nova_view', kind], n_needed):>13}")
    all_total = sum(totals["total", k] for k in FACT_KINDS)
    all_needed = sum(needed_totals["total", k] for k in FACT_KINDS)

    def share(counter: Counter[tuple[str, str]], source: str, of: int, kinds: tuple[str, ...] = FACT_KINDS) -> float:
        return round(100 * sum(counter[source, k] for k in kinds) / of, 1) if of else 100.0

    figures = {
        "nova_view_kept_pct": share(totals, "nova_view", all_total),
        "nova_summary_kept_pct": share(totals, "nova_summary", all_total),
        "recorded_summary_kept_pct": share(totals, "recorded_summary", all_total),
        "user_requests_kept_pct": share(totals, "nova_view", totals["total", "user_request"], ("user_request",)),
        "needed_kept_pct": share(needed_totals, "nova_view", all_needed),
        "nova_summary_tokens": sum(c.nova_tokens for c in runs),
        "recorded_summary_tokens": sum(c.recorded_tokens for c in runs),
    }
    print(f"    {'all':<14}{all_total:>6}{figures['recorded_summary_kept_pct']:>9.0f}%"
          f"{figures['nova_summary_kept_pct']:>9.0f}%{figures['nova_view_kept_pct']:>9.0f}%{all_needed:>8}"
          f"{figures['needed_kept_pct']:>12.0f}%")
    print(f"    summary tokens: recorded {figures['recorded_summary_tokens']:,}, Nova {figures['nova_summary_tokens']:,}")
    cuts = [at_recorded_compaction(path, window=WINDOW, cut_before=line) for path, line in uncompacted_sessions(named)]
    if cuts:
        print(f"\n{len(cuts)} cuts of Claude Code sessions that never compacted (at {', '.join(f'{x:.0%}' for x in CUT_AT)} "
              "of each file): Nova made to compact there, its view scored on the same facts (no recorded summary)")
        print(f"    {'session':<44}{'line':>6}" + "".join(f"{k:>14}" for k in FACT_KINDS) + f"{'needed':>10}")
        for c in cuts:
            view = c.scores()["nova_view"]
            needed = c.scores(c.needed())["nova_view"]["all"]
            print(f"    {c.recorded.path.name:<44}{c.recorded.boundary_line:>6}"
                  + "".join(f"{view[k].kept:>7}/{view[k].total:<6}" for k in FACT_KINDS)
                  + f"{needed.kept:>5}/{needed.total:<4}")
            misses += misses_of(c)
    print(f"\n({time.monotonic() - started:.1f}s)")
    for miss in misses:
        print(f"MISSED: {miss}")
    if not misses:
        print("all targets met on every session")
    print(json.dumps(figures))
    return 1 if misses else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
