"""Token size of messages, system prompt and tool declarations as a provider bills them.

A provider bills more than the text: each message carries a role marker and turn delimiters, a tool call
carries its name, JSON arguments and an id wrapper, a tool result its wrapper, a tool declaration its
schema. These are counted through the counter's `Overheads` (each counter declares its own),
so that an appended message is estimated at about what the provider will report for it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
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
from nova.model import ToolSpec
from nova.tokens.counters import Overheads, TokenCounter

__all__ = ["IMAGE_TOKENS", "count_message", "count_messages", "count_system", "count_tools"]

# Image size is not known from a part; ~1,600 tokens is what Anthropic and OpenAI bill for a typical
# screenshot-sized image (about 1,100x1,100 pixels).
IMAGE_TOKENS = 1600

def _json(value: Any) -> str:
    # Compact separators: providers send arguments as compact JSON, and padding would inflate the count.
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def count_part(part: Part, counter: TokenCounter, overheads: Overheads) -> int:
    if isinstance(part, TextPart | SummaryPart):
        return counter.count(part.text)
    if isinstance(part, ToolUsePart):
        return overheads.tool_use + counter.count(part.name) + counter.count(_json(dict(part.input)))
    if isinstance(part, ToolResultPart):
        return overheads.tool_result + counter.count(part.content)
    if isinstance(part, ThinkingPart):
        # Replayed thinking is input like any other text; a redacted block's payload is opaque bytes.
        return counter.count(part.thinking) if not part.redacted else len(part.thinking) // 4
    if isinstance(part, ImagePart):
        return IMAGE_TOKENS
    return 0


def count_message(message: Message, counter: TokenCounter) -> int:
    overheads = counter.overheads
    return overheads.message + sum(count_part(p, counter, overheads) for p in message.parts)


def count_messages(messages: Iterable[Message], counter: TokenCounter) -> int:
    return sum(count_message(m, counter) for m in messages)


def count_system(system: str, counter: TokenCounter) -> int:
    return counter.overheads.message + counter.count(system) if system else 0


def count_tools(tools: Sequence[ToolSpec], counter: TokenCounter) -> int:
    overheads = counter.overheads
    return sum(
        overheads.tool_spec
        + counter.count(t.name)
        + counter.count(t.description)
        + counter.count(_json(dict(t.input_schema)))
        for t in tools
    )
