"""Long-term memory in a live agent: recall when the user speaks, extraction when a turn ends (MEM-4, MEM-5).

`memory_extension(...)` builds the agent's memory extension (order 400). At turn start a recall prefetch begins in the
background; before each model call of the turn the loop polls it, and once it is ready its block is
added as one message marked as reference material (it never blocks the turn: the first poll grants a
grace of `recall_grace_s`, 40 ms by default, later polls none). When a turn ends without a tool call, extraction is
scheduled (single-flight, one trailing run). Closing the agent gives a running extraction and the
background consolidation a bounded time to finish.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from nova.context.extensions import Extension, LatePoller, TurnResult
from nova.errors import NovaError
from nova.memory.config import MemoryConfig
from nova.memory.consolidate import Consolidator
from nova.memory.extract import MemoryExtractor, TurnEnd
from nova.memory.instructions import load_rules
from nova.memory.recall import ModelSelector, RecallPrefetch
from nova.memory.retrieval.log import LOG_NAME, RetrievalLog
from nova.memory.store import MemoryStore
from nova.messages import Message, TextPart

if TYPE_CHECKING:
    from nova.providers.base import Provider

__all__ = ["EXTRACTION_GRACE_S", "MemoryRuntime", "memory_extension", "start_consolidation"]

log = logging.getLogger(__name__)

# How long closing the agent (a headless run about to exit) waits for an extraction still running.
EXTRACTION_GRACE_S = 30.0


@dataclass
class MemoryRuntime(Extension):
    order = 400

    store: MemoryStore
    config: MemoryConfig
    extractor: MemoryExtractor | None
    selector: ModelSelector | None
    session_id: str = ""
    background: list[threading.Thread] = field(default_factory=list)
    """Background work started with the session (consolidation) that closing waits for."""
    close_grace_s: float = EXTRACTION_GRACE_S
    rules: tuple[str, ...] = ()
    """Project rule text: a recalled memory that contradicts it is suppressed."""
    retrieval_log: RetrievalLog | None = None
    _recalling: RecallPrefetch | None = field(default=None, init=False, repr=False)
    """The latest recall: closing waits for its model call too (its usage is charged to the session)."""

    def on_turn_start(self, *, user: Message) -> LatePoller:
        prefetch = RecallPrefetch.for_query(
            user.text, dirs=self.store.dirs, selector=self.selector, config=self.config, reviews=self.store.reviews,
            rules=self.rules, log_to=self.retrieval_log,
        ).start()
        self._recalling = prefetch
        first = True

        def poll() -> Message | None:
            nonlocal first
            result = prefetch.wait(self.config.recall_grace_s) if first else prefetch.poll()
            first = False
            if result is None or not result.block.strip():
                return None
            metadata: dict[str, object] = {"memories": [m.name for m in result.memories]}
            if result.conflicts:
                metadata["conflicts"] = [list(pair) for pair in result.conflicts]
            if result.suppressed:
                metadata["suppressed"] = [{"memory": name, "rule": rule} for name, rule in result.suppressed]
            if result.retrieval is not None:
                metadata["retrieval"] = result.retrieval
            return Message(role="user", parts=(TextPart(result.block),), origin="memory", metadata=metadata)

        return poll

    def on_turn_end(self, *, result: TurnResult) -> None:
        if self.extractor is None or result.stop_reason != "end_turn":
            return
        self.extractor.on_turn_end(TurnEnd(session_id=self.session_id, messages=list(result.messages)))

    def wait_idle(self, timeout: float) -> None:
        """Give a running extraction, and a recall still choosing, a bounded chance to finish (a headless
        run is about to exit, and the calls they make are counted when they answer). A recall is never
        waited for past its own timeout: its result would be dropped anyway."""
        if self.extractor is not None:
            self.extractor.wait_idle(timeout)
        if self._recalling is not None:
            self._recalling.settle(timeout)

    def drain(self) -> None:
        # Consolidation is not waited for: it writes the memory store, never the session.
        self.wait_idle(self.close_grace_s)

    def close(self) -> None:
        self.wait_idle(self.close_grace_s)
        for thread in self.background:
            thread.join(self.close_grace_s)


def memory_extension(*, home: Path, cwd: Path, session_id: str, extraction: Provider | None,
                     recall: Provider | None, model: str, config: MemoryConfig,
                     consolidate: bool = True) -> MemoryRuntime | None:
    """Recall and extraction for an agent working in `cwd`; None when memory is disabled. `extraction`
    and `recall` are the model each calls (the agent's, metered under each purpose); with no model for
    recall it picks by keyword, with none for extraction nothing is extracted. `consolidate` starts the
    background consolidation of the memory store (MEM-6)."""
    if not config.enabled:
        return None
    store = MemoryStore.for_workspace(home=home, cwd=cwd)
    runtime = MemoryRuntime(
        store=store,
        config=config,
        extractor=MemoryExtractor(provider=extraction, model=model, store=store, config=config) if extraction else None,
        selector=ModelSelector(provider=recall, model=model) if recall else None,
        session_id=session_id,
        rules=_rule_text(cwd=cwd, home=home),
        retrieval_log=_retrieval_log(store),
    )
    if consolidate:
        runtime.background.append(start_consolidation(store, home=home, config=config))
    return runtime


def _rule_text(*, cwd: Path, home: Path) -> tuple[str, ...]:
    try:
        text = load_rules(cwd=cwd, home=home).text
    except (OSError, NovaError) as exc:  # recall without rule checks beats no recall
        log.debug("project rules not read for memory recall: %s", exc)
        return ()
    return (text,) if text.strip() else ()


def _retrieval_log(store: MemoryStore) -> RetrievalLog:
    return RetrievalLog(store.dirs[0] / LOG_NAME)


def start_consolidation(store: MemoryStore, *, home: Path, config: MemoryConfig) -> threading.Thread:
    """MEM-6 in the background at session start: merges duplicates and drops expired memories when its
    gates allow (24 h, 5 sessions, scans at most every 10 min, a lock). Failures are logged, never raised."""

    def run() -> None:
        try:
            report = Consolidator.for_home(store=store, home=home, config=config).maybe_run()
            log.debug("memory consolidation: %s", report)
        except Exception:
            log.debug("memory consolidation failed", exc_info=True)

    thread = threading.Thread(target=run, name="nova-memory-consolidate", daemon=True)
    thread.start()
    return thread
