"""The one place retrieval reads memory and session metadata: a `Memory` (already judged by the review
ledger) or a stored session message becomes a `Record`. When memories gain fields (provenance, scope,
promotion rung), only this file needs to learn them."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from nova.memory.retrieval.records import Record
from nova.memory.store import PROJECT_TYPES, Memory
from nova.messages import TextPart
from nova.sessions.store import SessionRecord, StoredMessage

__all__ = ["record_from_memory", "records_from_session", "trust_of"]


def trust_of(memory: Memory) -> float:
    """Reviewed by a person > written by Nova from the user's words > held for review > external text."""
    if memory.external or memory.source.origin in ("tool", "web"):
        return 0.2
    if memory.status == "candidate":
        return 0.3
    return 0.9 if memory.author == "user" else 0.6


def record_from_memory(memory: Memory) -> Record:
    path = memory.path
    project = str(path.parent) if path is not None and memory.type in PROJECT_TYPES else None
    external = memory.external or memory.source.origin in ("tool", "web")
    where = str(path) if path is not None else memory.name
    return Record(
        id=memory.name, text=memory.body, kind="memory", title=f"{memory.name}: {memory.description}",
        type=memory.type, project=project, status=memory.status, at=memory.updated, expires=memory.expires,
        trust=trust_of(memory), risk=0.6 if external else 0.0, cost=(len(memory.body) + len(memory.description)) // 4,
        source=f"{where} ({memory.source.describe()})", external=external,
    )


def records_from_session(session: SessionRecord, messages: Sequence[StoredMessage]) -> list[Record]:
    """One record per user or assistant message with text. Left out: tool output (external text, never
    evidence by itself), and everything Nova derived rather than heard — summaries, recalled memories,
    injected context — so a revoked memory that a summary quoted cannot come back through the session."""
    at = datetime.fromtimestamp(session.created_at, UTC) if session.created_at else None
    records: list[Record] = []
    for stored in messages:
        message = stored.message
        if message.role not in ("user", "assistant") or message.origin is not None:
            continue
        text = "\n\n".join(p.text for p in message.parts if isinstance(p, TextPart)).strip()
        if not text:
            continue
        records.append(Record(
            id=f"{session.id}/{message.id}", text=text, kind="session", type="turn", project=session.cwd or None,
            at=at, trust=0.5, cost=len(text) // 4, source=f"session {session.id}, message {message.id}",
            group=session.id, position=stored.seq, speaker=message.role,
        ))
    return records
