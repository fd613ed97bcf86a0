"""Replay fidelity: does the replay lab reproduce what a recording really did, and do the baselines fit?

Every shared session file (Claude Code, Codex, Cline, OpenCode, pi, Gemini CLI under sessions/;
mini-swe-agent and SWE-agent under trajectories/) is imported; every run with recorded usage is
replayed under `recorded` (what the recording sent: its own compactions, its usage, its models) and
compared with the recording itself, the baseline measured in the same run:

- `cost_ratio`: the simulated cost of `recorded` (input side plus the agent's output) ÷ the billed cost
  (each call's recorded usage at its model's list price). Target 0.95-1.05 on each session with a known
  price. The simulated cache is calibrated on the recorded calls (`nova.evaluation.replay._Calibration`),
  so this checks the calibration and the per-call pricing.
- `peak_ratio`: the peak of `recorded` ÷ the largest real input. Target 0.98-1.02.
- `baseline_calls_over_window`: requests over the window of `truncate`, `observation-mask` and `nova`
  at 16k/32k/64k/200k (`naive` and `recorded` are what they are). Target 0.
- `formats_imported_pct`: files imported ÷ files found. Target 100.

A recording whose usage does not count its requests (set aside on reading it:
`nova.sessions.readers.usage_check`) has no real figures to compare with, nor to measure a baseline's
requests against the window by: it is listed apart, outside every figure.

    NOVA_SHARED_DATA=/work/shared/data python benchmarks/replay_fidelity.py [--quick]
"""

from __future__ import annotations

import json
import logging
import sys
from dataclasses import dataclass
from pathlib import Path

from nova.errors import PromptTooLarge
from nova.evaluation.replay import replay_session
from nova.model import usage_of
from nova.sessions.importers import read_session_file
from nova.sessions.readers.base import ImportedSession
from nova.testing import shared_data_dir, shared_recordings
from nova.tokens import counter_for_model

WINDOWS = (16_000, 32_000, 64_000, 200_000)
BASELINES = ("truncate", "observation-mask", "nova")
COST_BAND = (0.95, 1.05)
PEAK_BAND = (0.98, 1.02)


def session_files(root: Path) -> list[Path]:
    """The recordings under `root` as `nova sessions import FOLDER` finds them, and the trajectories."""
    return shared_recordings(root)


@dataclass(frozen=True, slots=True)
class Raised:
    """A replay that ran at a larger window than asked: the recording's fixed-prompt stand-in (and what it
    inlined) with the first messages does not fit the window (`nova.evaluation.replay.replay_messages`)."""

    name: str
    policy: str
    ran_at: int
    fixed: int
    inlined: int


def raised_lines(raised: dict[int, list[Raised]]) -> list[str]:
    """One line per window asked for: how many replays ran at a larger one, and the one raised furthest
    (a prompt that cannot fit is expected at the small windows; a line per replay buried the table)."""
    lines = []
    for window in sorted(raised):
        runs = raised[window]
        worst = max(runs, key=lambda r: (r.ran_at, r.name, r.policy))
        lines.append(f"window raised at {window // 1000}k: {len(runs)} replay(s) of {len({r.name for r in runs})} "
                     f"session(s); the furthest {worst.name}: {worst.policy} ran at {worst.ran_at:,} (stand-in "
                     f"{worst.fixed:,} fixed + {worst.inlined:,} inlined)")
    return lines


def real_inputs(run: ImportedSession) -> list[int]:
    return [u.context_tokens for m in run.messages if m.role == "assistant"
            and (u := usage_of(m)) is not None and u.context_tokens > 0]


def main() -> int:
    quick = "--quick" in sys.argv
    for name in ("nova.agent", "nova.context"):
        logging.getLogger(name).setLevel(logging.ERROR)
    root = shared_data_dir()
    if not root.is_dir():
        print(f"no shared data at {root}: set NOVA_SHARED_DATA")
        return 2
    files = session_files(root)
    imported: list[tuple[Path, ImportedSession]] = []
    refused: list[str] = []
    for path in files:
        try:
            imported.append((path, read_session_file(path)))
        except Exception as exc:
            refused.append(f"{path.relative_to(root)}: {exc}")
    cost_ratios: list[float] = []
    peak_ratios: list[float] = []
    over = 0
    unpriced: list[str] = []
    offenders: list[str] = []  # which policy went over the window, where
    # Where a fixed-prompt stand-in made the replay run at a larger window, by the window asked for.
    raised: dict[int, list[Raised]] = {}
    uncounted: list[str] = []  # recordings whose usage does not count their requests
    too_small: set[str] = set()  # windows a recording's own fixed prompt does not fit
    print(f"{'session':58} {'calls':>5} {'peak':>6} {'billed $':>9} {'cost':>6}  over@16k/32k/64k/200k")
    runs = [(p, r) for p, s in imported for r in s.runs() if real_inputs(r)]
    if quick:
        runs = runs[::4]
    for path, run in runs:
        model = str(run.meta.get("model") or "")
        counter = counter_for_model(model or "claude-sonnet-4-5")
        rec = replay_session(run, window=1_000_000, policy="recorded", counter=counter)
        peak = rec.peak_context_tokens / max(real_inputs(run))
        cost = None
        if rec.uncounted_usage_calls:
            uncounted.append(f"{path.name}: {rec.uncounted_usage_calls} of {rec.calls} calls")
            continue
        if rec.billed_usd and rec.cost_usd is not None and rec.output_cost_usd is not None:
            peak_ratios.append(peak)
            cost = (rec.cost_usd + rec.output_cost_usd) / rec.billed_usd
            cost_ratios.append(cost)
        else:
            peak_ratios.append(peak)
            unpriced.append(f"{path.name} ({', '.join(rec.unpriced_models) or 'no billed usage'})")
        counts = []
        for window in WINDOWS:
            n = 0
            for policy in BASELINES:
                try:
                    report = replay_session(run, window=window, policy=policy, counter=counter)
                except PromptTooLarge as exc:
                    # The recording's own system prompt (not a stand-in) is larger than this window: no
                    # agent could run the session here, so there is no request to count.
                    too_small.add(f"{path.name} at {window // 1000}k: its recorded fixed prompt "
                                  f"({exc.fixed_tokens:,} tokens) does not fit")
                    continue
                first = real_inputs(run)[0]
                if report.requests_over_window and first > window and not report.window_raised_from:
                    # The first request (the recorded prompt and the first message, which every policy
                    # sends whole) was already larger than this window: the agent cannot run here at all.
                    too_small.add(f"{path.name} at {window // 1000}k: its first real request ({first:,} "
                                  "tokens) does not fit")
                    continue
                n += report.requests_over_window
                if report.requests_over_window:
                    offenders.append(f"{path.name}: {policy} at {window // 1000}k, {report.requests_over_window} "
                                     f"call(s) over, peak {report.peak_context_tokens:,}")
                if report.window_raised_from:
                    raised.setdefault(window, []).append(Raised(path.name, policy, report.window,
                                                                report.placeholder_tokens,
                                                                report.inlined_placeholder_tokens))
            counts.append(n)
            over += n
        name = str(path.relative_to(root))[-58:]
        billed = f"{rec.billed_usd:9.4f}" if rec.billed_usd is not None else f"{'unknown':>9}"
        print(f"{name:58} {rec.calls:5} {peak:6.3f} {billed} {cost or 0:6.3f}  "
              + "/".join(map(str, counts)))
    pct = 100.0 * len(imported) / len(files) if files else 0.0
    for line in refused:
        print(f"refused: {line}")
    for line in offenders:
        print(f"over the window: {line}")
    for line in raised_lines(raised):
        print(line)
    for line in sorted(too_small):
        print(f"not replayed: {line}")
    for line in unpriced:
        print(f"no cost ratio: {line}")
    for line in uncounted:
        print(f"not compared (the recorded usage does not count the requests): {line}")
    figures = {
        "cost_ratio_min": round(min(cost_ratios), 4) if cost_ratios else None,
        "cost_ratio_max": round(max(cost_ratios), 4) if cost_ratios else None,
        "peak_ratio_min": round(min(peak_ratios), 4) if peak_ratios else None,
        "peak_ratio_max": round(max(peak_ratios), 4) if peak_ratios else None,
        "baseline_calls_over_window": over,
        "formats_imported_pct": round(pct, 1),
    }
    misses = [
        not cost_ratios or figures["cost_ratio_min"] < COST_BAND[0] or figures["cost_ratio_max"] > COST_BAND[1],
        not peak_ratios or figures["peak_ratio_min"] < PEAK_BAND[0] or figures["peak_ratio_max"] > PEAK_BAND[1],
        over > 0, pct < 100.0, bool(unpriced),
    ]
    print(f"targets: cost {COST_BAND}, peak {PEAK_BAND}, 0 over the window, 100 % imported, every session priced"
          f" -> {'met' if not any(misses) else 'MISSED'}")
    print(json.dumps(figures))
    return 1 if any(misses) else 0


if __name__ == "__main__":
    sys.exit(main())
