"""Nova messages to and from OpenAI Responses API input items.

    nova                      Responses input item
    system role               {"type": "message", "role": "developer"} (request.system -> `instructions`)
    user text/summary/image   {"type": "message", "role": "user", "content": [input_text | input_image]}
    ToolResultPart            {"type": "function_call_output", "call_id", "output"}, placed first
    assistant text            {"type": "message", "role": "assistant", "content": <one string>}
    ToolUsePart               {"type": "function_call", "call_id", "name", "arguments": <JSON string>}
    ThinkingPart              {"type": "reasoning", "id", "summary": [summary_text], "encrypted_content"}

A reasoning item can only go back with its item id and its encrypted content, so the ThinkingPart of a
Responses reasoning item carries both in `signature` as a small JSON object (`reasoning_signature`) and
has `provider == "openai-responses"`. A thinking part from another provider is left out, not sent as
text: its signature would mean nothing to OpenAI, and as assistant text the model would read earlier
private reasoning as something it had said. A resumed session has no thinking at all (SES-3), so
leaving it out keeps a live request and a resumed one alike.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from nova.messages import (
    ImagePart,
    Message,
    Part,
    Role,
    SummaryPart,
    TextPart,
    ThinkingPart,
    ToolResultPart,
    ToolUsePart,
)
from nova.model import ModelRequest, ToolSpec
from nova.providers.formats._common import (
    dump_arguments,
    image_from_url,
    image_to_url,
    parse_arguments,
    sorted_keys,
)

__all__ = [
    "THINKING_PROVIDER",
    "input_from_responses",
    "input_to_responses",
    "is_reasoning_model",
    "reasoning_signature",
    "request_to_responses",
    "thinking_from_reasoning_item",
    "tools_to_responses",
]

THINKING_PROVIDER = "openai-responses"
"""`ThinkingPart.provider` of the reasoning items this API encrypts."""

_REASONING_PREFIXES = ("o1", "o3", "o4", "gpt-5")


def is_reasoning_model(model: str) -> bool:
    name = model.rsplit("/", 1)[-1].lower()
    return name.startswith(_REASONING_PREFIXES)


def reasoning_signature(item_id: str, encrypted_content: str | None) -> str:
    return json.dumps({"encrypted_content": encrypted_content, "id": item_id}, sort_keys=True)


def _unpack_signature(signature: str) -> tuple[str, str | None] | None:
    try:
        data = json.loads(signature)
    except ValueError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("id"), str):
        return None
    encrypted = data.get("encrypted_content")
    return data["id"], encrypted if isinstance(encrypted, str) else None


# -- nova -> Responses -------------------------------------------------------------------------------
def _user_items(message: Message) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = [
        {"type": "function_call_output", "call_id": r.tool_use_id, "output": r.content}
        for r in message.tool_results()
    ]
    content: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, TextPart | SummaryPart):
            content.append({"type": "input_text", "text": part.text})
        elif isinstance(part, ImagePart):
            content.append({"type": "input_image", "image_url": image_to_url(part), "detail": "auto"})
    if content:
        items.append({"type": "message", "role": "user", "content": content})
    return items


def _reasoning_item(part: ThinkingPart) -> dict[str, Any] | None:
    if part.provider != THINKING_PROVIDER:
        return None
    unpacked = _unpack_signature(part.signature)
    if unpacked is None:
        return None
    item_id, encrypted = unpacked
    summary = [{"type": "summary_text", "text": part.thinking}] if part.thinking else []
    item: dict[str, Any] = {"type": "reasoning", "id": item_id, "summary": summary}
    if encrypted is not None:
        item["encrypted_content"] = encrypted
    return item


def _assistant_items(message: Message) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    pending_text: list[str] = []

    def flush() -> None:
        if pending_text:
            items.append({"type": "message", "role": "assistant", "content": "".join(pending_text)})
            pending_text.clear()

    for part in message.parts:
        if isinstance(part, TextPart | SummaryPart):
            pending_text.append(part.text)
            continue
        flush()
        if isinstance(part, ThinkingPart):
            reasoning = _reasoning_item(part)
            if reasoning is not None:
                items.append(reasoning)
        elif isinstance(part, ToolUsePart):
            items.append(
                {
                    "type": "function_call",
                    "call_id": part.id,
                    "name": part.name,
                    "arguments": dump_arguments(part.input),
                }
            )
    flush()
    return items


def input_to_responses(messages: Sequence[Message]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "system":
            items.append({"type": "message", "role": "developer", "content": message.text})
        elif message.role == "user":
            items.extend(_user_items(message))
        else:
            items.extend(_assistant_items(message))
    return items


def tools_to_responses(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    # strict=False: Responses defaults to strict schemas, which Nova's tool schemas do not promise to be.
    return [
        {
            "type": "function",
            "name": t.name,
            "description": t.description,
            "parameters": sorted_keys(t.input_schema),
            "strict": False,
        }
        for t in tools
    ]


def request_to_responses(request: ModelRequest) -> dict[str, Any]:
    """Keyword arguments for `client.responses.create`, streaming.

    Nova keeps the history itself, so nothing is stored server-side (`store: False`); reasoning models
    are asked for their encrypted reasoning so it can be sent back within a tool loop.
    `request.metadata["reasoning"]` is passed through as the API's `reasoning` parameter."""
    params: dict[str, Any] = {
        "model": request.model,
        "input": input_to_responses(request.messages),
        "max_output_tokens": request.max_output_tokens,
        "stream": True,
        "store": False,
    }
    if request.system:
        params["instructions"] = request.system
    tools = tools_to_responses(request.tools)
    if tools:
        params["tools"] = tools
    if request.temperature is not None:
        params["temperature"] = request.temperature
    if request.cache.cache_key:
        params["prompt_cache_key"] = request.cache.cache_key
    if "reasoning" in request.metadata:
        params["reasoning"] = request.metadata["reasoning"]
    if "reasoning" in request.metadata or is_reasoning_model(request.model):
        params["include"] = ["reasoning.encrypted_content"]
    return params


# -- Responses -> nova -------------------------------------------------------------------------------
def thinking_from_reasoning_item(item: Mapping[str, Any]) -> ThinkingPart:
    summary = item.get("summary") or []
    text = "\n\n".join(str(s.get("text", "")) for s in summary if isinstance(s, Mapping))
    encrypted = item.get("encrypted_content")
    return ThinkingPart(
        text,
        signature=reasoning_signature(
            str(item.get("id", "")), encrypted if isinstance(encrypted, str) else None
        ),
        provider=THINKING_PROVIDER,
    )


def _message_parts(content: Any) -> list[Part]:
    if isinstance(content, str):
        return [TextPart(content)]
    parts: list[Part] = []
    for block in content or ():
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind in ("input_text", "output_text", "text"):
            parts.append(TextPart(str(block.get("text", ""))))
        elif kind == "refusal":
            parts.append(TextPart(str(block.get("refusal", ""))))
        elif kind == "input_image":
            parts.append(image_from_url(str(block.get("image_url", ""))))
    return parts


def input_from_responses(items: Iterable[Mapping[str, Any]]) -> list[Message]:
    """Input (or output) items back to nova messages: consecutive items of one side form one message."""
    out: list[Message] = []

    def add(role: Role, parts: Sequence[Part]) -> None:
        # Responses has no turn boundaries: a run of items from one side is one nova message.
        if out and out[-1].role == role and role != "system":
            out[-1] = out[-1].with_parts((*out[-1].parts, *parts))
        else:
            out.append(Message(role=role, parts=tuple(parts)))

    for item in items:
        kind = item.get("type", "message")
        if kind == "message":
            role = item.get("role")
            parts = _message_parts(item.get("content"))
            if role in ("system", "developer"):
                add("system", [TextPart("".join(p.text for p in parts if isinstance(p, TextPart)))])
            else:
                add("assistant" if role == "assistant" else "user", parts)
        elif kind == "function_call":
            call = ToolUsePart(
                id=str(item.get("call_id") or item.get("id") or ""),
                name=str(item.get("name", "")),
                input=parse_arguments(item.get("arguments")),
            )
            add("assistant", [call])
        elif kind == "function_call_output":
            output = item.get("output", "")
            add(
                "user",
                [ToolResultPart(tool_use_id=str(item.get("call_id", "")), content=_output_text(output))],
            )
        elif kind == "reasoning":
            add("assistant", [thinking_from_reasoning_item(item)])
    return out


def _output_text(output: Any) -> str:
    if isinstance(output, str):
        return output
    return "".join(p.text for p in _message_parts(output) if isinstance(p, TextPart))
