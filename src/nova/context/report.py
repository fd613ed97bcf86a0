"""A compiled view's manifest as people and programs read it: the JSON of `nova context --json` and of
`GET /api/sessions/{id}/context`, and the plain text of `nova context` and the TUI's `/context`."""

from __future__ import annotations

from typing import Any

from nova.context.compiler import Compiled
from nova.context.picture import kind_of, picture

__all__ = ["context_json", "distinct_labels", "render_context", "render_why"]


def context_json(compiled: Compiled) -> dict[str, Any]:
    m = compiled.manifest
    slices = picture(m)
    return {
        "used": m.used,
        "limit": m.limit,
        "window": m.window,
        "percent": m.percent,
        "segments": [{"id": s.id, "class": s.cls, "kind": kind_of(s), "source": s.source, "tokens": s.tokens,
                      "reason": s.reason} for s in m.segments],
        "dropped": [d.to_dict() for d in m.dropped],
        # The window as one bar by kind, then free (`nova.context.picture`, the TUI's `/context` bar and
        # the web page's picture); the parts sum to `figure`.
        "picture": {"figure": sum(s.tokens for s in slices),
                    "parts": [{"kind": s.kind, "tokens": s.tokens} for s in slices]},
    }


def render_context(compiled: Compiled, *, width: int = 100) -> str:
    """The manifest as plain text (the TUI's `/context`)."""
    m = compiled.manifest
    lines = [f"context: {m.used:,} of {m.limit:,} tokens ({m.percent:.1f}% of the compaction threshold; "
             f"window {m.window:,})"]
    labels = distinct_labels([s.id for s in m.segments], 22)
    label_width = max([22, *(len(label) for label in labels)])
    lines.append(f"{'segment':<{label_width}} {'class':<10} {'tokens':>8} {'share':>6}  source — reason")
    for s, label in zip(m.segments, labels, strict=True):
        share = s.tokens * 100.0 / m.used if m.used else 0.0
        row = f"{label:<{label_width}} {s.cls:<10} {s.tokens:>8,} {share:>5.1f}%  {s.source} — {s.reason}"
        lines.append(row if len(row) <= width else row[: width - 1] + "…")
    for d in m.dropped:
        lines.append(f"left out: {d.id} ({d.source}): {d.reason}")
    return "\n".join(lines)


def distinct_labels(ids: list[str], width: int) -> list[str]:
    """Segment ids shortened to `width` from the middle (`rules:/home/…/pkg/AGENTS.md`: the file name
    is what tells two rule files apart); an id that would still read like another is shown whole."""

    def short(text: str) -> str:
        if len(text) <= width:
            return text
        head = width // 3
        return text[:head] + "…" + text[-(width - head - 1):]

    labels = [short(i) for i in ids]
    seen: dict[str, int] = {}
    for label in labels:
        seen[label] = seen.get(label, 0) + 1
    return [label if seen[label] == 1 else full for label, full in zip(labels, ids, strict=True)]


def render_why(compiled: Compiled, text: str) -> str:
    found = compiled.why(text)
    if not found:
        return f"{text!r} is not in the context"
    return "\n".join(f"{s.id} [{s.cls}, {s.tokens:,} tokens] from {s.source}: {s.reason}" for s in found)
