"""Nova's own `transcript.jsonl` (or a session directory holding one), and `nova sessions export`'s
JSONL, which is the transcript after one `session` event carrying what only meta.json holds (title,
working directory, provider, model). Damaged lines are skipped and listed (with `strict`, refused naming
the offset).

Besides the messages, a replay needs what the live calls were sent and the messages do not hold: the
system prompt (`system_prompt` event), the tool catalog (`tools`), each task-state write where it fell
(`task_state`: the pinned block of every call), the compactions and rewrites it made
(`compact_boundary`, `message_content_updated`: while a replay makes the same, its views are the
recorded ones, and the restore attachments say what was re-read from disk) and the model (its token
counter). They are read into the session's `system`, `tools`, `pipeline` and `meta["model"]`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from nova.errors import StorageError
from nova.messages import Message
from nova.model import ToolSpec
from nova.sessions.meta import META_NAME, read_meta_or_damage
from nova.sessions.readers.base import (
    Confidence,
    ImportedSession,
    PipelineRecord,
    RecordedCompaction,
    RecordedRewrite,
    RecordedTaskState,
    SkippedRecord,
    refuse,
    sure,
)
from nova.sessions.schema import BoundaryRecord, EventRecord, MessageRecord
from nova.sessions.transcript import TRANSCRIPT_NAME, Transcript

NAME = "nova"
SYSTEM_PROMPT_EVENT = "system_prompt"
TOOLS_EVENT = "tools"
"""The tool catalog the session's calls were sent, and the directory the outputs they name are in:
`{"tools": [{"name", "description", "input_schema"}], "session_dir": "..."}`."""
TASK_STATE_EVENT = "task_state"
"""A task-state write: `{"state": <TaskState.to_dict()>, "version": n}`."""
REWRITE_EVENT = "message_content_updated"
"""A message of the working history rewritten in place (`Session.update_message_content`)."""
IMPORTED_EVENT = "imported"
SESSION_EVENT = "session"
"""The first line of an export: the session's title, cwd, provider and model (`header_event_data`)."""
_RECORD_TYPES = ("message", "compact_boundary", "event")


class NovaReader:
    name = NAME

    def confidence(self, path: Path, head_records: Sequence[Any]) -> Confidence:
        if path.is_dir():
            if (path / TRANSCRIPT_NAME).is_file():
                return sure(1.0)
            return refuse(f"a directory without a {TRANSCRIPT_NAME}")
        first = head_records[0] if head_records else None
        if not isinstance(first, dict):
            return refuse("record 1 is not a JSON object")
        if not isinstance(first.get("v"), int):
            return refuse("record 1: no integer `v` field")
        if first.get("type") not in _RECORD_TYPES:
            return refuse(f"record 1: `type` is {first.get('type')!r}, expected one of {', '.join(_RECORD_TYPES)}")
        return sure(1.0)

    def read(self, path: Path, *, strict: bool = False) -> ImportedSession:
        transcript = Transcript(path / TRANSCRIPT_NAME if path.is_dir() else path)
        messages: list[Message] = []
        system = ""
        tools: tuple[ToolSpec, ...] = ()
        recorded_dir = ""
        meta: dict[str, Any] = {}
        header: dict[str, Any] = _meta_json_header(path / TRANSCRIPT_NAME if path.is_dir() else path)
        damaged: list[str] = []
        # What the pipeline did, each with the number of messages read before it.
        states: list[tuple[int, Mapping[str, Any]]] = []
        changes: list[tuple[int, BoundaryRecord | str]] = []  # a compaction, or the id of a rewritten message
        imported = False
        for record in transcript.iter_records(strict=strict, on_bad=lambda bad: damaged.append(bad.describe())):
            if isinstance(record, MessageRecord):
                messages.append(record.message)
            elif isinstance(record, BoundaryRecord):
                changes.append((len(messages), record))
            elif isinstance(record, EventRecord):
                if record.name == SYSTEM_PROMPT_EVENT:
                    system = str(record.data.get("text", ""))
                elif record.name == TOOLS_EVENT:
                    tools, recorded_dir = tools_from_event(record.data), _text(record.data.get("session_dir"))
                elif record.name == TASK_STATE_EVENT and isinstance(record.data.get("state"), dict):
                    states.append((len(messages), dict(record.data["state"])))
                elif record.name == REWRITE_EVENT and isinstance(record.data.get("message_id"), str):
                    changes.append((len(messages), record.data["message_id"]))
                elif record.name == IMPORTED_EVENT:
                    meta, imported = dict(record.data.get("meta") or {}), True
                elif record.name == SESSION_EVENT and not header:
                    header = dict(record.data)
        # A session recorded by Nova itself names its model in meta.json (or the export's header); an
        # imported one keeps the model of the agent that recorded it.
        if not meta.get("model") and _text(header.get("model")):
            meta["model"] = header["model"]
        torn = transcript.find_torn_tail()
        if torn is not None:
            meta["torn_tail_bytes"] = torn.size
        if damaged:
            meta["damaged_records"] = damaged
        return ImportedSession(messages=messages, system=system, format=NAME, source_path=path, meta=meta,
                               skipped=tuple(SkippedRecord("transcript", d) for d in damaged),
                               title=_text(header.get("title")), cwd=_text(header.get("cwd")), tools=tools,
                               # Only a session Nova ran, with its fixed prompt known, is what Nova's pipeline
                               # did; an imported one's compactions are the recording agent's.
                               pipeline=_pipeline_record(messages, states, changes, recorded_dir)
                               if tools and not imported else None)


def imported_from(path: Path) -> tuple[str, Path] | None:
    """The format and file a Nova session folder was imported from, or None (a session Nova ran, or not a
    session folder): what reads a format's own records (the comparison at a recorded compaction) reads
    that file."""
    transcript = path / TRANSCRIPT_NAME
    if not transcript.is_file():
        return None
    for record in Transcript(transcript).iter_records(on_bad=lambda _: None):
        if isinstance(record, EventRecord) and record.name == IMPORTED_EVENT:
            source = _text(record.data.get("source_path"))
            return (_text(record.data.get("format")), Path(source)) if source else None
    return None


def _pipeline_record(messages: Sequence[Message], states: Sequence[tuple[int, Mapping[str, Any]]],
                     changes: Sequence[tuple[int, BoundaryRecord | str]], session_dir: str) -> PipelineRecord:
    def before(index: int) -> str:
        return messages[index].id if index < len(messages) else ""

    return PipelineRecord(
        session_dir=session_dir,
        task_states=tuple(RecordedTaskState(before=before(at), state=state) for at, state in states),
        changes=tuple(RecordedRewrite(before=before(at), message_id=change) if isinstance(change, str)
                      else RecordedCompaction(before=before(at), covers=change.covers, head=tuple(change.head()),
                                              trigger=change.trigger, summary_cost=_summary_cost(change))
                      for at, change in changes))


def _summary_cost(boundary: BoundaryRecord) -> float | None:
    cost = (boundary.receipt or {}).get("summary_cost_tokens")
    return float(cost) if isinstance(cost, int | float) else None


def tools_event_data(tools: Sequence[ToolSpec], session_dir: Path | None = None) -> dict[str, Any]:
    """The `tools` event's data for a catalog (`tools_from_event` reads it back)."""
    data: dict[str, Any] = {"tools": [{"name": t.name, "description": t.description,
                                       "input_schema": dict(t.input_schema)} for t in tools]}
    if session_dir is not None:
        data["session_dir"] = str(session_dir)
    return data


def tools_from_event(data: Mapping[str, Any]) -> tuple[ToolSpec, ...]:
    listed = data.get("tools")
    if not isinstance(listed, list):
        return ()
    return tuple(ToolSpec(name=str(t.get("name", "")), description=str(t.get("description", "")),
                          input_schema=dict(t.get("input_schema") or {}))
                 for t in listed if isinstance(t, dict))


def session_dir_of(session: ImportedSession) -> Path | None:
    """The session directory of a Nova recording, None for anything else: the recorded calls name their
    spilled outputs under it. The one the session recorded, else the one it was read from (a session
    directory, or the transcript in one)."""
    if session.format != NAME:
        return None
    if session.pipeline is not None and session.pipeline.session_dir:
        return Path(session.pipeline.session_dir)
    path = session.source_path
    if path.is_dir():
        return path
    return path.parent if path.name == TRANSCRIPT_NAME else None


def header_event_data(*, title: str, cwd: str, provider: str, model: str, session_id: str) -> dict[str, Any]:
    """What an export's first `session` event says: what meta.json holds and the transcript does not."""
    return {"session_id": session_id, "title": title, "cwd": cwd, "provider": provider, "model": model}


def _meta_json_header(transcript: Path) -> dict[str, Any]:
    """What the meta.json beside a session's transcript says (nothing for a file elsewhere)."""
    if transcript.name != TRANSCRIPT_NAME or not (transcript.parent / META_NAME).is_file():
        return {}
    try:
        meta, _ = read_meta_or_damage(transcript.parent)
    except StorageError:  # unreadable or from a newer Nova: the messages still import, untitled
        return {}
    return {"title": meta.title, "cwd": meta.cwd, "model": meta.model} if meta is not None else {}


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""
