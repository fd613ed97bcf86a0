"""Nova compacting where the recorded agent compacted: the two summaries side by side, scored on the facts
of the transcript itself (`nova.evaluation.facts`).

    comparison = at_recorded_compaction(path, window=200_000)
    comparison.scores()          # kind -> Score for the recorded summary, Nova's summary, Nova's view
    comparison.needed()          # the facts the next messages after the boundary used

The recording is imported as `nova replay` imports it, cut right before the recorded agent's summary
(`RecordedCompaction.summary_line`) and replayed under the `nova` policy with one compaction forced before
the final view (`replay_messages(..., compact_before=...)`); the controller may compact on its own before
that, as it would have. Nova's view is the final view right after that compaction; its summary is the
newest summary message in it. `nova replay FILE --at-recorded-compaction` and
`benchmarks/anchor_summary.py` both run this.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nova.errors import NovaError
from nova.evaluation.facts import (
    FACT_KINDS,
    Fact,
    FactKind,
    RecordedCompaction,
    kept,
    read_claude_code,
    used_by,
)
from nova.evaluation.replay import ReplayReport, replay_messages, view_text
from nova.messages import Message, SummaryPart
from nova.sessions.importers import read_session_file
from nova.sessions.readers.common import mid
from nova.sessions.readers.nova import imported_from
from nova.settings import CompactionConfig, SpillConfig
from nova.tokens import TokenCounter
from nova.tokens.counters import CL100K_PROFILE, HeuristicCounter

__all__ = ["LATER_MESSAGES", "AnchorComparison", "NoRecordedCompaction", "Score", "at_recorded_compaction",
           "find_recorded_compaction"]

# How many messages after the boundary are read to say which facts the continuation used.
LATER_MESSAGES = 30
SOURCES = ("recorded_summary", "nova_summary", "nova_view")


class NoRecordedCompaction(NovaError, ValueError):
    """The recording holds no compaction by the agent that recorded it."""


@dataclass(frozen=True, slots=True)
class Score:
    kept: int
    total: int

    @property
    def pct(self) -> float | None:
        return 100.0 * self.kept / self.total if self.total else None


@dataclass(frozen=True, kw_only=True)
class AnchorComparison:
    recorded: RecordedCompaction
    replayed_messages: int
    """Messages of the import before the recorded summary: what Nova replayed."""
    report: ReplayReport
    nova_summary: str
    """Nova's newest summary in its view after the forced compaction ("" when it made none)."""
    recorded_tokens: int
    nova_tokens: int
    later: str
    """The text of the next `LATER_MESSAGES` messages after the recorded summary."""
    note: str = ""

    @property
    def view(self) -> list[Message]:
        return self.report.final_view

    @property
    def view_text(self) -> str:
        # With each call's tool name: a failed Edit is the fact "Edit <path>", as Nova's summary writes it.
        return view_text(self.view, tool_names=True)

    def text_of(self, source: str) -> str:
        return {"recorded_summary": self.recorded.summary, "nova_summary": self.nova_summary,
                "nova_view": self.view_text}[source]

    def kept_by(self, source: str) -> dict[Fact, bool]:
        text = self.text_of(source)
        return {fact: kept(fact, text) for fact in self.recorded.facts}

    def scores(self, facts: Sequence[Fact] | None = None) -> dict[str, dict[FactKind | str, Score]]:
        """source -> kind (and "all") -> Score, over `facts` (every fact by default)."""
        chosen = list(self.recorded.facts if facts is None else facts)
        out: dict[str, dict[FactKind | str, Score]] = {}
        for source in SOURCES:
            flags = self.kept_by(source)
            row: dict[FactKind | str, Score] = {}
            for kind in FACT_KINDS:
                of_kind = [f for f in chosen if f.kind == kind]
                row[kind] = Score(sum(flags[f] for f in of_kind), len(of_kind))
            row["all"] = Score(sum(flags[f] for f in chosen), len(chosen))
            out[source] = row
        return out

    def needed(self) -> list[Fact]:
        """The facts the next messages after the boundary used (`nova.evaluation.facts.used_by`)."""
        return [f for f in self.recorded.facts if used_by(f, self.later)]

    def to_json(self) -> dict[str, Any]:
        scores = self.scores()
        needed = self.scores(self.needed())

        def figures(table: dict[str, dict[FactKind | str, Score]]) -> dict[str, Any]:
            return {source: {kind: {"kept": s.kept, "total": s.total} for kind, s in row.items()}
                    for source, row in table.items()}

        return {
            "file": str(self.recorded.path),
            "format": self.recorded.format,
            "boundary_line": self.recorded.boundary_line,
            "trigger": self.recorded.trigger,
            "tokens_before": self.recorded.tokens_before,
            "replayed_messages": self.replayed_messages,
            "nova_compactions": self.report.compactions,
            "recorded_summary_tokens": self.recorded_tokens,
            "nova_summary_tokens": self.nova_tokens,
            "kept": figures(scores),
            "needed": figures(needed),
            "facts": [{"kind": f.kind, "text": f.text[:300], "where": f.where, "rejected": f.rejected,
                       "used_after": used_by(f, self.later),
                       **{source: kept(f, self.text_of(source)) for source in SOURCES}}
                      for f in self.recorded.facts],
            **({"note": self.note} if self.note else {}),
        }


def find_recorded_compaction(path: Path) -> RecordedCompaction | None:
    """The recording's first compaction by the agent that recorded it, when its format has one we read."""
    try:
        return read_claude_code(path)
    except (OSError, UnicodeDecodeError):
        return None


def _recorded_file(path: Path) -> Path:
    """The Claude Code file a Nova session folder was imported from, else `path` itself."""
    origin = imported_from(path) if path.is_dir() else None
    if origin is None or origin[0] != "claude-code":
        return path
    source = origin[1]
    if not source.is_file():
        raise NoRecordedCompaction(f"{path} was imported from {source}, which is no longer there: this comparison "
                                   "reads the records Claude Code wrote; give that file")
    return source


def _no_compaction(path: Path) -> str:
    """Why there is nothing to compare: no compaction, or one of a format this comparison does not read
    (its facts are read from Claude Code's records), which `--policy recorded` still replays."""
    try:
        session = read_session_file(path)
    except NovaError:
        session = None
    origin = imported_from(path) if path.is_dir() else None
    if origin is not None and origin[0] not in ("", "claude-code"):
        return (f"{path}: imported from a {origin[0]} recording ({origin[1]}), but this "
                "comparison reads Claude Code compactions only (a `compact_boundary` followed by its "
                "`isCompactSummary` record); `nova replay --policy recorded` replays this one")
    if session is not None and session.format != "claude-code" and any(
            m.has("summary") and "compaction" in m.metadata for m in session.messages):
        return (f"{path}: the recorded {session.format} agent compacted, but this comparison reads Claude Code "
                "compactions only (a `compact_boundary` followed by its `isCompactSummary` record); "
                "`nova replay --policy recorded` replays this one")
    return (f"{path}: no compaction by the recorded agent (a Claude Code `compact_boundary` followed by its "
            "`isCompactSummary` record)")


def at_recorded_compaction(
    path: Path, *, window: int = 200_000, counter: TokenCounter | None = None, config: CompactionConfig | None = None,
    spill: SpillConfig | None = None, cut_before: int | None = None,
) -> AnchorComparison:
    """Replay `path` up to its recorded agent's first compaction and make Nova compact at that message.
    `cut_before` (a line of a Claude Code transcript) cuts a session that never compacted there instead:
    Nova's side alone, scored on the same facts (the recorded summary is ""). A session imported from a
    Claude Code file (its id, or its folder) is compared from that file: its facts are read from the
    records Claude Code wrote, which the import does not keep."""
    path = _recorded_file(path)
    recorded = read_claude_code(path, cut_before=cut_before) if cut_before else find_recorded_compaction(path)
    if recorded is None:
        raise NoRecordedCompaction(_no_compaction(path))
    counter = counter or HeuristicCounter(CL100K_PROFILE)
    session = read_session_file(path)
    if cut_before:
        # The first message imported from that line on (ids follow the lines: `m00123`).
        at = next((i for i, m in enumerate(session.messages) if m.id >= mid(cut_before)), len(session.messages))
    else:
        summary_id = mid(recorded.summary_line)
        found = next((i for i, m in enumerate(session.messages) if m.id == summary_id), None)
        if found is None:
            raise NoRecordedCompaction(f"{path}: line {recorded.summary_line} holds the recorded summary, but the "
                                       "import has no message for it")
        at = found
    # The forced compaction's index counts the recorded messages: after the last one replayed.
    before = session.messages[:at]
    report = replay_messages(before, system=session.system, window=window, policy="nova", counter=counter,
                             config=config, spill=spill, compact_before={at})
    summary = next((m for m in reversed(report.final_view) if m.origin == "summary"), None)
    # The summary itself, not the restore attachment beside it (re-read files): the recorded agent
    # re-attaches those apart from its summary too.
    summary_text = "\n\n".join(p.text for p in summary.parts if isinstance(p, SummaryPart)) if summary else ""
    note = "" if summary is not None else ("Nova did not compact: a summary of the history before the boundary "
                                           "would not make the view smaller, so the view keeps the history whole")
    first_after = at if cut_before else at + 1  # past the recorded summary itself
    later = view_text(session.messages[first_after: first_after + LATER_MESSAGES])
    return AnchorComparison(
        recorded=recorded, replayed_messages=len(before), report=report,
        nova_summary=summary_text,
        recorded_tokens=counter.count(recorded.summary),
        nova_tokens=counter.count(summary_text) if summary is not None else 0,
        later=later, note=note,
    )
