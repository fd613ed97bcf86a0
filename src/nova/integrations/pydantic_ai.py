"""Nova inside a pydantic-ai agent: one capability.

    from nova.integrations.pydantic_ai import NovaCapability

    agent = Agent(model, instructions="…", capabilities=[NovaCapability.open(window=200_000)])

`NovaCapability` hooks `prepare_model_request`, which runs before each attempt at a model call with the
model that will serve it (pydantic-ai's place for compaction and context-window fitting). It hands Nova
the run's message history and puts Nova's compiled view in its place, for that attempt only: the run's
own history (`result.all_messages()`) keeps every message whole, as the raw record. In the view:

- tool returns over the entry budget are spilled to the session directory behind a `<persisted-output>`
  placeholder, and the capability registers `read_saved_output` on the agent to read them back;
- old tool output is snipped (layer 1) and, when still over the threshold, older turns are folded into a
  summary written by the run's own model (or `summary_model`, or extractively), checked for continuity;
  the user's words are carried verbatim, every tool call keeps its return;
- cache points: stray `CachePoint`s in old user prompts are dropped and one is placed at the end of the
  last user prompt when Nova's plan says the prefix is worth caching, so a request never carries more
  than the provider's limit; the instructions and tools are cached through the `cache` setting.

Each response's `usage` anchors the ledger. `capability.engine` exposes the manifest of the last call
(`engine.manifest`), the ledger, the counters and the task state, and the run is recorded as a Nova
session (`nova replay`, `nova context`, `nova eval` read it). One capability follows one conversation.
"""

from __future__ import annotations

import asyncio
import dataclasses
import weakref
from collections.abc import Callable, Sequence
from typing import Any, TypeVar, cast

from nova.integrations._optional import require

require("pydantic_ai", extra="pydantic-ai", adapter="nova.integrations.pydantic_ai")

from pydantic_ai import messages as pm  # noqa: E402
from pydantic_ai.capabilities import AbstractCapability  # noqa: E402
from pydantic_ai.direct import model_request  # noqa: E402
from pydantic_ai.models import Model, ModelRequestContext  # noqa: E402
from pydantic_ai.settings import CacheConfig, ModelSettings  # noqa: E402
from pydantic_ai.tools import RunContext, Tool  # noqa: E402
from pydantic_ai.toolsets import FunctionToolset  # noqa: E402
from pydantic_ai.usage import RequestUsage  # noqa: E402

from nova.integrations._adapter import OpenableAdapter  # noqa: E402
from nova.integrations._engine import (  # noqa: E402
    READ_BACK_DESCRIPTION,
    READ_BACK_TOOL,
    CallbackProvider,
    ContextEngine,
    to_json_text,
)
from nova.integrations._mirror import Mirror  # noqa: E402
from nova.messages import ImagePart, Message, Part, TextPart, ThinkingPart, ToolResultPart, ToolUsePart  # noqa: E402
from nova.model import ModelRequest as NovaRequest  # noqa: E402
from nova.model import ModelResponse as NovaResponse  # noqa: E402
from nova.model import ToolSpec, Usage  # noqa: E402

__all__ = ["FRAMEWORK", "NovaCapability", "pairing_violations"]

P = TypeVar("P", pm.ModelRequestPart, pm.ModelResponsePart)

FRAMEWORK = "pydantic-ai"


class NovaCapability(OpenableAdapter[Model], AbstractCapability[Any]):
    """Nova's context engine as a pydantic-ai capability (see the module docstring)."""

    framework = FRAMEWORK

    def __init__(self, engine: ContextEngine, *, summary_model: Model | None = None,
                 provider: CallbackProvider | None = None) -> None:
        """Use `NovaCapability.open`; `engine` is one conversation's engine. `summary_model` writes the
        compaction summaries instead of the run's model."""
        self.id = "nova-context"
        self.description = "Nova's context engine: spill with read-back, snip, compaction, cache points"
        self.defer_loading = False
        super().__init__(engine, summary_model=summary_model, provider=provider)
        self._mirror: Mirror[pm.ModelMessage] = Mirror(engine, _Codec())
        self._clean: weakref.WeakValueDictionary[int, pm.ModelRequest] = weakref.WeakValueDictionary()
        """Requests known to carry no cache point (by id, while they live): each is looked at once."""

    @classmethod
    def get_serialization_name(cls) -> str | None:
        return None  # holds a live engine: not part of an agent spec

    # -- what the agent is given ------------------------------------------------------------------
    def get_toolset(self) -> FunctionToolset[Any]:
        engine = self.engine

        def read_saved_output(path: str, offset: int = 1, limit: int = 2000) -> str:
            return engine.read_saved_output(path, offset, limit)

        return FunctionToolset([Tool(read_saved_output, name=READ_BACK_TOOL, description=READ_BACK_DESCRIPTION,
                                     takes_ctx=False)])

    # -- the hooks ----------------------------------------------------------------------------------
    async def prepare_model_request(self, ctx: RunContext[Any], request_context: ModelRequestContext
                                    ) -> ModelRequestContext:
        params = request_context.model_request_parameters
        history = list(request_context.messages)
        system = _system_text(params, history)
        tools = [ToolSpec(name=t.name, description=t.description or "", input_schema=t.parameters_json_schema)
                 for t in (*params.function_tools, *params.output_tools)]
        loop = asyncio.get_running_loop()
        model = self.summary_model or request_context.model
        settings = request_context.model_settings

        def summarize(request: NovaRequest) -> NovaResponse:
            sent = self._mirror.render(request.messages)
            future = asyncio.run_coroutine_threadsafe(
                model_request(model, sent, model_settings=settings, model_request_parameters=params), loop)
            return _nova_response(future.result())

        self._mirror.follow(history)
        if self._provider is not None and self.engine.may_summarize(system=system, tools=tools):
            view = await asyncio.to_thread(self._view, history, system, tools, summarize)
        else:
            view = self._view(history, system, tools, None)
        request_context.messages = view[0]
        if view[1] and "cache" not in (settings or {}):
            # The instructions and tools are worth caching; the conversation's one point is in the view.
            # A `cache` setting of the caller's own is left as it is.
            request_context.model_settings = cast(ModelSettings, {**(settings or {}),
                                                                  "cache": CacheConfig(messages=False)})
        return request_context

    def _view(self, history: list[pm.ModelMessage], system: str, tools: list[ToolSpec],
              summarize: Callable[[NovaRequest], NovaResponse] | None) -> tuple[list[pm.ModelMessage], bool]:
        view = self._bound_view(system, tools, summarize)
        rendered = _keep_system_parts(self._mirror.render(view.messages), history)
        segments = {b.segment for b in view.cache.breakpoints}
        placed = _place_cache_point(rendered, "messages" in segments, self._clean)
        return placed, bool(segments & {"system", "tools"})

    async def after_run(self, ctx: RunContext[Any], *, result: Any) -> Any:
        # The final answer is never followed by another call: it is recorded here.
        self._mirror.follow(list(result.all_messages()))
        self.engine.flush()
        return result


# -- the codec -------------------------------------------------------------------------------------------
class _Codec:
    def same(self, a: pm.ModelMessage, b: pm.ModelMessage) -> bool:
        return a == b

    def to_nova(self, items: Sequence[pm.ModelMessage]) -> list[tuple[Message, tuple[pm.ModelMessage, ...]]]:
        return [(_to_nova(item), (item,)) for item in items]

    def insert(self, message: Message) -> list[pm.ModelMessage]:
        return [pm.ModelRequest(parts=[pm.UserPromptPart(content=message.text)])]

    def rewrite(self, items: tuple[pm.ModelMessage, ...], message: Message) -> list[pm.ModelMessage]:
        (item,) = items
        results = {r.tool_use_id: r for r in message.tool_results()}
        text_changed = _to_nova(item).text != message.text
        if isinstance(item, pm.ModelRequest):
            parts: list[pm.ModelRequestPart] = []
            for part in item.parts:
                call_id = _call_answered(part)
                if call_id is not None and call_id in results:
                    part = dataclasses.replace(cast(Any, part), content=results[call_id].content)
                parts.append(part)
            if text_changed:
                parts = _text_once(parts, pm.UserPromptPart, _user_text(message))
            return [dataclasses.replace(item, parts=parts)]
        if not text_changed:
            return [item]
        return [dataclasses.replace(item, parts=_text_once(item.parts, pm.TextPart, _user_text(message)))]


def _text_once(parts: Sequence[P], kind: type[pm.UserPromptPart | pm.TextPart], text: str) -> list[P]:
    """`parts` with `text` in the first part of `kind` and the other parts of that kind left out: a
    message's text, rewritten (snipped, cut), is one piece however many it was sent in."""
    out: list[P] = []
    placed = False
    for part in parts:
        if not isinstance(part, kind):
            out.append(part)
        elif not placed:
            out.append(dataclasses.replace(part, content=text))
            placed = True
    return out


def _user_text(message: Message) -> str:
    return "\n\n".join(p.text for p in message.parts if isinstance(p, TextPart))


def _to_nova(item: pm.ModelMessage) -> Message:
    parts: list[Part] = []
    if isinstance(item, pm.ModelRequest):
        for part in item.parts:
            if isinstance(part, pm.UserPromptPart):
                parts.extend(_user_parts(part.content))
            elif isinstance(part, pm.BaseToolReturnPart):
                parts.append(ToolResultPart(part.tool_call_id, part.model_response_str(),
                                            is_error=part.outcome not in ("success",)))
            elif isinstance(part, pm.RetryPromptPart):  # pyright: ignore[reportDeprecated]
                if part.tool_name:
                    parts.append(ToolResultPart(part.tool_call_id, part.model_response(), is_error=True))
                else:
                    parts.append(TextPart(part.model_response()))
            elif isinstance(part, pm.RetryFeedbackPart):
                parts.append(TextPart(part.model_response()))
        return Message(role="user", parts=tuple(parts) or (TextPart(""),),
                       created_at=item.timestamp.timestamp() if item.timestamp else 0.0)
    for answer in item.parts:
        if isinstance(answer, pm.TextPart):
            parts.append(TextPart(answer.content))
        elif isinstance(answer, pm.ThinkingPart):
            parts.append(ThinkingPart(answer.content, signature=answer.signature or "",
                                      provider=answer.provider_name or ""))
        elif isinstance(answer, pm.NativeToolCallPart):
            # Run by the provider inside this response: no result of ours answers it.
            parts.append(TextPart(f"[{answer.tool_name} {to_json_text(answer.args)}]"))
        elif isinstance(answer, pm.ToolCallPart):
            parts.append(ToolUsePart(answer.tool_call_id, answer.tool_name, answer.args_as_dict()))
        elif isinstance(answer, pm.NativeToolReturnPart):
            parts.append(TextPart(f"[{answer.tool_name} returned] {answer.model_response_str()}"))
        elif isinstance(answer, pm.CompactionPart) and answer.content:
            parts.append(TextPart(answer.content))
        elif isinstance(answer, pm.FilePart):
            parts.append(ImagePart(media_type=answer.content.media_type))
    usage = _usage(item.usage)
    metadata: dict[str, Any] = {"usage": usage.to_dict(), "model": item.model_name or ""} \
        if usage.context_tokens or usage.output_tokens else {}
    return Message(role="assistant", parts=tuple(parts) or (TextPart(""),), metadata=metadata,
                   created_at=item.timestamp.timestamp())


def _user_parts(content: str | Sequence[pm.UserContent]) -> list[Part]:
    if isinstance(content, str):
        return [TextPart(content)]
    out: list[Part] = []
    for item in content:
        if isinstance(item, str):
            out.append(TextPart(item))
        elif isinstance(item, pm.CachePoint):
            continue
        elif isinstance(item, pm.ImageUrl):
            out.append(ImagePart(media_type=item.media_type, url=item.url))
        elif isinstance(item, pm.BinaryContent) and item.is_image:
            out.append(ImagePart(media_type=item.media_type))
        elif isinstance(item, pm.TextContent):
            out.append(TextPart(item.content))
        else:
            out.append(TextPart(f"[{getattr(item, 'kind', type(item).__name__)}]"))
    return out


def _usage(usage: RequestUsage) -> Usage:
    """pydantic-ai counts cached tokens inside `input_tokens`; Nova's `input_tokens` is the uncached part."""
    cached = usage.cache_read_tokens + usage.cache_write_tokens
    return Usage(input_tokens=max(0, usage.input_tokens - cached), output_tokens=usage.output_tokens,
                 cache_read_tokens=usage.cache_read_tokens, cache_write_tokens=usage.cache_write_tokens)


def _nova_response(response: pm.ModelResponse) -> NovaResponse:
    text = "".join(p.content for p in response.parts if isinstance(p, pm.TextPart))
    return NovaResponse(message=Message.assistant(text), usage=_usage(response.usage),
                        model=response.model_name or "")


def _system_text(params: Any, history: Sequence[pm.ModelMessage]) -> str:
    """The instructions as sent, then the system prompt parts of the history's first request."""
    pieces = [p.content for p in getattr(params, "instruction_parts", None) or () if p.content]
    first = next((m for m in history if isinstance(m, pm.ModelRequest)), None)
    if first is not None:
        pieces.extend(p.content for p in first.parts if isinstance(p, pm.SystemPromptPart))
    return "\n\n".join(pieces)


def _keep_system_parts(view: list[pm.ModelMessage], history: Sequence[pm.ModelMessage]) -> list[pm.ModelMessage]:
    """A system prompt lives in the first request of the history: when a compaction folded that request,
    its system prompt parts go back in front of the view."""
    first = next((m for m in history if isinstance(m, pm.ModelRequest)), None)
    system = [p for p in first.parts if isinstance(p, pm.SystemPromptPart)] if first is not None else []
    if not system or (view and view[0] is first):
        return view
    present = any(isinstance(p, pm.SystemPromptPart) for m in view[:1] if isinstance(m, pm.ModelRequest)
                  for p in m.parts)
    return view if present else [pm.ModelRequest(parts=system), *view]


def _place_cache_point(view: list[pm.ModelMessage], wanted: bool,
                       clean: weakref.WeakValueDictionary[int, pm.ModelRequest]) -> list[pm.ModelMessage]:
    """Drop the cache points of older user prompts (each turn's caller may add one, and the provider takes
    four at most) and, when `wanted`, end the last user prompt with one. `clean` remembers the requests
    already found without one."""
    out = list(view)
    last = -1
    for index, message in enumerate(out):
        if not isinstance(message, pm.ModelRequest):
            continue
        if clean.get(id(message)) is message:
            last = index if message.parts and _has_user_prompt(message) else last
            continue
        if _has_user_prompt(message):
            last = index
        if any(isinstance(p, pm.UserPromptPart) and not isinstance(p.content, str)
               and any(isinstance(c, pm.CachePoint) for c in p.content) for p in message.parts):
            out[index] = _with_cache_point(message, False)
        else:
            clean[id(message)] = message
    if wanted and last >= 0:
        request = out[last]
        assert isinstance(request, pm.ModelRequest)
        out[last] = _with_cache_point(request, True)
    return out


def _has_user_prompt(message: pm.ModelRequest) -> bool:
    return any(isinstance(p, pm.UserPromptPart) for p in message.parts)


def _with_cache_point(message: pm.ModelRequest, add: bool) -> pm.ModelRequest:
    parts: list[pm.ModelRequestPart] = list(message.parts)
    user_at = [i for i, p in enumerate(parts) if isinstance(p, pm.UserPromptPart)]
    for i in user_at:
        part = parts[i]
        assert isinstance(part, pm.UserPromptPart)
        content: list[pm.UserContent] = [part.content] if isinstance(part.content, str) else \
            [c for c in part.content if not isinstance(c, pm.CachePoint)]
        if add and i == user_at[-1]:
            content.append(pm.CachePoint())
        parts[i] = dataclasses.replace(part, content=content)
    return dataclasses.replace(message, parts=parts)


# -- checks ------------------------------------------------------------------------------------------------
def pairing_violations(messages: Sequence[pm.ModelMessage]) -> list[str]:
    """In pydantic-ai's own types, what a provider rejects with HTTP 400: a response's tool call not
    answered by exactly one return (or tool retry prompt) in the request right after it, or a return that
    answers no call of the response right before it."""
    problems: list[str] = []
    calls: dict[str, str] = {}
    for index, message in enumerate(messages):
        if isinstance(message, pm.ModelResponse):
            if calls:
                problems.extend(f"message {index}: call {c} ({n}) is not answered" for c, n in calls.items())
            calls = {p.tool_call_id: p.tool_name for p in message.parts
                     if isinstance(p, pm.ToolCallPart) and not isinstance(p, pm.NativeToolCallPart)}
            continue
        answered = [c for c in map(_call_answered, message.parts) if c is not None]
        for call_id in answered:
            if call_id not in calls:
                problems.append(f"message {index}: a return for {call_id} answers no call of the response before it")
        for call_id, name in calls.items():
            count = answered.count(call_id)
            if count != 1:
                problems.append(f"message {index}: call {call_id} ({name}) is answered {count} times")
        calls = {}
    problems.extend(f"end: call {c} ({n}) is not answered" for c, n in calls.items())
    return problems


def _call_answered(part: pm.ModelRequestPart) -> str | None:
    """The id of the tool call `part` answers (a return, or a retry prompt for a tool), else None."""
    if isinstance(part, pm.RetryPromptPart):  # pyright: ignore[reportDeprecated]
        return part.tool_call_id if part.tool_name is not None else None
    return part.tool_call_id if isinstance(part, pm.BaseToolReturnPart) else None
