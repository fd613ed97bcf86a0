"""The provider seam: one request type, one response type, normalized usage, a small stream vocabulary.

The request, response, usage and stream types themselves live in `nova.model`. A provider implements
`stream(request)`; `complete(request)` is derived from it by `collect()`. Every
adapter (Anthropic, OpenAI chat, OpenAI responses, compatible servers, the scripted demo model) speaks
only these types, so the agent loop never sees a provider's own shapes.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Protocol, runtime_checkable

from nova.messages import Message, Part, TextPart, ThinkingPart, ToolUsePart
from nova.model import ModelRequest, ModelResponse, ResponseDone, StreamEvent

__all__ = ["Provider", "assistant_message", "collect"]


@runtime_checkable
class Provider(Protocol):
    """What the agent loop calls. `name` identifies the adapter ("anthropic", "openai", "demo", …)."""

    name: str

    def stream(self, request: ModelRequest) -> Iterator[StreamEvent]: ...


def collect(provider: Provider, request: ModelRequest) -> ModelResponse:
    """Run a stream to the end and return its response (the non-streaming call)."""
    for event in provider.stream(request):
        if isinstance(event, ResponseDone):
            return event.response
    raise RuntimeError(f"provider {provider.name!r} ended its stream without a response")


def assistant_message(
    text: str = "",
    tool_calls: Sequence[ToolUsePart] = (),
    thinking: Sequence[ThinkingPart] = (),
    **kw: Any,
) -> Message:
    """Build an assistant message in the canonical part order: thinking, text, tool calls."""
    parts: list[Part] = [*thinking]
    if text:
        parts.append(TextPart(text))
    parts.extend(tool_calls)
    return Message(role="assistant", parts=tuple(parts), **kw)
