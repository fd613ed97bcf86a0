"""Nova inside the OpenAI Agents SDK: a `Session` and the run-config hook that filters each model input.

    from nova.integrations.openai_agents import NovaSession

    session = NovaSession.open(window=200_000)
    agent = Agent(name="…", instructions="…", tools=[..., session.read_back_tool])
    result = await Runner.run(agent, "…", session=session, run_config=session.run_config())

`NovaSession` implements the SDK's `Session` protocol over Nova's session record (SQLite by default,
PostgreSQL when a database URL is configured, as for every Nova session): `get_items` returns every
item the run added, whole, as the raw record. `call_model_input_filter` (installed by `run_config()`)
hands Nova each model input and sends Nova's view instead: large tool outputs spilled (read back with
`read_back_tool`), old outputs snipped, older turns folded into a summary written by `summary_model` (or
the agent's own model, or extractively), checked for continuity, every call keeping its output. The
session's history is never trimmed; only what the model is sent is.

The session's methods take the SDK's `wrapper` argument, so the usage of each response (the run
context's request usage entries) anchors Nova's ledger. `session.engine` exposes the manifest of the last
call, the ledger and the counters; `nova replay` and `nova context` read the recorded session.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from nova.integrations._optional import require

require("agents", extra="openai-agents", adapter="nova.integrations.openai_agents")

from agents import FunctionTool, RunConfig  # noqa: E402
from agents.items import TResponseInputItem  # noqa: E402
from agents.memory.session_settings import SessionSettings  # noqa: E402
from agents.model_settings import ModelSettings  # noqa: E402
from agents.models.interface import Model, ModelTracing  # noqa: E402
from agents.run_config import CallModelData, ModelInputData  # noqa: E402
from agents.run_context import RunContextWrapper  # noqa: E402
from agents.tool import function_tool  # noqa: E402

from nova.context.summarize import Summarizer  # noqa: E402
from nova.integrations._adapter import EngineAdapter, SummarizerChoice  # noqa: E402
from nova.integrations._engine import (  # noqa: E402
    READ_BACK_DESCRIPTION,
    READ_BACK_TOOL,
    CallbackProvider,
    ContextEngine,
    open_engine,
    summarizer_choice,
    to_json_text,
)
from nova.integrations._mirror import Mirror, shared_prefix  # noqa: E402
from nova.messages import Message, Part, TextPart, ToolResultPart, ToolUsePart  # noqa: E402
from nova.model import ModelRequest as NovaRequest  # noqa: E402
from nova.model import ModelResponse as NovaResponse  # noqa: E402
from nova.model import ToolSpec, Usage  # noqa: E402
from nova.sessions.session import Session  # noqa: E402
from nova.settings import Settings  # noqa: E402

__all__ = ["FRAMEWORK", "NovaSession", "pairing_violations"]

FRAMEWORK = "openai-agents"
ITEMS_KEY = "openai_agents_items"
"""The message metadata key holding the SDK items a Nova message was made from, whole."""
POPPED_EVENT = "openai_agents_item_popped"
CLEARED_EVENT = "openai_agents_session_cleared"
# A call item and the item that carries its output.
CALL_OUTPUTS = {
    "function_call": "function_call_output",
    "custom_tool_call": "custom_tool_call_output",
    "computer_call": "computer_call_output",
    "local_shell_call": "local_shell_call_output",
    "shell_call": "shell_call_output",
    "apply_patch_call": "apply_patch_call_output",
}
OUTPUT_TYPES = frozenset(CALL_OUTPUTS.values())
Item = TResponseInputItem


class NovaSession(EngineAdapter[Model]):
    """An Agents SDK `Session` recorded by Nova, with the model-input filter (see the module docstring).
    One session follows one conversation."""

    session_settings: SessionSettings | None = None
    framework = FRAMEWORK

    def __init__(self, engine: ContextEngine, *, summary_model: Model | None = None,
                 provider: CallbackProvider | None = None, items: Sequence[Item] = ()) -> None:
        """Use `NovaSession.open`. `items` are the session's items so far (a reopened session's)."""
        super().__init__(engine, summary_model=summary_model, provider=provider)
        self.session_id = engine.session.id if engine.session is not None else "nova"
        self._codec = _Codec()
        self._mirror: Mirror[Item] = Mirror(engine, self._codec)
        self._items: list[Item] = list(items)
        self._unsaved = 0
        """Trailing items the filter took in before `add_items` was given them (a streamed run saves its
        input after the first model call)."""
        self._usage_seen = 0
        self._usage_of: int | None = None
        """Which run's usage `_usage_seen` counts (the id of its run context)."""
        if self._items:
            self._mirror.follow(self._items)
        self.read_back_tool: FunctionTool = _read_back_tool(engine)
        """Add it to the agent's tools: the model reads a spilled output back with it."""

    @classmethod
    def open(
        cls,
        *,
        model: str = "",
        window: int | None = None,
        summarizer: SummarizerChoice | Summarizer = "model",
        summary_model: Model | None = None,
        session_id: str | None = None,
        home: Path | None = None,
        settings: Settings | None = None,
        title: str = "",
    ) -> NovaSession:
        """A new Nova session under `home` (default: Nova's home), or the recorded one `session_id`
        reopened with its items. `model` names the model for Nova's token counter, prices and window (a
        given `window` wins). `summarizer`: "model" asks `summary_model`, else the agent's own model;
        "extractive" needs no model; or any Nova `Summarizer`."""
        chosen, provider = summarizer_choice(summarizer, framework=FRAMEWORK, model=model)
        recorded: Session | None = None
        items: list[Item] = []
        if session_id is not None:
            recorded = _reopen(session_id, home=home, settings=settings)
            items = _recorded_items(recorded)
        engine = open_engine(framework=FRAMEWORK, model=model, window=window, session=recorded, home=home,
                             settings=settings, summarizer=chosen, title=title)
        if recorded is not None:
            # Take the reopened items in without recording them again.
            engine.session = None
            session = cls(engine, summary_model=summary_model, provider=provider, items=items)
            engine.session = recorded
            return session
        return cls(engine, summary_model=summary_model, provider=provider)

    def run_config(self, **kwargs: Any) -> RunConfig:
        """A `RunConfig` with Nova's model-input filter (other settings as given)."""
        return RunConfig(call_model_input_filter=self.call_model_input_filter, **kwargs)

    def close(self) -> None:
        if self.engine.session is not None:
            self.engine.session.close()

    # -- the Session protocol ---------------------------------------------------------------------
    async def get_items(self, limit: int | None = None, *, wrapper: RunContextWrapper[Any] | None = None
                        ) -> list[Item]:
        items = self._items if limit is None else self._items[-limit:] if limit > 0 else []
        return [cast(Item, dict(cast(Mapping[str, Any], i))) for i in items]

    async def add_items(self, items: list[Item], *, wrapper: RunContextWrapper[Any] | None = None) -> None:
        batch = [_as_item(i) for i in items]
        # Items the filter already took in are the start of this batch: skip them.
        start = len(self._items) - self._unsaved
        skip = 0
        while skip < min(len(batch), self._unsaved) and self._codec.same(batch[skip], self._items[start + skip]):
            skip += 1
        self._unsaved = 0
        self._codec.usage = self._new_usage(wrapper)
        self._items.extend(batch[skip:])
        self._follow()

    def _follow(self) -> None:
        try:
            self._mirror.follow(self._items)
        finally:
            self._codec.usage = None
        last = cast(Mapping[str, Any], self._items[-1]) if self._items else {}
        if last.get("type") == "message" and last.get("role") == "assistant":
            # The model answered without a call: the turn is over, the record is made durable.
            self.engine.flush()

    async def pop_item(self, *, wrapper: RunContextWrapper[Any] | None = None) -> Item | None:
        if not self._items:
            return None
        item = self._items.pop()
        self._unsaved = max(0, self._unsaved - 1)
        if self.engine.session is not None:
            self.engine.session.record_event(POPPED_EVENT, {"item": item})
        self._mirror.follow(self._items)
        return item

    async def clear_session(self, *, wrapper: RunContextWrapper[Any] | None = None) -> None:
        self._items = []
        self._unsaved = 0
        if self.engine.session is not None:
            self.engine.session.record_event(CLEARED_EVENT, {})
        self._mirror.follow([])

    def _new_usage(self, wrapper: RunContextWrapper[Any] | None) -> Usage | None:
        """The usage of the responses answered since the last call (the run's request usage entries)."""
        if wrapper is None:
            return None
        entries = list(getattr(wrapper.usage, "request_usage_entries", None) or [])
        if self._usage_of != id(wrapper) or len(entries) < self._usage_seen:
            self._usage_of, self._usage_seen = id(wrapper), 0  # a new run
        fresh = entries[self._usage_seen:]
        self._usage_seen = len(entries)
        if not fresh:
            return None
        latest = fresh[-1]
        details = getattr(latest, "input_tokens_details", None)
        cached = int(getattr(details, "cached_tokens", 0) or 0)
        written = int(getattr(details, "cache_write_tokens", 0) or 0)
        return Usage(input_tokens=max(0, int(latest.input_tokens) - cached - written),
                     output_tokens=int(latest.output_tokens), cache_read_tokens=cached, cache_write_tokens=written)

    # -- the filter ---------------------------------------------------------------------------------
    async def call_model_input_filter(self, data: CallModelData[Any]) -> ModelInputData:
        given = [_as_item(i) for i in data.model_data.input]
        instructions = data.model_data.instructions or ""
        agent = data.agent
        tools = [ToolSpec(name=t.name, description=t.description, input_schema=t.params_json_schema)
                 for t in agent.tools if isinstance(t, FunctionTool)]
        loop = asyncio.get_running_loop()
        model = self.summary_model or _model_of(agent.model)
        settings = agent.model_settings

        def summarize(request: NovaRequest) -> NovaResponse:
            if model is None:
                raise RuntimeError("no model to write the summary: pass summary_model to NovaSession.open")
            sent = self._mirror.render(request.messages)
            future = asyncio.run_coroutine_threadsafe(model.get_response(
                system_instructions=instructions or None, input=sent, model_settings=settings or ModelSettings(),
                tools=list(agent.tools), output_schema=None, handoffs=[], tracing=ModelTracing.DISABLED,
                previous_response_id=None, conversation_id=None, prompt=None), loop)
            response = future.result()
            text = "".join(part.text for item in response.output if getattr(item, "type", "") == "message"
                           for part in getattr(item, "content", []) if getattr(part, "type", "") == "output_text")
            return NovaResponse(message=Message.assistant(text), usage=Usage(
                input_tokens=int(response.usage.input_tokens), output_tokens=int(response.usage.output_tokens)))

        if not self._take_in(given):
            # Not this session's conversation (a limited read, an edited input): send it as given.
            return data.model_data
        if self._provider is not None and self.engine.may_summarize(system=instructions, tools=tools):
            view = await asyncio.to_thread(self._view, instructions, tools, summarize)
        else:
            view = self._view(instructions, tools, None)
        return ModelInputData(input=view, instructions=data.model_data.instructions)

    def _take_in(self, given: list[Item]) -> bool:
        """Follow the model input; False when it is not a continuation of this session's items."""
        known = self._items
        shared = shared_prefix(known, given, self._codec.same)
        if shared < len(known):
            return False
        if len(given) > shared:
            # The input runs ahead of what the session was given: take the rest in now.
            self._items.extend(given[shared:])
            self._unsaved += len(given) - shared
        self._mirror.follow(self._items)
        return True

    def _view(self, instructions: str, tools: list[ToolSpec], summarize: Callable[[NovaRequest], NovaResponse] | None
              ) -> list[Item]:
        return self._mirror.render(self._bound_view(instructions, tools, summarize).messages)


def _reopen(session_id: str, *, home: Path | None, settings: Settings | None) -> Session:
    """A recorded session, opened for writing. Over a shared database (PostgreSQL) the session directory
    is written from its rows first, so a session recorded by another worker or host reopens here."""
    import os

    from nova.sessions.db_transcript import materialize
    from nova.sessions.session import default_store
    from nova.settings import load_settings

    if settings is None:
        settings = load_settings(home=home, env=dict(os.environ)) if home is None else load_settings(home=home)
    store = default_store(settings.home)
    try:
        materialize(settings.home, session_id, store)
    finally:
        store.close()
    return Session.open(settings.home, session_id)


def _model_of(model: Any) -> Model | None:
    if isinstance(model, Model):
        return model
    if isinstance(model, str) and model:
        from agents.models.multi_provider import MultiProvider

        return MultiProvider().get_model(model)
    return None


def _read_back_tool(engine: ContextEngine) -> FunctionTool:
    def read_saved_output(path: str, offset: int = 1, limit: int = 2000) -> str:
        return engine.read_saved_output(path, offset, limit)

    read_saved_output.__doc__ = READ_BACK_DESCRIPTION
    return function_tool(read_saved_output, name_override=READ_BACK_TOOL, description_override=READ_BACK_DESCRIPTION)


def _recorded_items(session: Session) -> list[Item]:
    """The items a recorded session holds, in order, with the pops and clears it recorded applied."""
    from nova.sessions.schema import EventRecord, MessageRecord

    items: list[Item] = []
    after_pop = False
    for record in session.transcript.iter_records():
        if isinstance(record, MessageRecord):
            group = cast(list[Item], record.message.metadata.get(ITEMS_KEY) or [])
            # A pop that split a message records what is left of it again: those items are already here.
            if not (after_pop and group and items[-len(group):] == group):
                items.extend(group)
            after_pop = False
        elif isinstance(record, EventRecord) and record.name == POPPED_EVENT and items:
            items.pop()
            after_pop = True
        elif isinstance(record, EventRecord) and record.name == CLEARED_EVENT:
            items = []
    return items


def _as_item(item: Any) -> Item:
    if isinstance(item, dict):
        return cast(Item, item)
    dump = getattr(item, "model_dump", None)
    if callable(dump):
        return cast(Item, dump(exclude_unset=True))
    raise TypeError(f"an Agents SDK input item must be a dict or a pydantic model, not {type(item).__name__}")


# -- the codec ---------------------------------------------------------------------------------------------
def _kind(item: Mapping[str, Any]) -> str:
    """user, assistant (the model's side: messages, reasoning, calls) or output (a call's output)."""
    kind = item.get("type")
    if kind in OUTPUT_TYPES:
        return "output"
    if kind in (None, "message"):
        return "assistant" if item.get("role") == "assistant" else "user"
    return "assistant"


class _Codec:
    def __init__(self) -> None:
        self.usage: Usage | None = None
        """The usage to carry on the assistant message made next (set by `add_items`)."""

    def same(self, a: Item, b: Item) -> bool:
        # The runner rebuilds its items between calls, and may leave out what it does not send back
        # (an output message's id and status): the same item when everything else is equal.
        return a == b or _essence(a) == _essence(b)

    def to_nova(self, items: Sequence[Item]) -> list[tuple[Message, tuple[Item, ...]]]:
        groups: list[list[Item]] = []
        for item in items:
            kind = _kind(cast(Mapping[str, Any], item))
            if groups and kind != "user" and _kind(cast(Mapping[str, Any], groups[-1][0])) == kind:
                groups[-1].append(item)
            else:
                groups.append([item])
        out: list[tuple[Message, tuple[Item, ...]]] = []
        for group in groups:
            message = _to_nova(group)
            if message.role == "assistant" and self.usage is not None:
                message = message.with_metadata(usage=self.usage.to_dict())
                self.usage = None
            out.append((message.with_metadata(**{ITEMS_KEY: group}), tuple(group)))
        return out

    def insert(self, message: Message) -> list[Item]:
        return [cast(Item, {"role": "user", "content": message.text})]

    def rewrite(self, items: tuple[Item, ...], message: Message) -> list[Item]:
        results = {r.tool_use_id: r.content for r in message.tool_results()}
        out: list[Item] = []
        for item in items:
            data = cast(dict[str, Any], item)
            if data.get("type") in OUTPUT_TYPES and data.get("call_id") in results:
                out.append(cast(Item, {**data, "output": results[data["call_id"]]}))
            elif _kind(data) == "user" and _text_of(data.get("content")) != message.text:
                out.append(cast(Item, {**data, "content": message.text}))
            else:
                out.append(item)
        return out


_INCIDENTAL = frozenset({"id", "status"})


def _essence(item: Item) -> dict[str, Any]:
    return {k: v for k, v in cast(Mapping[str, Any], item).items() if k not in _INCIDENTAL}


def _to_nova(group: Sequence[Item]) -> Message:
    first = cast(Mapping[str, Any], group[0])
    kind = _kind(first)
    if kind == "user":
        return Message(role="user", parts=(TextPart(_text_of(first.get("content"))),))
    parts: list[Part] = []
    for raw in group:
        item = cast(Mapping[str, Any], raw)
        kind_name = str(item.get("type") or "message")
        if kind == "output":
            parts.append(ToolResultPart(str(item.get("call_id", "")), _text_of(item.get("output"))))
        elif kind_name in CALL_OUTPUTS:
            arguments = item.get("arguments", item.get("input", item.get("action")))
            parts.append(ToolUsePart(str(item.get("call_id", "")), str(item.get("name") or kind_name),
                                     _arguments(arguments)))
        elif kind_name == "message":
            parts.append(TextPart(_text_of(item.get("content"))))
        elif kind_name == "reasoning":
            summary = item.get("summary") or []
            text = " ".join(str(s.get("text", "")) for s in summary if isinstance(s, Mapping))
            if text:
                parts.append(TextPart(f"(reasoning) {text}"))
        else:
            # Hosted tools (web and file search, code interpreter, MCP) run inside the response.
            parts.append(TextPart(f"[{kind_name}] {to_json_text({k: v for k, v in item.items() if k != 'id'})}"))
    return Message(role="user" if kind == "output" else "assistant", parts=tuple(parts) or (TextPart(""),))


def _arguments(value: Any) -> dict[str, Any]:
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError:
            return {"input": value}
        return dict(parsed) if isinstance(parsed, Mapping) else {"input": parsed}
    return {} if value is None else {"input": value}


def _text_of(content: Any) -> str:
    """A message's or an output's content as text (the SDK allows a string or a list of content parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        pieces = []
        for part in content:
            if isinstance(part, Mapping):
                text = part.get("text") or part.get("refusal")
                pieces.append(str(text) if text is not None else f"[{part.get('type', 'content')}]")
            else:
                pieces.append(str(part))
        return "\n".join(pieces)
    return "" if content is None else to_json_text(content)


# -- checks --------------------------------------------------------------------------------------------------
def pairing_violations(items: Sequence[Item]) -> list[str]:
    """In the SDK's own items, what the Responses API rejects: a call whose output is missing or given
    twice, an output whose call is not before it."""
    problems: list[str] = []
    calls: dict[str, int] = {}
    outputs: dict[str, int] = {}
    for index, raw in enumerate(items):
        item = cast(Mapping[str, Any], raw)
        kind = item.get("type")
        call_id = str(item.get("call_id", ""))
        if kind in CALL_OUTPUTS:
            calls[call_id] = index
        elif kind in OUTPUT_TYPES:
            if call_id not in calls:
                problems.append(f"item {index}: output for {call_id} has no call before it")
            outputs[call_id] = outputs.get(call_id, 0) + 1
    for call_id, index in calls.items():
        count = outputs.get(call_id, 0)
        if count != 1:
            problems.append(f"item {index}: call {call_id} has {count} outputs")
    return problems
