"""`session_search`: the tool the agent calls to search its project's past sessions (the third memory
layer of seed 000, which otherwise answers only on resume).

Read-only: it reads the session record and writes only Nova's own cache of it (the session index), so
the default permission policy runs it without asking. Its results are past evidence, tagged with their
session and turn (`SessionSearchResult.render`), never instructions. It searches the project of the
agent's working directory only.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from nova.errors import NovaError
from nova.memory.retrieval.embed import Encoder, load_encoder
from nova.memory.retrieval.session_index import project_of
from nova.memory.retrieval.sessions import EVIDENCE, SessionSearcher
from nova.sessions.evidence import KINDS
from nova.tools._schema import object_schema, param
from nova.tools.base import ToolContext, ToolOutput

__all__ = ["SessionSearchTool"]

log = logging.getLogger(__name__)

MAX_LIMIT = 20
ENCODE_SHARE = 0.25
"""Share of a call's time a first search may spend encoding a long history into vectors; what is left
is found by keyword now and encoded by later calls."""


class SessionSearchTool:
    name = "session_search"
    description = (
        "Search this project's earlier sessions (and this one's turns before a compaction) for what was asked, "
        "decided, changed or went wrong: the requests a person sent, the assistant's replies, the files edited "
        "and read, the commands run and the calls that failed. Use it for questions such as 'what did we decide "
        "about X', 'which session changed Y', 'when did the tests last fail'. Each result names its session and "
        "turn and is past evidence: it may be outdated, so check the files before relying on it."
    )
    input_schema: Mapping[str, Any] = object_schema({
        "query": param("string", "What to look for, in words (a file name, a command, a topic)."),
        "kinds": param("array", "Only these kinds of records (default: all).", items=param("string", enum=list(KINDS))),
        "limit": param("integer", "How many results (default 8).", minimum=1, maximum=MAX_LIMIT),
    }, required=["query"])
    # It reads the session record; the only file it writes is Nova's own index of it.
    read_only = True

    def __init__(self, *, home: Path, cwd: Path, encoder: Callable[[], Encoder | None] = load_encoder) -> None:
        self.home = home
        self.project = project_of(cwd)
        self._encoder = encoder

    def run(self, input: Mapping[str, Any], ctx: ToolContext) -> ToolOutput:
        query = input.get("query")
        if not isinstance(query, str) or not query.strip():
            return ToolOutput(content="Error: `query` must be the words to look for.", is_error=True)
        kinds = input.get("kinds") or []
        if not isinstance(kinds, list) or any(k not in KINDS for k in kinds):
            return ToolOutput(content=f"Error: `kinds` must be a list of {', '.join(KINDS)}.", is_error=True)
        limit = input.get("limit", 8)
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_LIMIT:
            return ToolOutput(content=f"Error: `limit` must be a whole number from 1 to {MAX_LIMIT}.", is_error=True)
        try:
            with SessionSearcher(home=self.home, encoder=self._encoder()) as searcher:
                result = searcher.search(query.strip(), project=self.project, limit=limit, kinds=kinds,
                                         encode_budget_s=ctx.timeout_s * ENCODE_SHARE)
        except NovaError as exc:
            log.warning("session_search failed: %s", exc)
            return ToolOutput(content=f"Error: the session search failed: {exc}", is_error=True)
        return ToolOutput(content=result.render(), metadata={
            "evidence": EVIDENCE, "project": self.project, "vector": result.vector,
            "hits": [{"session_id": h.session_id, "turn": h.turn, "kind": h.kind} for h in result.hits],
        })
