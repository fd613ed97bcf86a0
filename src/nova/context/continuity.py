"""Continuity across compaction (CMP-10, seed 001 §6).

Before a summary is accepted, a baseline is taken from canonical task state (goal, constraints,
approvals, open items, evidence references); the summary — together with the user's messages that
`compact` copies into it verbatim — is checked item by item, and the pointers it gives are checked
readable. A summary that loses an item — or carries an approach the person rejected as a decision or the
next step — is rejected, and the summary is rebuilt by deterministic code
from task state and the raw events (the extractive summarizer over the raw originals, never over the
previous summary alone). `ContinuityGuard` does this as a `Summarizer` wrapping the configured one, so
the controller's compaction path (`compact` → summarizer) runs it on every layer-2 compaction.

After the compaction, `check_after` checks the new model view (summary, tail, pinned task state) the
same way and keeps the report for `/context` and the tests.

Matching is literal on purpose: an item is held when its text appears (case and spacing ignored), or
when every content word of it does, negations included — "merge not approved" is not held by a summary
that only says "merge approved".
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from nova.context.state import TaskState, TaskStateStore, baseline_items
from nova.context.summarize import (
    ExtractiveSummarizer,
    Summarizer,
    SummaryRequest,
    rejected_approaches,
    user_entries_in,
)
from nova.messages import Message
from nova.tokens import TokenCounter
from nova.tokens.counters import CL100K_PROFILE, HeuristicCounter

__all__ = ["ContinuityGuard", "ContinuityReport", "check_items", "holds", "rebuild_summary", "revived_rejections",
           "state_section"]

log = logging.getLogger(__name__)

_WORDS = re.compile(r"[a-z0-9][a-z0-9_\-./]*|n't")
_NEGATIONS = frozenset({"not", "never", "no", "n't", "without"})
_POINTER = re.compile(r"(?:Full output: |Full output saved to: |raw: )([^\]\n)]+?)(?:\]|\)|\n|$)")
STATE_HEADING = "## Canonical task state (from Nova's task ledger, not from the model)"


@dataclass(frozen=True, kw_only=True)
class ContinuityReport:
    ok: bool
    checked: int
    missing: tuple[tuple[str, str], ...] = ()
    """(kind, text) of baseline items the checked view does not hold."""
    unreadable: tuple[str, ...] = ()
    """Pointers in the summary that lead to no readable file."""
    rebuilt: bool = False
    stage: str = "summary"
    """`summary` (before acceptance) or `view` (the new model view after compaction)."""

    def describe(self) -> str:
        if self.ok:
            return f"continuity ({self.stage}): all {self.checked} items held"
        parts = [f"missing {kind} {text!r}" for kind, text in self.missing]
        parts += [f"unreadable pointer {p}" for p in self.unreadable]
        action = "; rebuilt from task state and raw events" if self.rebuilt else ""
        return f"continuity ({self.stage}) failed: {', '.join(parts)}{action}"


def _words(text: str) -> list[str]:
    return _WORDS.findall(text.lower().replace("’", "'"))


def holds(item: str, text: str) -> bool:
    """Whether `text` keeps `item`: literally, or with every content word and negation of it."""
    norm_item = " ".join(item.lower().split())
    norm_text = " ".join(text.lower().split())
    if norm_item and norm_item in norm_text:
        return True
    words = set(_words(text))
    wanted = [w for w in _words(item) if len(w) >= 3 or w in _NEGATIONS]
    if not wanted:
        return False
    negated = any(w in _NEGATIONS for w in wanted)
    if negated and not (words & _NEGATIONS):
        return False
    return all(w in words or w in _NEGATIONS for w in wanted)


def check_items(state: TaskState, text: str, *, stage: str = "summary") -> ContinuityReport:
    items = baseline_items(state)
    missing: list[tuple[str, str]] = []
    for kind, item in items:
        if kind == "evidence":
            evidence = next((e for e in state.evidence if e.id == item), None)
            if item in text or (evidence is not None and holds(evidence.claim, text)):
                continue
        elif holds(item, text):
            continue
        missing.append((kind, item))
    return ContinuityReport(ok=not missing, checked=len(items), missing=tuple(missing), stage=stage)


def unreadable_pointers(text: str, readable: Callable[[Path], bool] = Path.is_file) -> list[str]:
    bad: list[str] = []
    for match in _POINTER.finditer(text):
        path = Path(match.group(1).strip())
        if path.is_absolute() and not readable(path):
            bad.append(str(path))
    return bad


def state_section(state: TaskState) -> str:
    """Task state as a summary section: every baseline item verbatim."""
    lines = [STATE_HEADING]
    if state.goal:
        lines.append(f"- Goal: {state.goal}")
    lines.extend(f"- Acceptance: {a}" for a in state.acceptance)
    lines.extend(f"- Constraint [{c.id}]: {c.text}" for c in state.constraints)
    lines.extend(f"- Approved: {a}" for a in state.approvals)
    lines.extend(f"- Open: {i}" for i in state.open_items)
    lines.extend(f"- Evidence [{e.id}]: {e.claim} (`{e.command}` exit {e.exit_code}, workspace {e.workspace}, "
                 f"{e.source})" for e in state.evidence)
    if state.plan:
        lines.append("- Plan: " + " → ".join(state.plan))
    return "\n".join(lines)


# Where a model summary says what to do: a rejected approach found here is carried as a choice.
_ACTING_SECTIONS = ("Decisions and rationale", "Next step", "Pending work", "Current state")


def revived_rejections(body: str, request: SummaryRequest) -> list[str]:
    """The approaches the person rejected (`nova.context.summarize.rejected_approaches`) that `body` carries
    in a section saying what to do, on a line that does not say they were rejected."""
    rejected = rejected_approaches(list(request.raw_older) or list(request.older))
    if not rejected:
        return []
    acting: list[str] = []
    section = ""
    for line in body.splitlines():
        if line.startswith("## "):
            section = line[3:].strip()
        elif section in _ACTING_SECTIONS and "reject" not in line.lower():
            acting.append(" ".join(line.lower().split()))
    text = "\n".join(acting)
    return [r for r in rejected if " ".join(r.lower().split())[:80] in text]


def rebuild_summary(state: TaskState, request: SummaryRequest, counter: TokenCounter) -> str:
    """Deterministic summary: task state first, then the extractive summary of the raw originals."""
    if state.empty:
        raw = list(request.raw_older) or list(request.older)
        return ExtractiveSummarizer(counter).summarize(replace(request, raw_older=raw))
    section = state_section(state)
    room = max(128, request.max_tokens - counter.count(section) - 16)
    raw = list(request.raw_older) or list(request.older)
    body = ExtractiveSummarizer(counter).summarize(replace(request, raw_older=raw, max_tokens=room))
    return f"{section}\n\n{body}".strip()


class ContinuityGuard:
    """A `Summarizer` that rejects summaries losing task-state items and rebuilds them (see module doc)."""

    def __init__(self, *, state: TaskStateStore, inner: Summarizer,
                 raw: Callable[[str], Message | None] | None = None, counter: TokenCounter | None = None,
                 readable: Callable[[Path], bool] = Path.is_file) -> None:
        """`readable` says whether a pointer in a summary leads to a file (a replay knows the files its
        recording's session wrote without looking for them on this machine)."""
        self.state = state
        self.inner = inner
        self.raw = raw
        self.readable = readable
        self.counter: TokenCounter = counter or HeuristicCounter(CL100K_PROFILE)
        self.name = f"{inner.name}+continuity"
        self.reports: list[ContinuityReport] = []

    @property
    def model_call(self) -> bool:
        return self.inner.model_call

    @property
    def last(self) -> ContinuityReport | None:
        return self.reports[-1] if self.reports else None

    def summarize(self, request: SummaryRequest) -> str:
        state = self.state.load()  # the baseline, taken before anything is folded
        body = self.inner.summarize(request if state.empty else replace(request, task_state=state_section(state)))
        revived = revived_rejections(body, request)
        if state.empty and not revived:
            return body
        # `compact` puts the user's own words into the summary verbatim, and the modified files, open tasks,
        # rejected approaches, choices and failures (`carried`): they count as held.
        users = "\n".join(text for m in (*request.older, *request.raw_older) for _, text in user_entries_in(m))
        report = check_items(state, f"{body}\n{request.carried}\n{users}") if not state.empty else \
            ContinuityReport(ok=True, checked=0)
        if revived:
            # A summary that carries what the person turned down as a decision or a next step would have
            # the agent try it again.
            report = replace(report, ok=False, missing=(*report.missing, *(("rejected approach", r) for r in revived)))
        bad = unreadable_pointers(body, self.readable)
        if report.ok and not bad:
            self.reports.append(report)
            return body
        report = replace(report, ok=False, unreadable=tuple(bad), rebuilt=True)
        self.reports.append(report)
        log.warning("%s", report.describe())
        return rebuild_summary(state, request, self.counter)

    def check_after(self, view: Sequence[Message], *, pinned: str = "") -> ContinuityReport:
        """Item-by-item check of the model view after compaction (the pinned block included)."""
        state = self.state.load()
        text = "\n".join(m.text for m in view) + "\n" + pinned
        report = check_items(state, text, stage="view")
        self.reports.append(report)
        if not report.ok:
            log.error("%s", report.describe())
        return report
