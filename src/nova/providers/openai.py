"""OpenAI adapters over the `openai` SDK (an optional extra): Chat Completions, and the Responses API.

    OpenAIChatProvider(api_key="sk-...")                                   # api.openai.com
    OpenAIChatProvider(api_key="not-needed", base_url="http://localhost:11434/v1", compatible=True)
    OpenAIResponsesProvider(api_key="sk-...")

`compatible=True` is for OpenAI-compatible servers (Ollama, vLLM, llama.cpp): they may leave out usage,
call ids or `finish_reason`, and may stream tool arguments that are not valid JSON; none of that raises.
A call whose arguments do not parse becomes `ToolUsePart(input={"__invalid_arguments__": raw})`, so the
agent loop can answer it with an error result.

Usage is normalized per CCH-4: OpenAI's `prompt_tokens` include the cached prefix, so the cached
tokens are subtracted from input and reported as cache reads.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from nova.errors import ProviderUnavailable
from nova.messages import Message, new_id
from nova.model import ModelRequest, ModelResponse, ResponseDone, StopReason, StreamEvent, Usage
from nova.providers._assembly import StreamAssembler
from nova.providers._sdk_provider import SdkProvider, as_dict
from nova.providers.errors import classify_stream_error
from nova.providers.formats.openai_chat import request_to_chat, stop_reason_from_chat
from nova.providers.formats.openai_responses import THINKING_PROVIDER as RESPONSES_THINKING
from nova.providers.formats.openai_responses import reasoning_signature, request_to_responses

__all__ = [
    "OpenAIChatProvider",
    "OpenAIResponsesProvider",
    "usage_from_chat",
    "usage_from_responses",
]


def usage_from_chat(usage: Mapping[str, Any]) -> Usage:
    return Usage.from_dict(usage)


def usage_from_responses(usage: Mapping[str, Any]) -> Usage:
    # Responses objects are recognized by their `*_details`; one without them has nothing cached.
    return Usage.from_dict(usage)


_INCOMPLETE_REASONS: dict[str, StopReason] = {"max_output_tokens": "max_tokens", "content_filter": "refusal"}


class _OpenAIBase(SdkProvider):
    name = "openai"

    sdk = "openai"
    client_class = "OpenAI"
    error_class = "OpenAIError"

    def _message(self, assembler: StreamAssembler, response_id: str, usage_reported: bool) -> Message:
        metadata: dict[str, Any] = {"provider": self.name}
        if response_id:
            metadata["response_id"] = response_id
        if not usage_reported:
            # The token ledger must not take zeros for a real figure (TOK-1): say the usage is missing.
            metadata["usage_missing"] = True
        return Message(role="assistant", parts=tuple(assembler.parts()), id=new_id(), metadata=metadata)


class OpenAIChatProvider(_OpenAIBase):
    """Chat Completions, streaming with `stream_options.include_usage` (usage in the last chunk)."""

    def __init__(self, *, compatible: bool = False, name: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.compatible = compatible
        self.name = name or ("compatible" if compatible else "openai")

    def _stream(self, request: ModelRequest) -> Iterator[StreamEvent]:
        params = request_to_chat(request, compatible=self.compatible)
        yield from self._read(self._client.chat.completions.create(**params), request)

    def _read(self, chunks: Iterable[Any], request: ModelRequest) -> Iterator[StreamEvent]:
        assembler = StreamAssembler()
        usage: Mapping[str, Any] | None = None
        finish: str | None = None
        response_id, model = "", request.model
        for raw in chunks:
            chunk = as_dict(raw)
            if chunk.get("error"):
                raise classify_stream_error(self.name, chunk)
            response_id = response_id or str(chunk.get("id") or "")
            model = str(chunk.get("model") or model)
            if isinstance(chunk.get("usage"), Mapping):
                usage = chunk["usage"]
            for choice in chunk.get("choices") or ():
                yield from self._choice(assembler, choice)
                finish = choice.get("finish_reason") or finish
        stop: StopReason = stop_reason_from_chat(finish)
        if assembler.tool_count and stop == "end_turn":
            stop = "tool_use"  # some local servers say "stop" after a tool call
        message = self._message(assembler, response_id, usage is not None)
        done = ModelResponse(
            message=message, usage=usage_from_chat(usage or {}), stop_reason=stop, model=model
        )
        yield ResponseDone(done)

    @staticmethod
    def _choice(assembler: StreamAssembler, choice: Mapping[str, Any]) -> Iterator[StreamEvent]:
        delta = choice.get("delta") or {}
        # Compatible servers stream reasoning as `reasoning_content` (vLLM, DeepSeek) or `reasoning` (Ollama).
        reasoning = delta.get("reasoning_content") or delta.get("reasoning")
        if isinstance(reasoning, str) and (event := assembler.thinking("reasoning", reasoning)):
            yield event
        content = delta.get("content")
        if isinstance(content, str) and (text_event := assembler.text("text", content)):
            yield text_event
        for position, call in enumerate(delta.get("tool_calls") or ()):
            if not isinstance(call, Mapping):
                continue
            function = call.get("function") or {}
            index = call.get("index")
            key = ("tool", index if isinstance(index, int) else position)
            yield assembler.tool(
                key,
                call_id=str(call.get("id") or ""),
                name=str(function.get("name") or ""),
                arguments=function.get("arguments") or "",
            )


class OpenAIResponsesProvider(_OpenAIBase):
    """The Responses API, streaming; stateless (`store: False`), reasoning carried as encrypted items."""

    name = "openai-responses"

    def __init__(self, *, name: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.name = name or "openai-responses"

    def _stream(self, request: ModelRequest) -> Iterator[StreamEvent]:
        params = request_to_responses(request)
        yield from self._read(self._client.responses.create(**params), request)

    def _read(self, events: Iterable[Any], request: ModelRequest) -> Iterator[StreamEvent]:
        assembler = StreamAssembler(thinking_provider=RESPONSES_THINKING)
        final: Mapping[str, Any] | None = None
        response_id, model = "", request.model
        for raw in events:
            event = as_dict(raw)
            kind = event.get("type")
            index = event.get("output_index", 0)
            if kind in ("error", "response.failed"):
                raise classify_stream_error(self.name, event)
            if kind in ("response.created", "response.in_progress"):
                response = event.get("response") or {}
                response_id = str(response.get("id") or response_id)
                model = str(response.get("model") or model)
            elif kind == "response.output_item.added":
                if opened := self._item_added(assembler, index, event.get("item") or {}):
                    yield opened
            elif kind in ("response.output_text.delta", "response.refusal.delta"):
                if text_event := assembler.text(index, str(event.get("delta") or "")):
                    yield text_event
            elif kind == "response.function_call_arguments.delta":
                yield assembler.tool(index, arguments=str(event.get("delta") or ""))
            elif kind == "response.function_call_arguments.done":
                assembler.tool_arguments(index, event.get("arguments") or "")
            elif kind == "response.reasoning_summary_part.added" and event.get("summary_index", 0):
                if thinking_event := assembler.thinking(index, "\n\n"):
                    yield thinking_event
            elif kind == "response.reasoning_summary_text.delta":
                if thinking_event := assembler.thinking(index, str(event.get("delta") or "")):
                    yield thinking_event
            elif kind == "response.output_item.done":
                self._item_done(assembler, index, event.get("item") or {})
            elif kind in ("response.completed", "response.incomplete"):
                final = event.get("response") or {}
        if final is None:
            raise ProviderUnavailable(
                f"{self.name}: the stream ended before the response completed", provider=self.name
            )
        usage = final.get("usage")
        message = self._message(assembler, str(final.get("id") or response_id), isinstance(usage, Mapping))
        response = ModelResponse(
            message=message,
            usage=usage_from_responses(usage if isinstance(usage, Mapping) else {}),
            stop_reason=self._stop_reason(final, assembler),
            model=str(final.get("model") or model),
        )
        yield ResponseDone(response)

    @staticmethod
    def _item_added(assembler: StreamAssembler, index: Any, item: Mapping[str, Any]) -> StreamEvent | None:
        """Open a slot for the item, so parts keep the order of the output items."""
        kind = item.get("type")
        if kind == "function_call":
            return assembler.tool(
                index, call_id=str(item.get("call_id") or ""), name=str(item.get("name") or "")
            )
        if kind == "reasoning":
            assembler.thinking(index, "")
        elif kind == "message":
            assembler.text(index, "")
        return None

    @staticmethod
    def _item_done(assembler: StreamAssembler, index: Any, item: Mapping[str, Any]) -> None:
        kind = item.get("type")
        if kind == "reasoning":
            encrypted = item.get("encrypted_content")
            signature = reasoning_signature(
                str(item.get("id") or ""), encrypted if isinstance(encrypted, str) else None
            )
            assembler.signature(index, signature, replace=True)
        elif kind == "function_call":
            if not assembler.has_tool(index):
                assembler.tool(
                    index, call_id=str(item.get("call_id") or ""), name=str(item.get("name") or "")
                )
            assembler.tool_arguments(index, item.get("arguments") or "")

    @staticmethod
    def _stop_reason(response: Mapping[str, Any], assembler: StreamAssembler) -> StopReason:
        if response.get("status") == "incomplete":
            reason = str((response.get("incomplete_details") or {}).get("reason"))
            return _INCOMPLETE_REASONS.get(reason, "other")
        return "tool_use" if assembler.tool_count else "end_turn"
