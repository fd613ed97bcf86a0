"""The context window at a glance: one stacked bar of the window by kind — system, tools, rules, memory,
history, summary, observations, free — from the compiler's manifest.

The manifest's classes (always-on, index, pinned, on-demand) say how a segment is kept; a person asks
what it is, so each segment is given one of the kinds below from its id and source. The kinds other
than `free` sum to the manifest's `used` (the figure on the bar); `free` is the rest of the window.
`text_picture` draws it for a terminal (the TUI's `/context`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from nova.context.manifest import Manifest, Segment, apportion

__all__ = ["KINDS", "Slice", "kind_of", "picture", "text_picture"]

KINDS = ("system", "tools", "rules", "memory", "history", "summary", "observations", "free")

# One letter per kind, so the bar reads without colour too; colours for a terminal that has them.
GLYPHS = {"system": "S", "tools": "T", "rules": "R", "memory": "M", "history": "H", "summary": "Σ",
          "observations": "O", "free": "·"}
STYLES = {"system": "bold white on blue", "tools": "bold white on magenta", "rules": "bold black on yellow",
          "memory": "bold black on cyan", "history": "bold white on green", "summary": "bold white on dark_green",
          "observations": "bold black on bright_white", "free": "dim"}

_OBSERVATIONS = ("task.state", "environment", "policy.resolution")


def kind_of(segment: Segment) -> str:
    sid, source, reason = segment.id, segment.source, segment.reason
    if sid == "tools":
        return "tools"
    if sid.startswith(("rules:", "policy:")):  # instruction files and the organisation policy
        return "rules"
    if sid.startswith("system"):
        return "system"
    if sid in _OBSERVATIONS or reason.startswith("restore attachment"):
        return "observations"
    if sid.startswith("memory") or source.startswith("memory:"):
        return "memory"
    if reason.startswith("compaction summary"):
        return "summary"
    return "history"


@dataclass(frozen=True, slots=True)
class Slice:
    kind: str
    tokens: int
    segments: tuple[str, ...] = ()
    """The ids of the segments in it (empty for `free`)."""


def picture(manifest: Manifest) -> list[Slice]:
    """One slice per kind, in `KINDS` order, zero-sized kinds included."""
    tokens = dict.fromkeys(KINDS, 0)
    members: dict[str, list[str]] = {k: [] for k in KINDS}
    for segment in manifest.segments:
        kind = kind_of(segment)
        tokens[kind] += segment.tokens
        members[kind].append(segment.id)
    tokens["free"] = max(0, manifest.window - manifest.used)
    return [Slice(kind, tokens[kind], tuple(members[kind])) for kind in KINDS]


def _cells(slices: Sequence[Slice], width: int) -> list[int]:
    """Cells per slice summing to `width`; a kind that holds anything gets at least one cell."""
    cells = apportion(width, [s.tokens for s in slices])
    for i, s in enumerate(slices):
        if s.tokens > 0 and cells[i] == 0:
            widest = max(range(len(cells)), key=lambda j: cells[j])
            if cells[widest] > 1:
                cells[widest] -= 1
                cells[i] = 1
    return cells


def text_picture(manifest: Manifest, *, width: int = 60) -> list[tuple[str, str | None]]:
    """The bar and its legend as (text, style) runs; join the texts for plain text. The legend's
    figures other than `free` add up to the manifest's `used`."""
    slices = picture(manifest)
    runs: list[tuple[str, str | None]] = [("window ", None)]
    for s, n in zip(slices, _cells(slices, width), strict=True):
        if n:
            runs.append((GLYPHS[s.kind] * n, STYLES[s.kind]))
    runs.append((f"  {manifest.used:,} used of {manifest.window:,}\n", None))
    legend = [f"{GLYPHS[s.kind]} {s.kind} {s.tokens:,}" for s in slices if s.tokens or s.kind == "free"]
    runs.append(("  " + "   ".join(legend), None))
    return runs
