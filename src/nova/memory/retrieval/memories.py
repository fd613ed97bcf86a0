"""Retrieval over the memory store: the memories (already judged by the review ledger) become records,
the project rules become the lines a memory must not contradict, and the pipeline runs once."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from nova.memory.retrieval.adapter import record_from_memory
from nova.memory.retrieval.embed import Encoder
from nova.memory.retrieval.filters import HardFilters
from nova.memory.retrieval.pipeline import RetrievalIndex, SearchResult
from nova.memory.retrieval.records import ReviewState
from nova.memory.store import Memory

__all__ = ["search_memories"]


def search_memories(query: str, memories: Sequence[Memory], *, rules: Sequence[str] = (), limit: int = 10,
                    now: datetime | None = None, include_candidates: bool = False, types: frozenset[str] | None = None,
                    encoder: Encoder | None = None) -> SearchResult:
    states: set[ReviewState] = {"active", "candidate"} if include_candidates else {"active"}
    filters = HardFilters(now=now or datetime.now(UTC), states=frozenset(states), types=types)
    # External text is never recalled while it waits for review, even where candidates are.
    records = [record_from_memory(m) for m in memories
               if not (m.status == "candidate" and (m.external or not m.recorded))]
    index = RetrievalIndex(records, encoder=encoder, rules=rules)
    result = index.search(query, filters=filters, limit=limit)
    dropped = len(memories) - len(records)
    if dropped:
        excluded = dict(result.stages["filters"]["excluded"])
        excluded["unreviewed external or unrecorded candidate"] = dropped
        result.stages["filters"]["excluded"] = excluded
    return result
