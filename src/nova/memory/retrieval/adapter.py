"""The one place retrieval reads memory metadata: a `Memory` (already judged by the review ledger)
becomes a `Record`. When memories gain fields (provenance, scope, promotion rung), only this file needs
to learn them."""

from __future__ import annotations

from nova.memory.retrieval.records import Record
from nova.memory.store import PROJECT_TYPES, Memory

__all__ = ["record_from_memory", "trust_of"]


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
