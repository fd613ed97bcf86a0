"""The text `nova replay FILE --at-recorded-compaction` prints: the facts each summary keeps, per class, then
the recorded agent's summary and Nova's side by side, each in a column of its own.

Plain lines (no markup), so the same text goes to a terminal, a pipe or a test.
"""

from __future__ import annotations

import textwrap

from nova.evaluation.anchor import SOURCES, AnchorComparison
from nova.evaluation.facts import FACT_KINDS, kept

__all__ = ["comparison_lines", "side_by_side_lines"]

_LABELS = {"recorded_summary": "recorded summary", "nova_summary": "Nova's summary", "nova_view": "Nova's view"}


def _pct(kept_n: int, total: int) -> str:
    return f"{kept_n}/{total}" if total else "-"


def comparison_lines(c: AnchorComparison) -> list[str]:
    """The figures: where the boundary is, then per class how many facts each text keeps, and those the
    next messages used."""
    r = c.recorded
    out = [f"{r.path.name} ({r.format}): compaction at line {r.boundary_line} ({r.trigger or 'unknown'} trigger, "
           f"{r.tokens_before:,} tokens before); {c.replayed_messages} messages replayed; Nova's view "
           f"{'starts with its summary' if c.nova_summary else 'is the history, whole'}"]
    if c.note:
        out.append(f"note: {c.note}")
    scores = c.scores()
    needed = c.scores(c.needed())
    header = f"  {'facts of the transcript':<24}" + "".join(f"{_LABELS[s]:>18}" for s in SOURCES) + f"{'used next':>11}"
    out.append(header)
    for kind in (*FACT_KINDS, "all"):
        total = scores["nova_view"][kind].total
        out.append(f"  {kind:<24}" + "".join(f"{_pct(scores[s][kind].kept, total):>18}" for s in SOURCES)
                   + f"{_pct(needed['nova_view'][kind].kept, needed['nova_view'][kind].total):>11}")
    out.append(f"  summary tokens: recorded {c.recorded_tokens:,}, Nova {c.nova_tokens:,} "
               "('used next': kept by Nova's view, of the facts the next messages used)")
    missing = [f for f in r.facts if not kept(f, c.view_text)]
    for fact in missing:
        out.append(f"  not in Nova's view: {fact.kind} ({fact.where}) {fact.text[:100]!r}")
    return out


def side_by_side_lines(c: AnchorComparison, *, width: int = 160) -> list[str]:
    """The two summaries in two columns of `width // 2` characters, wrapped, line for line."""
    column = max(30, (width - 3) // 2)

    def wrapped(text: str) -> list[str]:
        lines: list[str] = []
        for line in text.splitlines() or [""]:
            lines.extend(textwrap.wrap(line, column, replace_whitespace=False, drop_whitespace=False) or [""])
        return lines

    left = [f"recorded summary ({c.recorded.format}), {c.recorded_tokens:,} tokens", "-" * column,
            *wrapped(c.recorded.summary)]
    right = [f"Nova's summary, {c.nova_tokens:,} tokens", "-" * column,
             *wrapped(c.nova_summary or f"(none: {c.note})")]
    rows = max(len(left), len(right))
    left += [""] * (rows - len(left))
    right += [""] * (rows - len(right))
    return [f"{a:<{column}} | {b}".rstrip() for a, b in zip(left, right, strict=True)]

