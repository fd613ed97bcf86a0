"""Nova inside a LangChain v1 / LangGraph agent: one agent middleware.

    from nova.integrations.langchain import NovaMiddleware

    agent = create_agent(model, tools=[...], middleware=[NovaMiddleware.open(window=200_000)])

`NovaMiddleware` wraps every model call (`wrap_model_call`, `awrap_model_call`): it hands Nova the
agent's messages and calls the model with Nova's view instead, while the graph state keeps every message
whole (the raw record). In the view: large tool outputs spilled (the middleware registers
`read_saved_output` to read them back), old outputs snipped, older turns folded into a summary written
by the agent's own model (or `summary_model`, or extractively), checked for continuity; every tool call
keeps its `ToolMessage`, and the user's words are carried verbatim.

Nova's task state (goal, constraints, approvals, open items) lives in the graph state under
`nova_task_state` (`NovaState`), a plain JSON object: a checkpointer saves it with the thread, and a
resumed thread's middleware pins it again (`before_model` reads it, and writes it back when it changed).
Each `AIMessage`'s `usage_metadata` anchors the ledger. `middleware.engine` exposes the manifest of the
last call, the ledger and the counters; the run is recorded as a Nova session (`nova replay`, `nova
context`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, NotRequired

from nova.integrations._optional import require

require("langchain.agents", extra="langchain", adapter="nova.integrations.langchain")

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse  # noqa: E402
from langchain_core.language_models import BaseChatModel  # noqa: E402
from langchain_core.messages import (  # noqa: E402
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    ToolMessage,
)
from langchain_core.runnables import Runnable  # noqa: E402
from langchain_core.tools import BaseTool, StructuredTool  # noqa: E402
from langchain_core.utils.function_calling import convert_to_openai_tool  # noqa: E402
from langgraph.runtime import Runtime  # noqa: E402

from nova.context.state import TaskState  # noqa: E402
from nova.integrations._adapter import OpenableAdapter  # noqa: E402
from nova.integrations._engine import (  # noqa: E402
    READ_BACK_DESCRIPTION,
    READ_BACK_TOOL,
    CallbackProvider,
    ContextEngine,
)
from nova.integrations._mirror import Mirror  # noqa: E402
from nova.messages import Message, Part, TextPart, ToolResultPart, ToolUsePart  # noqa: E402
from nova.model import ModelRequest as NovaRequest  # noqa: E402
from nova.model import ModelResponse as NovaResponse  # noqa: E402
from nova.model import ToolSpec, Usage  # noqa: E402

__all__ = ["FRAMEWORK", "STATE_KEY", "NovaMiddleware", "NovaState", "pairing_violations"]

FRAMEWORK = "langchain"
STATE_KEY = "nova_task_state"


class NovaState(AgentState[Any]):
    """The agent state with Nova's task state: JSON, so any checkpointer keeps it with the thread."""

    nova_task_state: NotRequired[dict[str, Any]]


class NovaMiddleware(OpenableAdapter[BaseChatModel], AgentMiddleware[NovaState, Any, Any]):
    """Nova's context engine as a LangChain agent middleware (see the module docstring)."""

    state_schema = NovaState
    framework = FRAMEWORK

    def __init__(self, engine: ContextEngine, *, summary_model: BaseChatModel | None = None,
                 provider: CallbackProvider | None = None) -> None:
        """Use `NovaMiddleware.open`. `summary_model` writes compaction summaries instead of the agent's model."""
        super().__init__(engine, summary_model=summary_model, provider=provider)
        self._mirror: Mirror[AnyMessage] = Mirror(engine, _Codec())
        self.tools = [_read_back_tool(engine)]
        self._specs: dict[int, tuple[BaseTool | dict[str, Any], ToolSpec]] = {}
        """Each tool's schema as Nova measures it, converted once (the tool is kept, so its id stays its own)."""

    def command(self, line: str) -> str:
        """A task-state command (`/goal …`, `/constraint …`, `/approve …`): pinned from the next call on,
        and saved into the graph state (`nova_task_state`) by the next `before_model`."""
        return self.engine.command(line)

    # -- the task state in the graph state ---------------------------------------------------------
    def before_model(self, state: NovaState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        return self._sync_state(state)

    async def abefore_model(self, state: NovaState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        return self._sync_state(state)

    def _sync_state(self, state: Mapping[str, Any]) -> dict[str, Any] | None:
        saved = state.get(STATE_KEY)
        current = self.engine.task_state
        if isinstance(saved, Mapping) and current.empty:
            restored = TaskState.from_dict(saved)
            if not restored.empty:
                # A resumed thread: its checkpointed task state is pinned again.
                self.engine.restore_task_state(restored)
                return None
        if current.empty and not isinstance(saved, Mapping):
            return None
        data = current.to_dict()
        return None if saved == data else {STATE_KEY: data}

    def after_agent(self, state: NovaState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        # The final answer is never followed by another call: it is recorded here.
        self._mirror.follow(list(state["messages"]))
        self.engine.flush()
        return None

    async def aafter_agent(self, state: NovaState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        return self.after_agent(state, runtime)

    # -- the model call ---------------------------------------------------------------------------
    def wrap_model_call(self, request: ModelRequest[Any],
                        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]]) -> ModelResponse[Any]:
        def summarize(summary: NovaRequest) -> NovaResponse:
            answer = self._summary_runnable(request).invoke(self._summary_messages(request, summary))
            return _nova_response(answer)

        view = self._prepare(request, summarize)
        return handler(request.override(messages=view))

    async def awrap_model_call(self, request: ModelRequest[Any],
                               handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]]
                               ) -> ModelResponse[Any]:
        loop = asyncio.get_running_loop()

        def summarize(summary: NovaRequest) -> NovaResponse:
            model = self._summary_runnable(request)
            future = asyncio.run_coroutine_threadsafe(model.ainvoke(self._summary_messages(request, summary)), loop)
            return _nova_response(future.result())

        system, tools = self._prompt(request)
        self._mirror.follow(list(request.messages))
        if self._provider is not None and self.engine.may_summarize(system=system, tools=tools):
            view = await asyncio.to_thread(self._view, system, tools, summarize)
        else:
            view = self._view(system, tools, None)
        return await handler(request.override(messages=view))

    def _summary_runnable(self, request: ModelRequest[Any]) -> Runnable[Any, BaseMessage]:
        """The model that writes a summary, with the agent's tools bound as for its own calls: the request
        then starts with the prefix the provider cached, and a provider that wants tool definitions
        beside tool calls in the history gets them. Made only when a summary is asked for: binding
        converts every tool schema, which on each call is work a call that needs no summary should not do."""
        model = self.summary_model or request.model
        if not request.tools:
            return model
        try:
            return model.bind_tools(request.tools)
        except NotImplementedError:
            return model

    def _summary_messages(self, request: ModelRequest[Any], summary: NovaRequest) -> list[BaseMessage]:
        head: list[BaseMessage] = [request.system_message] if request.system_message is not None else []
        return [*head, *self._mirror.render(summary.messages)]

    def _prepare(self, request: ModelRequest[Any], summarize: Callable[[NovaRequest], NovaResponse]
                 ) -> list[AnyMessage]:
        system, tools = self._prompt(request)
        self._mirror.follow(list(request.messages))
        return self._view(system, tools, summarize)

    def _prompt(self, request: ModelRequest[Any]) -> tuple[str, list[ToolSpec]]:
        specs = []
        for tool in request.tools:
            known = self._specs.get(id(tool))
            if known is None or known[0] is not tool:
                known = self._specs[id(tool)] = (tool, _tool_spec(tool))
            specs.append(known[1])
        return request.system_prompt or "", specs

    def _view(self, system: str, tools: list[ToolSpec], summarize: Callable[[NovaRequest], NovaResponse] | None
              ) -> list[AnyMessage]:
        return self._mirror.render(self._bound_view(system, tools, summarize).messages)


def _read_back_tool(engine: ContextEngine) -> BaseTool:
    def read_saved_output(path: str, offset: int = 1, limit: int = 2000) -> str:
        return engine.read_saved_output(path, offset, limit)

    return StructuredTool.from_function(read_saved_output, name=READ_BACK_TOOL, description=READ_BACK_DESCRIPTION)


def _tool_spec(tool: BaseTool | dict[str, Any]) -> ToolSpec:
    described = convert_to_openai_tool(tool)
    function = described.get("function", described)
    return ToolSpec(name=str(function.get("name", "")), description=str(function.get("description", "")),
                    input_schema=dict(function.get("parameters") or {}))


def _nova_response(answer: BaseMessage) -> NovaResponse:
    return NovaResponse(message=Message.assistant(answer.text), usage=_usage(answer) or Usage())


def _usage(message: BaseMessage) -> Usage | None:
    """LangChain's `input_tokens` is every input token, cached ones included; Nova's is the uncached part."""
    metadata = getattr(message, "usage_metadata", None)
    if not metadata:
        return None
    details = metadata.get("input_token_details") or {}
    read = int(details.get("cache_read", 0) or 0)
    written = int(details.get("cache_creation", 0) or 0)
    return Usage(input_tokens=max(0, int(metadata.get("input_tokens", 0)) - read - written),
                 output_tokens=int(metadata.get("output_tokens", 0)), cache_read_tokens=read,
                 cache_write_tokens=written)


# -- the codec --------------------------------------------------------------------------------------------
class _Codec:
    def same(self, a: AnyMessage, b: AnyMessage) -> bool:
        if a.id is not None and a.id == b.id and type(a) is type(b):
            return bool(a.content == b.content)
        return bool(a == b)

    def to_nova(self, items: Sequence[AnyMessage]) -> list[tuple[Message, tuple[AnyMessage, ...]]]:
        groups: list[list[AnyMessage]] = []
        for item in items:
            if groups and isinstance(item, ToolMessage) and isinstance(groups[-1][0], ToolMessage):
                groups[-1].append(item)
            else:
                groups.append([item])
        return [(_to_nova(group), tuple(group)) for group in groups]

    def insert(self, message: Message) -> list[AnyMessage]:
        return [HumanMessage(content=message.text)]

    def rewrite(self, items: tuple[AnyMessage, ...], message: Message) -> list[AnyMessage]:
        results = {r.tool_use_id: r.content for r in message.tool_results()}
        out: list[AnyMessage] = []
        for item in items:
            if isinstance(item, ToolMessage) and item.tool_call_id in results:
                out.append(item.model_copy(update={"content": results[item.tool_call_id]}))
            elif not isinstance(item, ToolMessage) and _text(item) != _own_text(message):
                out.append(item.model_copy(update={"content": _own_text(message)}))
            else:
                out.append(item)
        return out


def _own_text(message: Message) -> str:
    return "\n\n".join(p.text for p in message.parts if isinstance(p, TextPart))


def _text(message: BaseMessage) -> str:
    return message.text


def _to_nova(group: Sequence[AnyMessage]) -> Message:
    first = group[0]
    if isinstance(first, ToolMessage):
        results: list[Part] = [ToolResultPart(m.tool_call_id, _text(m) or _content_text(m.content),
                                              is_error=getattr(m, "status", "success") == "error")
                               for m in group if isinstance(m, ToolMessage)]
        return Message(role="user", parts=tuple(results))
    if isinstance(first, AIMessage):
        parts: list[Part] = []
        if _text(first):
            parts.append(TextPart(_text(first)))
        parts.extend(ToolUsePart(str(c.get("id") or ""), c["name"], dict(c.get("args") or {})) for c in first.tool_calls)
        usage = _usage(first)
        metadata = {"usage": usage.to_dict()} if usage is not None else {}
        return Message(role="assistant", parts=tuple(parts) or (TextPart(""),), metadata=metadata)
    # A person's message (or a system message inside the history): text.
    return Message(role="user", parts=(TextPart(_text(first) or _content_text(first.content)),))


def _content_text(content: Any) -> str:
    return content if isinstance(content, str) else str(content)


# -- checks ------------------------------------------------------------------------------------------------
def pairing_violations(messages: Sequence[BaseMessage]) -> list[str]:
    """In LangChain's own types, what a provider rejects: an `AIMessage` tool call not answered by exactly
    one `ToolMessage` among the messages right after it, or a `ToolMessage` that answers no call of the
    `AIMessage` before it."""
    problems: list[str] = []
    calls: dict[str, str] = {}
    answered: list[str] = []

    def close(index: int) -> None:
        for call_id, name in calls.items():
            count = answered.count(call_id)
            if count != 1:
                problems.append(f"message {index}: call {call_id} ({name}) is answered {count} times")

    for index, message in enumerate(messages):
        if isinstance(message, ToolMessage):
            if message.tool_call_id not in calls:
                problems.append(f"message {index}: a ToolMessage for {message.tool_call_id} answers no call "
                                "of the AIMessage before it")
            answered.append(message.tool_call_id)
            continue
        close(index)
        calls, answered = {}, []
        if isinstance(message, AIMessage):
            calls = {str(c.get("id")): c["name"] for c in message.tool_calls}
    close(len(messages))
    return problems

