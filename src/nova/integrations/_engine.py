"""`ContextEngine`: Nova's context pipeline for one conversation run by another framework.

Each adapter (`nova.integrations.pydantic_ai`, `.openai_agents`, `.langchain`) turns the framework's
messages into Nova's (`nova.integrations._mirror`), hands each new one to `add`, asks `prepare` for the
view of the next model call and turns that view back into the framework's own types. What happens in
between is the agent loop's own context engine, not a copy of it:

- `add`: a tool result passes the per-result spill (`ContextController.process_result`, SPILL-1, 3, 4);
  every message is recorded in the Nova session (`nova replay`, `nova eval` and the report read that
  transcript as they read a Nova run); an assistant message that carries the framework's usage anchors
  the session's one token ledger (TOK-2).
- `prepare`: `ContextController.prepare_view` (SPILL-2, layer-1 snip, layer-2 compaction with the
  continuity guard, the hard line), then the context compiler (the framework's instructions as the
  stable head, the pinned task state, the manifest), then the prompt-cache plan (`nova.context.cache`).

The pieces are put together by `nova.agent.pipeline.build_context_pipeline`, the one builder the live
agent and `nova replay` use, given what a framework run has: the framework's instructions as the stable
head, no environment observation (the framework brings its own), no queueing of rules from requests
(nobody is there to confirm them). The prompt-cache plan is the engine's own: a framework places its
cache points itself, from that plan.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nova import events as ev
from nova.agent.calls import CallMeter
from nova.agent.context_runtime import ContextSources
from nova.agent.pipeline import ContextPipeline, build_context_pipeline
from nova.context.budget import ContextBudget
from nova.context.cache import CachePlan, CachePlanner
from nova.context.compiler import Compiled, SourceText
from nova.context.controller import ContextController, ContextStats
from nova.context.economy import prices_for
from nova.context.extensions import ViewRequest
from nova.context.manifest import Manifest
from nova.context.spill import RESULTS_DIR
from nova.context.state import MemoryStateSource, TaskState, TaskStateStore, apply_command, render_pinned
from nova.context.summarize import ExtractiveSummarizer, ModelSummarizer, Summarizer
from nova.errors import NovaError, SummaryError
from nova.messages import Message, ToolResultPart, ToolUsePart
from nova.model import (
    CacheHints,
    ModelRequest,
    ModelResponse,
    ResponseDone,
    StreamEvent,
    ToolSpec,
    Usage,
    usage_of,
)
from nova.providers.pricing import context_window_for, model_info, usage_cost
from nova.sessions.link import SessionLink
from nova.sessions.session import Session
from nova.settings import CompactionConfig, Settings, SpillConfig, load_settings
from nova.tokens import MemoCounter, TokenLedger, counter_for_model
from nova.tools._schema import object_schema, param
from nova.tools.base import ToolContext
from nova.tools.read_file import ReadFileTool

__all__ = [
    "FRAMEWORKS",
    "FRAMEWORK_PROMPT_EVENT",
    "READ_BACK_TOOL",
    "CallbackProvider",
    "ContextEngine",
    "EngineView",
    "compile_recorded",
    "open_engine",
    "summarizer_choice",
]

log = logging.getLogger(__name__)

FRAMEWORKS = ("pydantic-ai", "openai-agents", "langchain")
"""The `provider` a framework run's session is recorded under (`nova sessions` shows it)."""
FRAMEWORK_PROMPT_EVENT = "framework_prompt"
"""The transcript event holding the framework's instructions, tool schemas and window, written when they
change: `nova context` compiles a framework run's last call from it."""
SYSTEM_PROMPT_EVENT = "system_prompt"
READ_BACK_TOOL = "read_saved_output"
READ_BACK_DESCRIPTION = (
    "Read back a tool output that was saved to a file because it was too large for the context (the "
    "<persisted-output> notes and the '[... N chars snipped ... Full output: <path>]' markers name the "
    "file). Returns its lines with line numbers, from `offset` (1-based), at most `limit` lines."
)
READ_BACK_SCHEMA: Mapping[str, Any] = object_schema({
    "path": param("string", "The saved file's path, exactly as the note gives it."),
    "offset": param("integer", "First line to return, 1-based. Default 1.", minimum=1),
    "limit": param("integer", "How many lines to return. Default 2000.", minimum=1),
}, required=["path"])
DEFAULT_WINDOW = 128_000


@dataclass(frozen=True, kw_only=True)
class EngineView:
    """What the next model call should be sent, as Nova compiled it."""

    messages: Sequence[Message]
    """The view's messages: the working history as the controller left it, with the pinned task state."""
    compiled: Compiled
    plan: Callable[[], CachePlan] = dataclasses.field(repr=False, compare=False)
    event: str
    """What the controller did before this call: "", "spill", "snip", "cut" or "compaction"."""

    @functools.cached_property
    def cache(self) -> CachePlan:
        """Which prompt-cache breakpoints are worth placing (at most the provider's limit). Planned when
        first read: an adapter whose framework places no cache points never pays for the plan."""
        return self.plan()

    @property
    def used(self) -> int:
        return self.compiled.used

    @property
    def manifest(self) -> Manifest:
        return self.compiled.manifest


class CallbackProvider:
    """A Nova `Provider` that answers through a function the adapter binds for the call being prepared:
    the framework's own model, so a compaction summary is asked of the model the run uses (reading the
    prefix the previous call cached). Unbound, it fails the summary, which leaves history unchanged
    (CMP-8)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._call: Callable[[ModelRequest], ModelResponse] | None = None

    def bind(self, call: Callable[[ModelRequest], ModelResponse] | None) -> None:
        self._call = call

    def stream(self, request: ModelRequest) -> Iterator[StreamEvent]:
        if self._call is None:
            raise SummaryError(f"no {self.name} model is bound to write the summary")
        yield ResponseDone(self._call(request))


def _assemble(*, budget: ContextBudget, ledger: TokenLedger, link: SessionLink, config: CompactionConfig,
              summarizer: Summarizer, state: TaskStateStore, framework: str, model: str) -> ContextPipeline:
    """The context pipeline of one framework conversation (`build_context_pipeline`): the controller and
    the compiler measuring the same compiled view (TOK-3), the summary checked for continuity against
    task state and the raw messages (CMP-10)."""
    pipeline = build_context_pipeline(
        budget=budget, config=config, ledger=ledger, sources=_framework_sources(framework, ""), state=state,
        summarizer=summarizer, tools=(), cwd=Path.cwd(), session=link, prices=prices_for(model),
        environment=_no_environment)
    pipeline.runtime.observe_requests = False
    return pipeline


def _framework_sources(framework: str, system: str) -> ContextSources:
    """The stable head of a framework run: the framework's instructions, as one piece."""
    if not system:
        return ContextSources(head=(), policy=())
    return ContextSources(head=(SourceText(id="system", cls="always-on", source=f"{framework}: instructions",
                                           text=system, reason=f"the {framework} agent's instructions "
                                                               "(stable prefix)"),), policy=())


def _no_environment(cwd: Path) -> str:
    """A framework run shows no environment observation: what the agent knows of where it runs is the
    framework's to say (an empty observation is left out of the view)."""
    return ""


class ContextEngine:
    """Nova's context pipeline for one conversation (see the module docstring). Thread-safe: an adapter
    may prepare a view from a worker thread while its event loop runs the framework's summary call."""

    def __init__(
        self,
        *,
        framework: str,
        window: int,
        session: Session | None = None,
        config: CompactionConfig | None = None,
        spill: SpillConfig | None = None,
        summarizer: Summarizer | None = None,
        model: str = "",
        state: TaskStateStore | None = None,
    ) -> None:
        """`session` records the run (its directory keeps spilled and snipped outputs; without one nothing
        is spilled, since every spill must leave a readable path to the original). `summarizer` writes
        compaction summaries: `callback_summarizer()` asks the framework's own model, None extracts one
        without a model. `state` is the task state (default: the session's, else in memory)."""
        self.framework = framework
        self.session = session
        self.model = model
        config = config or CompactionConfig()
        self.budget = ContextBudget.derive(config, window, spill)
        ledger = TokenLedger(MemoCounter(counter_for_model(model)))
        self.bus = ev.EventBus()
        link = SessionLink(id=session.id, recorder=session, dir=session.dir, bus=self.bus) if session is not None \
            else SessionLink(bus=self.bus)
        if state is None:
            state = TaskStateStore(session) if session is not None else TaskStateStore(MemoryStateSource())
        if isinstance(summarizer, ModelSummarizer) and session is not None:
            # A summary asked of the framework's model is a call Nova makes: charged to the session as one.
            metered = CallMeter(summarizer.provider, model=model, session=session).provider_for("compaction")
            summarizer = ModelSummarizer(metered, model=summarizer.model, reuse_cache=summarizer.reuse_cache,
                                         cache=summarizer.cache)
        self._pipeline = _assemble(budget=self.budget, ledger=ledger, link=link, config=config,
                                   summarizer=summarizer or ExtractiveSummarizer(ledger.counter), state=state,
                                   framework=framework, model=model)
        self._planner = CachePlanner(ledger.counter)
        self._price = model_info(model)
        self.history: list[Message] = []
        """The working history: what the controller kept, spilled, snipped and folded."""
        self.last: EngineView | None = None
        self.usage = Usage()
        """Every call's usage so far, as the framework reported it."""
        self._calls: dict[str, ToolUsePart] = {}
        self._sent: Sequence[Message] = ()
        self._prompt: tuple[str, tuple[ToolSpec, ...]] | None = None
        self._lock = threading.RLock()

    # -- what the adapters and their users read ---------------------------------------------------------
    @property
    def ledger(self) -> TokenLedger:
        return self._pipeline.ledger

    @property
    def controller(self) -> ContextController:
        return self._pipeline.controller

    @property
    def stats(self) -> ContextStats:
        return self._pipeline.controller.stats

    @property
    def task_state(self) -> TaskState:
        return self._pipeline.state.load()

    @property
    def manifest(self) -> Manifest | None:
        """The manifest of the last view (CTX-2), or None before the first call."""
        return self.last.manifest if self.last is not None else None

    @property
    def session_dir(self) -> Path | None:
        return self.session.dir if self.session is not None else None

    def command(self, line: str) -> str:
        """A task-state command from the user (`/goal …`, `/constraint …`, `/approve …`, `/open …`), applied by
        deterministic code (CTX-6); returns the pinned block as it now reads."""
        state = self._pipeline.state.update(lambda s: apply_command(s, line, now=time.time()))
        return render_pinned(state) or "task state is empty"

    def restore_task_state(self, state: TaskState) -> TaskState:
        """Pin `state` (a checkpoint's) as this conversation's task state."""
        return self._pipeline.state.update(lambda current: dataclasses.replace(state, version=current.version))

    # -- the pipeline ---------------------------------------------------------------------------------
    def add(self, message: Message) -> Message:
        """One new message of the conversation, in order. Returns it as it enters the working history (a
        tool result over the entry budget replaced by its `<persisted-output>` placeholder)."""
        return self.add_all([message])[0]

    def add_all(self, messages: Sequence[Message]) -> list[Message]:
        """`add` for each of `messages`, in order. The transcript gets them at once; their store rows are
        written in batches (`Session.record_messages(store_later=True)`), all of them by `flush`: a store
        write is a transaction, and one per model call would cost a fast agent loop more than the rest
        of Nova's work on the call."""
        with self._lock:
            entered = [self._enter(message) for message in messages]
            if self.session is not None:
                self.session.record_messages(entered, store_later=True)
            return [message for message, _ in entered]

    def _enter(self, message: Message) -> tuple[Message, Usage | None]:
        if message.tool_results():
            parts = [self.controller.process_result(call=self._calls[p.tool_use_id], result=p)
                     if isinstance(p, ToolResultPart) and p.tool_use_id in self._calls else p
                     for p in message.parts]
            if parts != list(message.parts):
                message = message.with_parts(parts)
        usage = usage_of(message) if message.role == "assistant" else None
        for call in message.tool_uses():
            self._calls[call.id] = call
        self.history.append(message)
        if usage is not None:
            self._charge(message, usage)
        return message, usage

    def _charge(self, message: Message, usage: Usage) -> None:
        # TOK-2: the framework's own figure for the view this reply answered anchors the ledger.
        self.ledger.record(message.id, usage, sent=self._sent, reply=message)
        self.controller.on_usage(message=message, usage=usage)
        self.usage = self.usage + usage
        if self.session is not None:
            self.session.add_cost(usage, usage_cost(usage, self._price) if self._price is not None else None)

    def prepare(self, *, system: str, tools: Sequence[ToolSpec]) -> EngineView:
        """The view of the next call for the instructions `system` and the tool schemas `tools`."""
        with self._lock:
            self._note_prompt(system, tools)
            controller = self.controller
            controller.tools = tuple(tools)
            self.history = controller.prepare_view(request=ViewRequest(history=self.history, system=system))
            compiled = self._compile(system, tools)
            messages = compiled.view.messages
            self._sent = messages
            self.last = EngineView(messages=messages, compiled=compiled, plan=functools.partial(self._plan, compiled),
                                   event=controller.stats.last_event)
            if self.session is not None:
                self.session.note_context_size(compiled.used)
            return self.last

    def may_summarize(self, *, system: str, tools: Sequence[ToolSpec]) -> bool:
        """Whether the next `prepare` might ask the summarizer for a layer-2 summary: the view is at the
        threshold, or at the cost floor where a compaction may pay for itself (`nova.context.economy`).
        Below both, `prepare` calls no model, so an adapter may run it on its event loop; at or above, it
        runs it in a worker thread, leaving the loop free for the framework's own model call."""
        with self._lock:
            self._use_system(system)
            used = self._compile(system, tools).used
            floor = self.budget.cost_floor or self.budget.threshold
            return used >= min(self.budget.threshold, floor)

    def drop(self, message_ids: Sequence[str]) -> None:
        """The framework took these messages back (the end of its history): they leave the working
        history, and the record says so (the raw log keeps them)."""
        if not message_ids:
            return
        with self._lock:
            gone = set(message_ids)
            self.history = [m for m in self.history if m.id not in gone]
            self.ledger.clear()
            if self.session is not None:
                self.session.record_event("framework_messages_removed", {"message_ids": list(message_ids)})

    def reset(self, messages: Sequence[Message]) -> None:
        """The framework's history no longer continues the one Nova follows (edited, or another
        conversation): follow `messages` from here, recorded anew."""
        with self._lock:
            if self.session is not None:
                self.session.record_event("framework_history_replaced", {"messages": len(messages)})
            self.history = []
            self.ledger.clear()
            self.add_all(messages)

    def flush(self) -> None:
        if self.session is not None:
            self.session.flush()

    def _plan(self, compiled: Compiled) -> CachePlan:
        with self._lock:
            view = compiled.view
            return self._planner.plan(ModelRequest(model=self.model, system=view.system, messages=view.messages,
                                                   tools=view.tools, cache=CacheHints(system=True, last_tool=True,
                                                                                      last_user_message=True,
                                                                                      first_message=True)))

    def _compile(self, system: str, tools: Sequence[ToolSpec]) -> Compiled:
        return self._pipeline.runtime.compile(self.history, system=system, tools=tools)

    def _use_system(self, system: str) -> None:
        """The framework's instructions are the head the compiler shows (with their provenance)."""
        runtime = self._pipeline.runtime
        if runtime.sources.system != system:
            runtime.sources = _framework_sources(self.framework, system)

    def _note_prompt(self, system: str, tools: Sequence[ToolSpec]) -> None:
        self._use_system(system)
        prompt = (system, tuple(tools))
        if prompt == self._prompt or self.session is None:
            self._prompt = prompt
            return
        if self._prompt is None or self._prompt[0] != system:
            self.session.record_event(SYSTEM_PROMPT_EVENT, {"text": system})
        self.session.record_event(FRAMEWORK_PROMPT_EVENT, {
            "framework": self.framework, "system": system, "window": self.budget.window,
            "tools": [{"name": t.name, "description": t.description, "input_schema": dict(t.input_schema)}
                      for t in tools]})
        self._prompt = prompt

    # -- the read-back tool ---------------------------------------------------------------------------
    def read_saved_output(self, path: str, offset: int = 1, limit: int = 2000) -> str:
        """The registered read-back tool: lines of a file this session saved (a spilled or snipped output,
        a cut message), never any other file. Reading it is exempt from spilling again (SPILL-3): the
        spiller sees the call's `path` under the session directory."""
        directory = self.session_dir
        if directory is None:
            return "Error: this run records no session, so no output was saved to a file."
        target = Path(path).expanduser()
        if not target.is_absolute():
            target = directory / target
        root = directory.resolve()
        try:
            resolved = target.resolve()
        except OSError as exc:
            return f"Error: cannot read {path}: {exc.strerror}"
        if root not in resolved.parents:
            return (f"Error: {path} is not a saved output of this session; only files under {directory} "
                    f"(such as {directory / RESULTS_DIR}) can be read back with this tool.")
        output = ReadFileTool().run({"path": str(resolved), "offset": max(1, offset), "limit": max(1, limit)},
                                    ToolContext(cwd=root, session_dir=directory))
        return output.content


def summarizer_choice(summarizer: str | Summarizer, *, framework: str,
                      model: str) -> tuple[Summarizer | None, CallbackProvider | None]:
    """The summarizer an adapter's `open` was asked for, with the provider the adapter must answer:
    "model" asks the framework's own model (through a `CallbackProvider`), any other choice by name
    ("extractive") is None (the engine extracts one), and a `Summarizer` is itself."""
    if summarizer == "model":
        provider = CallbackProvider(framework)
        return callback_summarizer(provider, model=model), provider
    return (None if isinstance(summarizer, str) else summarizer), None


def callback_summarizer(provider: CallbackProvider, *, model: str) -> Summarizer:
    """The model summarizer (CMP-6) over the framework's own model, bound per call by the adapter."""
    return ModelSummarizer(provider, model=model or provider.name, cache=CacheHints(
        system=True, last_tool=True, last_user_message=True, first_message=True))


def open_engine(
    *,
    framework: str,
    model: str = "",
    window: int | None = None,
    session: Session | None = None,
    home: Path | None = None,
    record: bool = True,
    settings: Settings | None = None,
    summarizer: Summarizer | None = None,
    title: str = "",
) -> ContextEngine:
    """A `ContextEngine` from Nova's settings (`~/.nova/config.json`, the `compaction` and `spill` keys)
    as the CLI reads them. The window: `window`, else the configured one, else the model table's for
    `model`, else `compaction.default_context_window`. The run is recorded in a new session under
    `home` (default: the settings' home) unless `session` is given or `record` is False."""
    if settings is None:
        settings = load_settings(home=home, env=dict(os.environ)) if home is None else load_settings(home=home, env={})
    chosen = window or settings.context_window or context_window_for(model) \
        or settings.compaction.default_context_window or DEFAULT_WINDOW
    if session is None and record:
        session = Session.create(settings.home, title=title, cwd=os.getcwd(), provider=framework, model=model)
    return ContextEngine(framework=framework, window=chosen, session=session, config=settings.compaction,
                         spill=settings.spill, summarizer=summarizer, model=model)


def compile_recorded(session: Session, *, config: CompactionConfig | None = None) -> Compiled:
    """The last call of a recorded framework run as Nova compiles it (`nova context`): the instructions,
    tools and window the run last sent (its `framework_prompt` event), the working history after the last
    compaction, the ledger anchored on the latest recorded usage, the session's task state."""
    from nova.sessions.schema import EventRecord

    prompt: Mapping[str, Any] | None = None
    for record in session.transcript.iter_records():
        if isinstance(record, EventRecord) and record.name == FRAMEWORK_PROMPT_EVENT:
            prompt = record.data
    if prompt is None:
        raise NovaError(f"session {session.id} was recorded by {session.meta.provider} but holds no "
                        f"{FRAMEWORK_PROMPT_EVENT} event: it made no model call")
    history = session.load_history()
    ledger = TokenLedger(counter_for_model(session.meta.model))
    for message in history:
        usage = usage_of(message) if message.role == "assistant" else None
        if usage is not None:
            ledger.record(message.id, usage)
    tools = [ToolSpec(name=str(t.get("name", "")), description=str(t.get("description", "")),
                      input_schema=dict(t.get("input_schema") or {})) for t in prompt.get("tools") or ()]
    config = config or CompactionConfig()
    budget = ContextBudget.derive(config, int(prompt.get("window") or DEFAULT_WINDOW))
    framework = str(prompt.get("framework") or session.meta.provider)
    system = str(prompt.get("system") or "")
    # The pipeline the run had, reading only: no session link, so nothing is written.
    pipeline = _assemble(budget=budget, ledger=ledger, link=SessionLink(), config=config,
                         summarizer=ExtractiveSummarizer(ledger.counter), state=TaskStateStore(session),
                         framework=framework, model=session.meta.model)
    pipeline.runtime.sources = _framework_sources(framework, system)
    return pipeline.runtime.compile(history, system=system, tools=tools)


def to_json_text(value: Any) -> str:
    """A tool output or argument that is not text, as the model would read it."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)
