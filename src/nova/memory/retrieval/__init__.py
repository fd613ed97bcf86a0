"""Multi-stage retrieval over memories and past session records (SPEC MEM-9): hard filters, keyword and
vector recall, fusion and rerank, dedupe and conflicts, source-tagged evidence, and a log of use."""

from nova.memory.retrieval.filters import HardFilters
from nova.memory.retrieval.log import RetrievalLog
from nova.memory.retrieval.memories import search_memories
from nova.memory.retrieval.pipeline import Hit, RetrievalIndex, SearchResult, Weights
from nova.memory.retrieval.records import Record
from nova.memory.retrieval.render import render_evidence

__all__ = ["HardFilters", "Hit", "Record", "RetrievalIndex", "RetrievalLog", "SearchResult", "Weights",
           "render_evidence", "search_memories"]
