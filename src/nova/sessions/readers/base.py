"""The reader protocol: one small module per recorded-session format, each saying how sure it is that a
file is its format (and why not, when it refuses) and reading it into Nova messages.

    reader.confidence(path, head_records)  -> Confidence(score 0..1, reason)
    reader.read(path, strict=False)        -> ImportedSession (messages, skipped records, child sessions)

`head_records` is what detection could parse cheaply: for a file holding one JSON document, that one
document; for a JSON-lines file, its first lines parsed (`NotJson` for a line that is not JSON); for a
directory, nothing. A refusal (score 0) names the first record and field that did not fit, so a file no
reader takes gets one message that says why each format refused it. Two bases hold the check a kind of
format shares: `DocumentReader` (one JSON document) and `HeaderReader` (JSON lines opened by a typed
header record).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol

from nova.messages import Message
from nova.model import ToolSpec

__all__ = ["Confidence", "DocumentReader", "HeaderReader", "ImportedSession", "NotJson", "PipelineRecord", "RecordedCompaction", "RecordedRewrite",
           "RecordedTaskState", "SessionReader", "SkippedRecord", "first_object", "refuse", "sure"]


@dataclass(frozen=True, slots=True)
class Confidence:
    """How sure a reader is that a file is its format: 0 refuses (with the reason), 1 is certain."""

    score: float
    reason: str = ""


def refuse(reason: str) -> Confidence:
    return Confidence(0.0, reason)


def sure(score: float, reason: str = "") -> Confidence:
    return Confidence(score, reason)


@dataclass(frozen=True, slots=True)
class NotJson:
    """A line of a JSON-lines file that does not parse."""

    line: int
    error: str


def first_object(head_records: Sequence[Any]) -> dict[str, Any] | Confidence:
    """The first head record when it is a JSON object, else the refusal that says why not."""
    first = head_records[0] if head_records else None
    if isinstance(first, NotJson):
        return refuse(f"line {first.line}: not JSON")
    if not isinstance(first, dict):
        return refuse("record 1 is not a JSON object")
    return first


@dataclass(frozen=True, slots=True)
class SkippedRecord:
    """A record a reader took the file for but could not use: where it is and why."""

    where: str
    reason: str

    def describe(self) -> str:
        return f"{self.where}: {self.reason}"


@dataclass(frozen=True, slots=True)
class RecordedTaskState:
    """A task-state write (`task_state` event): the state the calls were compiled with from here on."""

    before: str
    """The id of the message it came before ("" when after the last one); so for every record below."""
    state: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class RecordedCompaction:
    """A compaction (`compact_boundary`): what it folded and the head of history it left."""

    before: str
    covers: tuple[str, ...]
    head: tuple[Message, ...]
    trigger: str = "threshold"
    """What started it: `threshold`, `hard`, `cost`, `overflow` (the provider refused) or `manual` (`/compact`)."""
    summary_cost: float | None = None
    """What its receipt charged for the summary call (0: the summary made no model call); None when the
    boundary has no receipt."""


@dataclass(frozen=True, slots=True)
class RecordedRewrite:
    """A message rewritten in the view (`message_content_updated`: a snip, a cut, a late spill)."""

    before: str
    message_id: str


@dataclass(frozen=True, slots=True)
class PipelineRecord:
    """What a Nova session's context pipeline did besides sending its messages, each where it happened
    between them: a replay of the session does the same, and while its compactions and rewrites are
    these its views are the recorded ones."""

    task_states: tuple[RecordedTaskState, ...] = ()
    changes: tuple[RecordedCompaction | RecordedRewrite, ...] = ()
    """The compactions and rewrites, in the order they happened."""
    session_dir: str = ""
    """Where the session kept its spilled and cut outputs, as its calls name them ("" when not recorded)."""

    @property
    def compactions(self) -> tuple[RecordedCompaction, ...]:
        return tuple(c for c in self.changes if isinstance(c, RecordedCompaction))

    @property
    def summarized_by_model(self) -> bool | None:
        """Whether the session's summaries were model calls, as its receipts say (False: every one was
        extractive, no call); None when no compaction recorded a receipt."""
        costs = [c.summary_cost for c in self.compactions if c.summary_cost is not None]
        return any(cost > 0 for cost in costs) if costs else None


@dataclass(frozen=True, slots=True)
class ImportedSession:
    messages: list[Message]
    system: str
    format: str
    source_path: Path
    meta: dict[str, Any] = field(default_factory=dict)
    skipped: tuple[SkippedRecord, ...] = ()
    children: tuple[ImportedSession, ...] = ()
    """Sessions the recorded one started (Claude Code sub-agents), each linked back by
    `meta["parent_tool_use_id"]` / `meta["parent_session"]`."""
    title: str = ""
    """The title the recorded session had, when its format keeps one (a Nova export does)."""
    cwd: str = ""
    """The working directory the recorded session ran in, when its format keeps one; "" when unknown
    (never the folder the file happens to be in)."""
    siblings: tuple[ImportedSession, ...] = ()
    """Further independent sessions the same file holds (every run of an OpenHands `output.jsonl` after
    the first, one per line), each imported as a session of its own; `meta["run"]` names each."""
    tools: tuple[ToolSpec, ...] = ()
    """The tool catalog the recorded agent sent, when its format keeps one (a Nova transcript does); ()
    when unknown."""
    pipeline: PipelineRecord | None = None
    """What Nova's context pipeline did in the recorded session (a session Nova recorded with its fixed
    prompt, not one it imported); None for any other."""

    def runs(self) -> tuple[ImportedSession, ...]:
        """This session and its siblings, in file order."""
        return (self, *self.siblings)

    @property
    def working_directory(self) -> str:
        """Where the recorded session ran: `cwd`, else the `cwd` its records carry in `meta` (Claude Code,
        Codex, pi and OpenCode keep it there); "" when unknown."""
        recorded = self.cwd or self.meta.get("cwd")
        return recorded if isinstance(recorded, str) else ""


class SessionReader(Protocol):
    name: str

    def confidence(self, path: Path, head_records: Sequence[Any]) -> Confidence: ...

    def read(self, path: Path, *, strict: bool = False) -> ImportedSession: ...


class DocumentReader(ABC):
    """A reader of a format that is one JSON document (an export, a trajectory file): anything else is
    refused alike, and the reader judges only the document."""

    name: str

    def confidence(self, path: Path, head_records: Sequence[Any]) -> Confidence:
        if len(head_records) != 1 or not isinstance(head_records[0], dict):
            return refuse("expected one JSON object")
        return self.document_confidence(head_records[0])

    @abstractmethod
    def document_confidence(self, doc: dict[str, Any]) -> Confidence: ...

    @abstractmethod
    def read(self, path: Path, *, strict: bool = False) -> ImportedSession: ...


class HeaderReader(ABC):
    """A reader of a JSON-lines format whose first record says what the file is: its `type` is one of
    `first_types`; the reader judges the rest of that record."""

    name: str
    first_types: ClassVar[tuple[str, ...]]
    expected: ClassVar[str]
    """How a refusal names `first_types`."""

    def confidence(self, path: Path, head_records: Sequence[Any]) -> Confidence:
        first = first_object(head_records)
        if isinstance(first, Confidence):
            return first
        if first.get("type") not in self.first_types:
            return refuse(f"record 1: `type` is {first.get('type')!r}, expected {self.expected}")
        return self.header_confidence(first)

    @abstractmethod
    def header_confidence(self, first: dict[str, Any]) -> Confidence: ...

    @abstractmethod
    def read(self, path: Path, *, strict: bool = False) -> ImportedSession: ...
