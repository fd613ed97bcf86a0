"""Nova's core value types: what a model is asked and what it answers, and normalized usage.

They sit beside `nova.messages` at the bottom of the package: the token ledger, the session record,
the providers and the context engine all speak them, and none of those needs another to get them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Literal

from nova.messages import Message

__all__ = [
    "CALL_PURPOSES",
    "SYNTHETIC_REPLY",
    "CacheHints",
    "CallCount",
    "CallPurpose",
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
    "call_model",
    "is_model_reply",
    "usage_of",
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
    `head_ttl` and the message breakpoints `ttl` (`nova.context.cache` never puts 1 h after 5 min).
    `first_message` closes the first message, which compaction keeps where it is (the task statement):
    the prefix through it is read from the cache after a compaction instead of written again."""

    system: bool = False
    last_tool: bool = False
    last_user_message: bool = False
    first_message: bool = False
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
    figures mean the same thing and add up.

    `to_dict` / `from_dict` are the one codec for usage at rest (transcript records, message metadata,
    session meta) and for the usage objects providers and recorded sessions carry."""

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
        return Usage(*(getattr(self, name) + getattr(other, name) for name in _USAGE_FIELDS))

    def to_dict(self) -> dict[str, int]:
        """Every field by name, zeros included, so a record always has the same keys."""
        return {name: getattr(self, name) for name in _USAGE_FIELDS}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Usage:
        """Usage from a mapping in any of the shapes Nova meets; missing, null and non-numeric values
        count as 0 and unknown keys are ignored, so older and foreign records always read.

            Nova            the keys of `to_dict`
            Anthropic       `input_tokens` (already uncached), `cache_read_input_tokens`,
                            `cache_creation_input_tokens`, `cache_creation.ephemeral_1h_input_tokens`
            OpenAI Chat     `prompt_tokens` (cached included), `prompt_tokens_details.cached_tokens`,
                            `completion_tokens`, `completion_tokens_details.reasoning_tokens`
            OpenAI Responses  `input_tokens` (cached included) with `input_tokens_details.cached_tokens`,
                            `output_tokens_details.reasoning_tokens`

        OpenAI counts cached tokens inside its prompt figure; they are moved to `cache_read_tokens`."""
        if "prompt_tokens" in data or "completion_tokens" in data:
            return cls._from_openai(data, "prompt_tokens", "completion_tokens")
        if "input_tokens_details" in data or "output_tokens_details" in data:
            return cls._from_openai(data, "input_tokens", "output_tokens")
        # Nova's own keys, or Anthropic's, which mean the same thing under other names.
        return cls(
            input_tokens=_count(data, "input_tokens"),
            output_tokens=_count(data, "output_tokens"),
            cache_read_tokens=_count(data, "cache_read_tokens", "cache_read_input_tokens"),
            cache_write_tokens=_count(data, "cache_write_tokens", "cache_creation_input_tokens"),
            reasoning_tokens=_count(data, "reasoning_tokens"),
            cache_write_1h_tokens=_count(data, "cache_write_1h_tokens")
            or _count(data.get("cache_creation"), "ephemeral_1h_input_tokens"),
        )


    @classmethod
    def _from_openai(cls, data: Mapping[str, Any], input_key: str, output_key: str) -> Usage:
        """OpenAI's usage, Chat (`prompt_tokens`, `completion_tokens`) or Responses (`input_tokens`,
        `output_tokens`): the same figures under two names, each with its `<key>_details`."""
        total = _count(data, input_key)
        cached = min(_count(data.get(f"{input_key}_details"), "cached_tokens"), total)
        return cls(
            input_tokens=total - cached,
            output_tokens=_count(data, output_key),
            cache_read_tokens=cached,
            reasoning_tokens=_count(data.get(f"{output_key}_details"), "reasoning_tokens"),
        )

_USAGE_FIELDS = tuple(f.name for f in fields(Usage))


def usage_of(message: Message) -> Usage | None:
    """The usage of the model call that produced `message`, as the agent loop or an importer put it in
    the message's metadata (`metadata["usage"]`, a `Usage.to_dict()`), or None."""
    data = message.metadata.get("usage")
    return Usage.from_dict(data) if isinstance(data, Mapping) else None


SYNTHETIC_REPLY = "synthetic"
"""Metadata key of an assistant message the recording agent's harness wrote itself (an API error
notice): it stands in the conversation, but no model call made it."""


def is_model_reply(message: Message) -> bool:
    """An assistant message a model call answered with (not one a harness wrote in its place)."""
    return message.role == "assistant" and not message.metadata.get(SYNTHETIC_REPLY)


def call_model(message: Message, default: str = "") -> str:
    """The model a recording names for the call that answered with `message` (`metadata["model"]`), else
    `default`."""
    named = message.metadata.get("model")
    return str(named) if isinstance(named, str) and named else default


def main_model(messages: Iterable[Message]) -> str:
    """The model a recording's calls name most often ("" when none names one): what a session that names
    no model of its own (Claude Code's, Cline's) ran on."""
    named = Counter(name for m in messages if m.role == "assistant" and (name := call_model(m)))
    return named.most_common(1)[0][0] if named else ""


def _count(data: Any, *keys: str) -> int:
    """The first of `keys` holding a number in `data` (a mapping or anything else), as an int; else 0."""
    if not isinstance(data, Mapping):
        return 0
    for key in keys:
        value = data.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return int(value)
        if isinstance(value, str) and value.strip().isdigit():
            return int(value)
    return 0


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


# -- what each model call was for ----------------------------------------------------------------------
CallPurpose = Literal["turn", "compaction", "memory_extraction", "memory_recall", "subagent"]
"""Why Nova called a model: a step of the user's turn, a compaction summary, extracting memories at a
turn's end, choosing which memories to recall, or a sub-agent's work (the `task` tool; paid by the
session that started it). The continuity check of a summary is deterministic and makes no call."""
CALL_PURPOSES: tuple[CallPurpose, ...] = ("turn", "compaction", "memory_extraction", "memory_recall", "subagent")


@dataclass(frozen=True, slots=True)
class CallCount:
    """The model calls made for one purpose: how many, their usage added up and their cost.

    `cost_usd` adds up the calls whose price is known; `unpriced` counts the others. The cost is known
    only when every call was priced (`cost_known`): a sum that left some calls out is not shown as the
    cost, the way a session's own total is not (`SessionMeta.cost_known`)."""

    calls: int = 0
    usage: Usage = field(default_factory=Usage)
    cost_usd: float = 0.0
    unpriced: int = 0

    @property
    def cost_known(self) -> bool:
        return self.unpriced == 0

    @property
    def tokens(self) -> int:
        """Tokens billed: input (cached included) plus output, as `SessionMeta.total_tokens` counts them."""
        return self.usage.context_tokens + self.usage.output_tokens

    def add(self, usage: Usage, cost_usd: float | None, *, calls: int = 1) -> CallCount:
        return CallCount(calls=self.calls + calls, usage=self.usage + usage,
                         cost_usd=self.cost_usd + float(cost_usd or 0.0),
                         unpriced=self.unpriced + (cost_usd is None))

    def __add__(self, other: CallCount) -> CallCount:
        return CallCount(calls=self.calls + other.calls, usage=self.usage + other.usage,
                         cost_usd=self.cost_usd + other.cost_usd, unpriced=self.unpriced + other.unpriced)

    def to_dict(self) -> dict[str, Any]:
        """The stored form (a session's meta.json): the partial sum is kept beside the unpriced count."""
        return {"calls": self.calls, "usage": self.usage.to_dict(), "cost_usd": self.cost_usd,
                "unpriced_calls": self.unpriced}

    def to_report(self) -> dict[str, Any]:
        """The form every surface prints (`--json`, the API): `cost_usd` null when not every call was priced."""
        return {"calls": self.calls, "tokens": self.tokens, "usage": self.usage.to_dict(),
                "cost_usd": round(self.cost_usd, 6) if self.cost_known else None, "unpriced_calls": self.unpriced}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CallCount:
        usage = data.get("usage")
        cost = data.get("cost_usd")
        return cls(calls=_count(data, "calls"), usage=Usage.from_dict(usage if isinstance(usage, Mapping) else {}),
                   cost_usd=float(cost) if isinstance(cost, int | float) and not isinstance(cost, bool) else 0.0,
                   unpriced=_count(data, "unpriced_calls"))
