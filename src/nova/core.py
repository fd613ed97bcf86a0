"""Nova's core value types: what a model is asked and what it answers, and normalized usage.

They sit beside `nova.messages` at the bottom of the package: the token ledger, the session record,
the providers and the context engine all speak them, and none of those needs another to get them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from nova.messages import Message

__all__ = [
    "CacheHints",
    "ModelRequest",
    "ModelResponse",
    "ResponseDone",
    "StopReason",
    "StreamEvent",
    "TextDelta",
    "ThinkingDelta",
    "ToolCallDelta",
    "ToolSpec",
    "Usage",
]

StopReason = Literal["end_turn", "tool_use", "max_tokens", "stop_sequence", "refusal", "other"]


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool as the model sees it: name, description and a JSON schema for its input."""

    name: str
    description: str
    input_schema: Mapping[str, Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class CacheHints:
    """Where the context layer wants prompt-cache breakpoints (CCH-1). Adapters that cannot place
    breakpoints ignore them; `cache_key` becomes OpenAI's `prompt_cache_key`. `ttl` is the lifetime of
    every breakpoint unless `head_ttl` is set: then the tool and system breakpoints (the stable head) use
    `head_ttl` and the message breakpoint `ttl` (`nova.context.cache` never puts 1 h after 5 min)."""

    system: bool = False
    last_tool: bool = False
    last_user_message: bool = False
    ttl: Literal["5m", "1h"] = "5m"
    cache_key: str | None = None
    head_ttl: Literal["5m", "1h"] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelRequest:
    model: str
    messages: Sequence[Message]
    system: str = ""
    tools: Sequence[ToolSpec] = ()
    max_output_tokens: int = 8192
    temperature: float | None = None
    cache: CacheHints = field(default_factory=CacheHints)
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Usage:
    """Normalized usage (CCH-4). `input_tokens` is the *uncached* input: OpenAI's cached tokens are
    subtracted from its prompt tokens and reported as `cache_read_tokens`, so that Anthropic and OpenAI
    figures mean the same thing and add up."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    cache_write_1h_tokens: int = 0
    """Of `cache_write_tokens`, those written with Anthropic's 1-hour TTL (priced at 2x input, not 1.25x)."""

    @property
    def context_tokens(self) -> int:
        """Everything the provider read as input on this call, cached or not."""
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            self.reasoning_tokens + other.reasoning_tokens,
            self.cache_write_1h_tokens + other.cache_write_1h_tokens,
        )

    def to_dict(self) -> dict[str, int]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            "reasoning_tokens": self.reasoning_tokens,
            "cache_write_1h_tokens": self.cache_write_1h_tokens,
        }


@dataclass(frozen=True, slots=True)
class ModelResponse:
    message: Message
    usage: Usage
    stop_reason: StopReason = "end_turn"
    model: str = ""


# -- stream vocabulary -------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class TextDelta:
    text: str
    kind: Literal["text_delta"] = "text_delta"


@dataclass(frozen=True, slots=True)
class ThinkingDelta:
    text: str
    kind: Literal["thinking_delta"] = "thinking_delta"


@dataclass(frozen=True, slots=True)
class ToolCallDelta:
    """A tool call being streamed: the first delta of a call carries its id and name."""

    index: int
    id: str = ""
    name: str = ""
    arguments: str = ""
    kind: Literal["tool_call_delta"] = "tool_call_delta"


@dataclass(frozen=True, slots=True)
class ResponseDone:
    """Always the last event of a stream: the assembled response."""

    response: ModelResponse
    kind: Literal["done"] = "done"


StreamEvent = TextDelta | ThinkingDelta | ToolCallDelta | ResponseDone
