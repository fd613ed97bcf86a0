"""The context pipeline, built one way for every caller.

The pipeline is what stands between the working history and the model: the context controller (spill
at entry, cuts, layer 1 and layer 2 of compaction, overflow recovery; `nova.context.controller`) with
its summarizer wrapped in the continuity guard (`nova.context.continuity`), and the context compiler
(`ContextRuntime`: the stable head with provenance, the pinned task state, the environment observation,
the manifest) whose figure the controller's decisions measure (TOK-3). All of it over one budget and
one token ledger.

`build_context_pipeline` is the one place it is put together. `nova.agent.builder.build_agent` calls it
for live sessions and sub-agents (and so for the server, the TUI and every other surface that builds an
agent), `nova.evaluation.replay.replay_messages` for the `nova` policy (and so `nova replay` and `nova
eval`): a replay measures the stack a live run has, not a part of it. What differs between the two is
only what they are given: a live agent its settings' sources, the session's task-state store and a
model summarizer; a replay the recorded system prompt and tools, the recorded task state and the
extractive summarizer.

    pipeline = build_context_pipeline(budget=..., config=..., ledger=..., sources=..., state=...,
                                      summarizer=..., tools=registry.specs(), cwd=...)
    Agent(..., extensions=[*pipeline.extensions, ...])
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from nova.agent.context_runtime import ContextRuntime, ContextSources, environment_snapshot
from nova.context.budget import ContextBudget
from nova.context.compaction import CompactionOutcome
from nova.context.compiler import ContextView, SourceText
from nova.context.continuity import ContinuityGuard
from nova.context.controller import CompactionHooks, ContextController, FixedPrompt
from nova.context.economy import CachePrices
from nova.context.extensions import Extension
from nova.context.state import TaskStateStore, render_pinned, workspace_hash
from nova.context.summarize import Summarizer, SummaryRequest
from nova.messages import Message
from nova.model import ToolSpec
from nova.sessions.link import SessionLink
from nova.settings import CompactionConfig
from nova.tokens import TokenLedger

__all__ = ["ContextPipeline", "build_context_pipeline", "recorded_sources"]

RECORDED_SYSTEM_ID = "system.recorded"


@dataclass(frozen=True, kw_only=True)
class ContextPipeline:
    """The pieces of one session's context pipeline, built together by `build_context_pipeline`."""

    controller: ContextController
    """Spill, cuts, snips, compaction and overflow recovery (extension order 100)."""
    runtime: ContextRuntime
    """The context compiler: every request's view and its manifest (extension order 200)."""
    guard: ContinuityGuard
    """The controller's summarizer: rejects (and rebuilds) a summary that loses task-state items."""
    ledger: TokenLedger
    state: TaskStateStore

    @property
    def budget(self) -> ContextBudget:
        return self.controller.budget

    @property
    def extensions(self) -> tuple[Extension, ...]:
        """What an agent (or a replay) runs of the pipeline, as extensions in their declared order."""
        return (self.controller, self.runtime)


def build_context_pipeline(
    *,
    budget: ContextBudget,
    config: CompactionConfig,
    ledger: TokenLedger,
    sources: ContextSources,
    state: TaskStateStore,
    summarizer: Summarizer,
    tools: Sequence[ToolSpec],
    cwd: Path,
    session: SessionLink,
    read_file: Callable[[str], str | None] | None = None,
    prices: CachePrices | None = None,
    pinned_filter: Callable[[str], str] | None = None,
    environment: Callable[[Path], str] = environment_snapshot,
    workspace: Callable[[Path], str] = workspace_hash,
    readable: Callable[[Path], bool] = Path.is_file,
) -> ContextPipeline:
    """The context pipeline of one session.

    `budget` gives every size (derived from `config` and the window); `ledger` is the session's one
    token ledger (its counter measures everything); `sources` the stable head (the system text is
    theirs); `state` the task state the pinned block shows and the continuity guard checks against;
    `summarizer` writes layer-2 summaries (wrapped in the continuity guard here); `tools` the catalog
    the model is sent. `session` is the session's link (shared with the agent): its directory is where
    spilled and cut outputs go, its recorder gets every rewrite and compaction boundary, `read_file` re-reads files for the restore attachment (None:
    the result the model saw is used), `prices` the model's cache prices for the cost trigger,
    `pinned_filter` rewrites the pinned block before it is shown (revoked memories), `environment` and
    `workspace` observe `cwd` and `readable` the files a summary points to (a replay passes what the
    recording says instead of looking)."""
    # The first-seen version of every message, shared by the controller (layer 2 rebuilds from it) and
    # the continuity guard (it rebuilds a summary from the raw originals).
    raw: dict[str, Message] = {}

    def as_sent(history: Sequence[Message], system: str, tools: Sequence[ToolSpec]) -> ContextView:
        return runtime.compile(history, system=system, tools=tools).view  # the runtime below

    guard = ContinuityGuard(state=state, inner=_AsSent(summarizer, as_sent), raw=raw.get, counter=ledger.counter,
                            readable=readable)
    runtime = ContextRuntime(cwd=cwd, sources=sources, state=state, budget=budget, ledger=ledger, guard=guard,
                             pinned_filter=pinned_filter, environment=environment, workspace=workspace)

    def check_continuity(outcome: CompactionOutcome) -> None:
        guard.check_after(outcome.messages, pinned=render_pinned(state.load()))

    controller = ContextController(
        budget=budget, config=config, ledger=ledger, summarizer=guard, session=session,
        prompt=FixedPrompt(system=sources.system, tools=tools),
        hooks=CompactionHooks(read_file=read_file, raw=raw, on_compacted=check_continuity, measure=runtime.measure),
        prices=prices or CachePrices(),
    )
    return ContextPipeline(controller=controller, runtime=runtime, guard=guard, ledger=ledger, state=state)


class _AsSent:
    """Hands the summarizer the conversation as the model last saw it: compiled, with its observations
    and its tools in the order they were sent. The controller knows the history, not the view; a model
    summary sent the history would part from the cached prefix at the first observation (and at the
    tool catalog, which the compiler sorts), and pay for the whole view again."""

    def __init__(self, inner: Summarizer,
                 compile: Callable[[Sequence[Message], str, Sequence[ToolSpec]], ContextView]) -> None:
        self.inner = inner
        self.compile = compile
        self.name = inner.name

    @property
    def model_call(self) -> bool:
        return self.inner.model_call

    def summarize(self, request: SummaryRequest) -> str:
        if request.context:
            view = self.compile(request.context, request.system, request.tools)
            request = replace(request, context=list(view.messages), system=view.system, tools=view.tools)
        return self.inner.summarize(request)


def recorded_sources(system: str) -> ContextSources:
    """The stable head of a recorded session: its system prompt as one piece (a recording keeps the
    text it sent, not the files it was made of, so there is nothing to resolve between them)."""
    if not system:
        return ContextSources(head=(), policy=())
    return ContextSources(head=(SourceText(id=RECORDED_SYSTEM_ID, cls="always-on", source="recording: system prompt",
                                           text=system, reason="the system prompt the recording holds"),),
                          policy=())
