"""Nova messages to and from the OpenAI Chat Completions shape (also spoken by Ollama, vLLM, llama.cpp).

    nova                      Chat Completions
    system role / request     {"role": "system"}
    user TextPart/SummaryPart {"type": "text"} content part (a lone text is sent as a plain string)
    user ImagePart            {"type": "image_url", "image_url": {"url": <url or data URL>}}
    ToolResultPart            its own {"role": "tool", "tool_call_id", "content"} message, split out of
                              the nova user message and placed first, right after the assistant's calls
    assistant text            "content": one string (parts joined: every server accepts a string)
    ToolUsePart               "tool_calls": [{"id", "type": "function", "function": {"name", "arguments"}}]
                              with `arguments` a JSON string (sorted keys, so the bytes are stable)
    ThinkingPart              dropped on the way out: the API has no field for it, and as text the model
                              would read earlier private reasoning as something it had said. Read back
                              (unsigned, `provider == ""`) from the `reasoning_content` / `reasoning`
                              field some compatible servers send

Reading back, tool messages and the user message right after them become one nova user message, the
shape Nova keeps (tool results live in user messages). `is_error` has no Chat Completions field and
reads back as False.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from nova.messages import (
    ImagePart,
    Message,
    Part,
    SummaryPart,
    TextPart,
    ThinkingPart,
    ToolResultPart,
    ToolUsePart,
)
from nova.model import ModelRequest, StopReason, ToolSpec
from nova.providers.formats._common import (
    dump_arguments,
    image_from_url,
    image_to_url,
    parse_arguments,
    sorted_keys,
)

__all__ = [
    "messages_from_chat",
    "messages_to_chat",
    "request_to_chat",
    "stop_reason_from_chat",
    "tools_to_chat",
]

_STOP_REASONS: dict[str, StopReason] = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
}


def stop_reason_from_chat(reason: str | None) -> StopReason:
    return _STOP_REASONS.get(reason or "stop", "other")


# -- nova -> Chat Completions ------------------------------------------------------------------------
def _user_content(parts: Sequence[Part]) -> str | list[dict[str, Any]]:
    if len(parts) == 1 and isinstance(parts[0], TextPart | SummaryPart):
        return parts[0].text
    content: list[dict[str, Any]] = []
    for part in parts:
        if isinstance(part, TextPart | SummaryPart):
            content.append({"type": "text", "text": part.text})
        elif isinstance(part, ImagePart):
            content.append({"type": "image_url", "image_url": {"url": image_to_url(part)}})
    return content


def _user_messages(message: Message) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        {"role": "tool", "tool_call_id": r.tool_use_id, "content": r.content} for r in message.tool_results()
    ]
    rest = [p for p in message.parts if isinstance(p, TextPart | SummaryPart | ImagePart)]
    if rest:
        out.append({"role": "user", "content": _user_content(rest)})
    return out


def _assistant_message(message: Message) -> dict[str, Any] | None:
    text = "".join(p.text for p in message.parts if isinstance(p, TextPart | SummaryPart))
    calls = [
        {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": dump_arguments(c.input)}}
        for c in message.tool_uses()
    ]
    if not text and not calls:
        return None  # an assistant turn that held only thinking: nothing this API can carry
    item: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        item["tool_calls"] = calls
    return item


def messages_to_chat(messages: Sequence[Message], *, system: str = "") -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    for message in messages:
        if message.role == "system":
            out.append({"role": "system", "content": message.text})
        elif message.role == "user":
            out.extend(_user_messages(message))
        else:
            item = _assistant_message(message)
            if item is not None:
                out.append(item)
    return out


def tools_to_chat(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": sorted_keys(t.input_schema)},
        }
        for t in tools
    ]


def request_to_chat(request: ModelRequest, *, compatible: bool = False) -> dict[str, Any]:
    """Keyword arguments for `client.chat.completions.create`, streaming with usage in the last chunk.

    OpenAI itself wants `max_completion_tokens` and understands `prompt_cache_key`; compatible servers
    get the older `max_tokens` and no cache key, which some of them would reject as unknown."""
    params: dict[str, Any] = {
        "model": request.model,
        "messages": messages_to_chat(request.messages, system=request.system),
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    params["max_tokens" if compatible else "max_completion_tokens"] = request.max_output_tokens
    tools = tools_to_chat(request.tools)
    if tools:
        params["tools"] = tools
    if request.temperature is not None:
        params["temperature"] = request.temperature
    if request.cache.cache_key and not compatible:
        params["prompt_cache_key"] = request.cache.cache_key
    if "reasoning_effort" in request.metadata:
        params["reasoning_effort"] = request.metadata["reasoning_effort"]
    return params


# -- Chat Completions -> nova ------------------------------------------------------------------------
def _content_parts(content: Any) -> list[Part]:
    if content is None:
        return []
    if isinstance(content, str):
        return [TextPart(content)] if content else []
    parts: list[Part] = []
    for item in content:
        if not isinstance(item, Mapping):
            continue
        kind = item.get("type")
        if kind == "text":
            parts.append(TextPart(str(item.get("text", ""))))
        elif kind == "image_url":
            image = item.get("image_url")
            url = image.get("url", "") if isinstance(image, Mapping) else str(image or "")
            parts.append(image_from_url(str(url)))
    return parts


def tool_use_from_chat(call: Mapping[str, Any]) -> ToolUsePart:
    function = call.get("function") or {}
    return ToolUsePart(
        id=str(call.get("id") or ""),
        name=str(function.get("name") or ""),
        input=parse_arguments(function.get("arguments")),
    )


def _assistant_from_chat(item: Mapping[str, Any]) -> Message:
    parts: list[Part] = []
    reasoning = item.get("reasoning_content") or item.get("reasoning")
    if isinstance(reasoning, str) and reasoning:
        parts.append(ThinkingPart(reasoning))
    parts.extend(_content_parts(item.get("content")))
    parts.extend(tool_use_from_chat(c) for c in item.get("tool_calls") or () if isinstance(c, Mapping))
    return Message(role="assistant", parts=tuple(parts))


def messages_from_chat(items: Iterable[Mapping[str, Any]]) -> list[Message]:
    """Chat messages back to nova messages (a leading system message becomes a system-role message)."""
    out: list[Message] = []
    open_tool_group = False  # the last nova message was built from `tool` messages and may grow
    for item in items:
        role = item.get("role")
        if role == "tool":
            result = ToolResultPart(
                tool_use_id=str(item.get("tool_call_id", "")), content=_text(item.get("content"))
            )
            if open_tool_group:
                out[-1] = out[-1].with_parts((*out[-1].parts, result))
            else:
                out.append(Message(role="user", parts=(result,)))
                open_tool_group = True
            continue
        if role == "user" and open_tool_group:
            out[-1] = out[-1].with_parts((*out[-1].parts, *_content_parts(item.get("content"))))
        elif role == "user":
            out.append(Message(role="user", parts=tuple(_content_parts(item.get("content")))))
        elif role in ("system", "developer"):
            out.append(Message(role="system", parts=(TextPart(_text(item.get("content"))),)))
        elif role == "assistant":
            out.append(_assistant_from_chat(item))
        open_tool_group = False
    return out


def _text(content: Any) -> str:
    return "".join(p.text for p in _content_parts(content) if isinstance(p, TextPart))
