"""Nova's own `transcript.jsonl` (or a session directory holding one), and `nova sessions export`'s
JSONL, which is the transcript after one `session` event carrying what only meta.json holds (title,
working directory, provider, model). Damaged lines are skipped and listed (with `strict`, refused naming
the offset)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from nova.errors import StorageError
from nova.messages import Message
from nova.sessions.meta import read_meta_or_damage
from nova.sessions.readers.base import Confidence, ImportedSession, SkippedRecord, refuse, sure
from nova.sessions.schema import EventRecord, MessageRecord
from nova.sessions.transcript import TRANSCRIPT_NAME, Transcript

NAME = "nova"
SYSTEM_PROMPT_EVENT = "system_prompt"
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
        meta: dict[str, Any] = {}
        header: dict[str, Any] = _meta_json_header(path) if path.is_dir() else {}
        damaged: list[str] = []
        for record in transcript.iter_records(strict=strict, on_bad=lambda bad: damaged.append(bad.describe())):
            if isinstance(record, MessageRecord):
                messages.append(record.message)
            elif isinstance(record, EventRecord):
                if record.name == SYSTEM_PROMPT_EVENT:
                    system = str(record.data.get("text", ""))
                elif record.name == IMPORTED_EVENT:
                    meta = dict(record.data.get("meta") or {})
                elif record.name == SESSION_EVENT and not header:
                    header = dict(record.data)
        torn = transcript.find_torn_tail()
        if torn is not None:
            meta["torn_tail_bytes"] = torn.size
        if damaged:
            meta["damaged_records"] = damaged
        return ImportedSession(messages=messages, system=system, format=NAME, source_path=path, meta=meta,
                               skipped=tuple(SkippedRecord("transcript", d) for d in damaged),
                               title=_text(header.get("title")), cwd=_text(header.get("cwd")))


def header_event_data(*, title: str, cwd: str, provider: str, model: str, session_id: str) -> dict[str, Any]:
    """What an export's first `session` event says: what meta.json holds and the transcript does not."""
    return {"session_id": session_id, "title": title, "cwd": cwd, "provider": provider, "model": model}


def _meta_json_header(directory: Path) -> dict[str, Any]:
    try:
        meta, _ = read_meta_or_damage(directory)
    except StorageError:  # unreadable or from a newer Nova: the messages still import, untitled
        return {}
    return {"title": meta.title, "cwd": meta.cwd} if meta is not None else {}


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""
