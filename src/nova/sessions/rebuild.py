"""Rebuilding what is derived from a transcript: `meta.json` and the session's rows in the store.

The transcript is the source of truth; meta.json (totals for the listing) and the store (the queryable
copy) are caches of it. When either is missing or damaged it is rebuilt from the records, never the
other way round. What the transcript does not hold is lost with the cache and said so: the cost total
(records keep token usage, not prices) and the working directory the session started in.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from nova.errors import StorageError
from nova.messages import Message
from nova.model import Usage
from nova.sessions.meta import MODEL_EVENT, SessionMeta, find_git_root, title_from_prompt
from nova.sessions.schema import BoundaryRecord, EventRecord, MessageRecord
from nova.sessions.store import SessionStore
from nova.sessions.transcript import BadLine, Transcript

__all__ = ["TranscriptCounts", "count_transcript", "meta_from_counts", "rebuild_store_rows", "set_aside"]


@dataclass(slots=True)
class TranscriptCounts:
    """What one full read of a transcript says about the session (for meta.json and the doctor)."""

    messages: int = 0
    usage: Usage = field(default_factory=Usage)
    last_context_tokens: int = 0
    first_ts: float = 0.0
    last_ts: float = 0.0
    compacted_at: float | None = None
    title: str = ""
    imported: dict[str, object] = field(default_factory=dict)
    model: dict[str, object] = field(default_factory=dict)
    """The last provider, model and endpoint the session moved to (its `model` event), if it did."""
    message_ids: list[str] = field(default_factory=list)
    """Ids the store should hold: every recorded message and every boundary head message."""
    bad: list[BadLine] = field(default_factory=list)


def count_transcript(transcript: Transcript) -> TranscriptCounts:
    from nova.sessions.importers import IMPORTED_EVENT  # the importers load only when a rebuild runs

    counts = TranscriptCounts()
    for record in transcript.iter_records(on_bad=counts.bad.append):
        ts = record.ts
        if ts and not counts.first_ts:
            counts.first_ts = ts
        counts.last_ts = max(counts.last_ts, ts)
        if isinstance(record, MessageRecord):
            counts.messages += 1
            counts.message_ids.append(record.message.id)
            if record.usage is not None:
                counts.usage = counts.usage + record.usage
                counts.last_context_tokens = record.usage.context_tokens + record.usage.output_tokens
            if not counts.title and record.message.role == "user" and record.message.text.strip():
                counts.title = title_from_prompt(record.message.text)
        elif isinstance(record, BoundaryRecord):
            counts.compacted_at = ts
            counts.message_ids.extend(m.id for m in record.messages)
        elif isinstance(record, EventRecord) and record.name == MODEL_EVENT:
            counts.model = dict(record.data)
        elif isinstance(record, EventRecord) and record.name == IMPORTED_EVENT and not counts.imported:
            counts.imported = {"format": record.data.get("format"), **dict(record.data.get("meta") or {})}
    return counts


def meta_from_counts(session_id: str, counts: TranscriptCounts, *, transcript: Path) -> SessionMeta:
    """A meta.json rebuilt from the records. Token totals are the sum of the usage each record kept;
    the cost is unknown (0); the working directory is not in the records."""
    imported = counts.imported
    model = imported.get("model")
    cwd = imported.get("cwd")
    try:
        mtime = transcript.stat().st_mtime
    except OSError:
        mtime = time.time()
    cwd_text = str(cwd) if isinstance(cwd, str) else ""
    moved = counts.model
    provider = f"import:{imported['format']}" if imported.get("format") else ""
    base_url: str | None = None
    if isinstance(moved.get("provider"), str) and isinstance(moved.get("model"), str):
        provider, model = str(moved["provider"]), moved["model"]
        base_url = str(moved["base_url"]) if isinstance(moved.get("base_url"), str) else None
    return SessionMeta(
        id=session_id,
        title=counts.title,
        cwd=cwd_text,
        git_root=find_git_root(cwd_text) if cwd_text else "",
        provider=provider,
        model=str(model) if isinstance(model, str) else "",
        base_url=base_url,
        created_at=counts.first_ts or mtime,
        updated_at=max(counts.last_ts, counts.first_ts) or mtime,
        message_count=counts.messages,
        usage=counts.usage,
        last_context_tokens=counts.last_context_tokens,
        compacted_at=counts.compacted_at,
        extra={"rebuilt_from_transcript_at": time.time()},
    )


def rebuild_store_rows(store: SessionStore, session_id: str, transcript: Transcript,
                       on_bad: Callable[[BadLine], None] | None = None) -> int:
    """Put every message of the transcript into the store in order, with the compacted flags a
    compaction set; ids the store already holds are left as they are (snipped content survives).
    Returns how many messages were offered to the store."""
    pending: list[Message] = []
    offered = 0
    for record in transcript.iter_records(on_bad=on_bad):
        if isinstance(record, MessageRecord):
            pending.append(record.message)
        elif isinstance(record, BoundaryRecord):
            store.append_messages(session_id, pending)
            offered += len(pending)
            pending = []
            store.mark_compacted(session_id, record.covers)
            store.append_messages(session_id, list(record.messages))
            offered += len(record.messages)
    store.append_messages(session_id, pending)
    return offered + len(pending)


def set_aside(path: Path) -> Path:
    """Rename a damaged file to `<name>.corrupt-<UTC time>` beside it (kept, never deleted)."""
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + f"-{time.time_ns() % 1_000_000_000:09d}"
    target = path.with_name(f"{path.name}.corrupt-{stamp}")
    try:
        os.replace(path, target)
    except OSError as exc:
        raise StorageError(f"cannot move the damaged {path} aside: {exc.strerror}") from None
    return target

