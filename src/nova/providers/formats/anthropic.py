"""Nova messages to and from the Anthropic Messages API shape.

    nova                      Anthropic
    system role / request     top-level `system` blocks (hoisted: Anthropic has no system turn)
    TextPart                  {"type": "text"}
    SummaryPart               {"type": "text"} (the summary's text; it reads back as a TextPart)
    ToolUsePart               {"type": "tool_use", "id", "name", "input"}
    ToolResultPart            {"type": "tool_result", "tool_use_id", "content", "is_error"?}
    ThinkingPart              {"type": "thinking", "thinking", "signature"}
    ThinkingPart(redacted)    {"type": "redacted_thinking", "data": <signature>}
                              (only parts Anthropic signed, `provider == "anthropic"`; others are left out)
    ImagePart                 {"type": "image", "source": base64 | url}

Thinking from another provider (or unsigned reasoning) is left out rather than sent as text: the API
rejects a thinking block whose signature it did not make, and as a text block the model would read its
earlier private reasoning as something it had said. Nothing is lost that a resumed session would have:
thinking is never written to disk (SES-3), so a session resumed on Anthropic has none either.

Cache breakpoints (CCH-1) are rendered here from `CacheHints`: on the system block, on a shallow copy of
the last tool, and on the last block of the last user message. Nothing a caller passed in is mutated.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
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
from nova.model import CacheHints, ModelRequest, StopReason, ToolSpec
from nova.providers.formats._common import sorted_keys

__all__ = [
    "THINKING_PROVIDER",
    "VOLATILE_ORIGIN",
    "cache_control",
    "message_breakpoint_index",
    "message_from_anthropic",
    "messages_from_anthropic",
    "messages_to_anthropic",
    "part_to_anthropic",
    "request_to_anthropic",
    "sorted_keys",
    "stop_reason_from_anthropic",
    "system_to_anthropic",
    "tools_to_anthropic",
]

THINKING_PROVIDER = "anthropic"
"""`ThinkingPart.provider` of the thinking blocks this API signs."""

_STOP_REASONS: dict[str, StopReason] = {
    "end_turn": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "stop_sequence": "stop_sequence",
    "refusal": "refusal",
    # The window filled up while the model was writing: for the loop that is a truncated answer.
    "model_context_window_exceeded": "max_tokens",
}


def stop_reason_from_anthropic(reason: str | None) -> StopReason:
    return _STOP_REASONS.get(reason or "end_turn", "other")


def cache_control(hints: CacheHints, *, head: bool = False) -> dict[str, str]:
    """The `cache_control` marker; the 5-minute TTL is the API default and is left implicit. `head` marks
    the system and tool breakpoints, which take `hints.head_ttl` when it is set."""
    marker = {"type": "ephemeral"}
    ttl = (hints.head_ttl or hints.ttl) if head else hints.ttl
    if ttl == "1h":
        marker["ttl"] = "1h"
    return marker


# -- nova -> Anthropic -------------------------------------------------------------------------------


def part_to_anthropic(part: Part) -> dict[str, Any] | None:
    """One content block, or None for a part Anthropic would reject (an empty text block)."""
    if isinstance(part, TextPart | SummaryPart):
        return {"type": "text", "text": part.text} if part.text else None
    if isinstance(part, ToolUsePart):
        return {"type": "tool_use", "id": part.id, "name": part.name, "input": sorted_keys(part.input)}
    if isinstance(part, ToolResultPart):
        block: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": part.tool_use_id,
            "content": part.content,
        }
        if part.is_error:
            block["is_error"] = True
        return block
    if isinstance(part, ThinkingPart):
        if part.provider != THINKING_PROVIDER:
            return None  # another API's signature (see the module docstring)
        if part.redacted:
            return {"type": "redacted_thinking", "data": part.signature}
        return {"type": "thinking", "thinking": part.thinking, "signature": part.signature}
    if isinstance(part, ImagePart):
        if part.url:
            return {"type": "image", "source": {"type": "url", "url": part.url}}
        source = {"type": "base64", "media_type": part.media_type, "data": part.data}
        return {"type": "image", "source": source}
    raise TypeError(f"unknown part {part!r}")


def _blocks(message: Message) -> list[dict[str, Any]]:
    parts: Iterable[Part] = message.parts
    if message.role == "user":
        # The API wants a user turn's tool_result blocks before anything else in it.
        parts = sorted(message.parts, key=lambda p: not isinstance(p, ToolResultPart))
    return [b for b in (part_to_anthropic(p) for p in parts) if b is not None]


def messages_to_anthropic(
    messages: Sequence[Message], *, cache: CacheHints | None = None
) -> list[dict[str, Any]]:
    """The `messages` array. System-role messages are skipped (see `request_to_anthropic`)."""
    sent = [m for m in messages if m.role != "system"]
    contents = [_blocks(m) for m in sent]
    if cache is not None and (cache.last_user_message or cache.first_message):
        at = message_breakpoint_index(sent, has_content=lambda i: bool(contents[i]))
        # Copy each marked block: the caller may hold on to the dicts built above.
        if cache.first_message and at > 0 and contents[0]:
            contents[0][-1] = {**contents[0][-1], "cache_control": cache_control(cache)}
        if cache.last_user_message and at >= 0:
            contents[at][-1] = {**contents[at][-1], "cache_control": cache_control(cache)}
    return [{"role": m.role, "content": content} for m, content in zip(sent, contents, strict=True)]


# The origin of the context compiler's observations message (`nova.context.compiler`).
VOLATILE_ORIGIN = "context"


def message_breakpoint_index(messages: Sequence[Message], *,
                             has_content: Callable[[int], bool] | None = None) -> int:
    """Where the message cache breakpoint goes: the last user message with content, not counting the
    observations block at the end of the view (origin `context`: the task state and environment, which
    change from call to call). The prefix up to the breakpoint is then the one the next call repeats;
    with the marker on the observations, each call would write an entry the next one cannot read.
    -1 when there is none. `has_content(i)` says whether message i sends anything (default: has parts)."""
    end = len(messages)
    while end > 0 and messages[end - 1].origin == VOLATILE_ORIGIN:
        end -= 1
    for index in range(end - 1, -1, -1):
        m = messages[index]
        if m.role == "user" and (has_content(index) if has_content is not None else bool(m.parts)):
            return index
    return -1


def first_message_index(messages: Sequence[Message]) -> int:
    """The first message sent as a message (system-role ones are hoisted into the system text); -1
    when there is none. With `CacheHints.first_message` its last block carries a breakpoint."""
    return next((i for i, m in enumerate(messages) if m.role != "system"), -1)


def system_to_anthropic(system: str, *, cache: CacheHints | None = None) -> list[dict[str, Any]]:
    if not system:
        return []
    block: dict[str, Any] = {"type": "text", "text": system}
    if cache is not None and cache.system:
        block["cache_control"] = cache_control(cache, head=True)
    return [block]


def tools_to_anthropic(tools: Sequence[ToolSpec], *, cache: CacheHints | None = None) -> list[dict[str, Any]]:
    """Tool definitions in the order given (the registry already sorts them, CCH-3). The breakpoint goes
    on a new dict for the last tool: the ToolSpec and its schema are shared singletons (CCH-2)."""
    out: list[dict[str, Any]] = [
        {"name": t.name, "description": t.description, "input_schema": sorted_keys(t.input_schema)} for t in tools
    ]
    if out and cache is not None and cache.last_tool:
        out[-1] = {**out[-1], "cache_control": cache_control(cache, head=True)}
    return out


def request_to_anthropic(request: ModelRequest) -> dict[str, Any]:
    """Keyword arguments for `client.messages.create` (without `stream`).

    `request.metadata["thinking"]` is passed through as the API's `thinking` parameter."""
    hoisted = [m.text for m in request.messages if m.role == "system" and m.text]
    system_text = "\n\n".join([s for s in (request.system, *hoisted) if s])
    params: dict[str, Any] = {
        "model": request.model,
        "max_tokens": request.max_output_tokens,
        "messages": messages_to_anthropic(request.messages, cache=request.cache),
    }
    system = system_to_anthropic(system_text, cache=request.cache)
    if system:
        params["system"] = system
    tools = tools_to_anthropic(request.tools, cache=request.cache)
    if tools:
        params["tools"] = tools
    if request.temperature is not None:
        params["temperature"] = request.temperature
    if "thinking" in request.metadata:
        params["thinking"] = request.metadata["thinking"]
    return params


# -- Anthropic -> nova -------------------------------------------------------------------------------
def part_from_anthropic(block: Mapping[str, Any]) -> Part | None:
    kind = block.get("type")
    if kind == "text":
        return TextPart(str(block.get("text", "")))
    if kind == "tool_use":
        raw_input = block.get("input")
        return ToolUsePart(
            id=str(block.get("id", "")),
            name=str(block.get("name", "")),
            input=dict(raw_input) if isinstance(raw_input, Mapping) else {},
        )
    if kind == "tool_result":
        return ToolResultPart(
            tool_use_id=str(block.get("tool_use_id", "")),
            content=_tool_result_text(block.get("content")),
            is_error=bool(block.get("is_error", False)),
        )
    if kind == "thinking":
        return ThinkingPart(
            str(block.get("thinking", "")), signature=str(block.get("signature", "")), provider=THINKING_PROVIDER
        )
    if kind == "redacted_thinking":
        return ThinkingPart("", signature=str(block.get("data", "")), redacted=True, provider=THINKING_PROVIDER)
    if kind == "image":
        source = block.get("source") or {}
        if source.get("type") == "url":
            return ImagePart(url=str(source.get("url", "")))
        return ImagePart(media_type=str(source.get("media_type", "")), data=str(source.get("data", "")))
    return None  # server tool blocks and future kinds have no nova equivalent


def _tool_result_text(content: Any) -> str:
    """tool_result content is a string or a list of blocks; Nova keeps the text."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(b.get("text", "")) for b in content if isinstance(b, Mapping))
    return ""


def message_from_anthropic(item: Mapping[str, Any]) -> Message:
    content = item.get("content", "")
    blocks: list[Any] = [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
    parts = [p for p in (part_from_anthropic(b) for b in blocks) if p is not None]
    if item.get("role") == "assistant":
        return Message(role="assistant", parts=tuple(parts))
    return Message(role="user", parts=tuple(parts))


def messages_from_anthropic(items: Iterable[Mapping[str, Any]]) -> list[Message]:
    return [message_from_anthropic(item) for item in items]
