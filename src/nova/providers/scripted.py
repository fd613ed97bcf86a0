"""Deterministic providers: scripted turns or a function of the request. The offline demo model, replay
and the tests use them; nothing here reaches a network.

    provider = ScriptedProvider([
        reply("Let me look.", tool_calls=[call("read_file", path="README.md")]),
        reply("Done."),
        ContextOverflow("prompt is too long"),   # an exception is raised when its turn comes
    ])

`ScriptedProvider` records every request it was sent (`.requests`) so tests can assert on the exact
view a model would have seen. When a scripted reply gives no usage, a plausible one is computed from
the request (about 4 characters per token) so the token ledger and cost figures move as they would.
"""

from __future__ import annotations

import itertools
import json
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from nova.messages import Message, ToolUsePart, new_id
from nova.model import (
    ModelRequest,
    ModelResponse,
    ResponseDone,
    StopReason,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    Usage,
)
from nova.providers.base import assistant_message

__all__ = [
    "FunctionProvider",
    "ScriptExhausted",
    "ScriptedProvider",
    "call",
    "message_of",
    "reply",
    "rough_request_tokens",
]

_call_ids = itertools.count(1)


def call(name: str, id: str | None = None, **input: Any) -> ToolUsePart:
    """A scripted tool call."""
    return ToolUsePart(id=id or f"toolu_{next(_call_ids):06d}", name=name, input=input)


@dataclass(frozen=True)
class reply:
    """One scripted model turn."""

    text: str = ""
    tool_calls: Sequence[ToolUsePart] = ()
    usage: Usage | None = None
    stop_reason: StopReason | None = None
    raw_tool_calls: Sequence[tuple[str, str, str]] = field(default=())
    """(id, name, raw JSON arguments) streamed as-is: used to script malformed arguments."""


class ScriptExhausted(AssertionError):
    pass


def rough_request_tokens(request: ModelRequest) -> int:
    """What a provider might report as input tokens for `request`: ~4 characters per token."""
    size = len(request.system)
    size += sum(len(t.name) + len(t.description) + len(json.dumps(t.input_schema)) for t in request.tools)
    for m in request.messages:
        for p in m.parts:
            size += len(json.dumps(_part_payload(p), ensure_ascii=False))
    return size // 4 + 8


def _part_payload(part: Any) -> Any:
    return {k: getattr(part, k) for k in part.__slots__ if k != "kind"}


ScriptItem = reply | ModelResponse | BaseException | Callable[[ModelRequest], "reply | ModelResponse"]


class ScriptedProvider:
    """Answers requests from a queue of scripted turns, streaming text in small chunks."""

    name = "scripted"

    def __init__(self, script: Iterable[ScriptItem] = (), *, model: str = "scripted", chunk: int = 16):
        self._script: deque[ScriptItem] = deque(script)
        self.requests: list[ModelRequest] = []
        self.model = model
        self.chunk = chunk

    def enqueue(self, *items: ScriptItem) -> None:
        self._script.extend(items)

    @property
    def remaining(self) -> int:
        return len(self._script)

    def stream(self, request: ModelRequest) -> Iterator[StreamEvent]:
        self.requests.append(request)
        if not self._script:
            raise ScriptExhausted(f"ScriptedProvider got request #{len(self.requests)} but the script is empty")
        item = self._script.popleft()
        if isinstance(item, BaseException):
            raise item
        if callable(item) and not isinstance(item, reply | ModelResponse):
            item = item(request)
        yield from _stream_item(item, request, self.chunk, self.model)


class FunctionProvider:
    """Answers every request by calling `fn(request)`, which returns a `reply`, a response or a string."""

    name = "function"

    def __init__(self, fn: Callable[[ModelRequest], reply | ModelResponse | str], *, chunk: int = 16):
        self.fn = fn
        self.requests: list[ModelRequest] = []
        self.chunk = chunk

    def stream(self, request: ModelRequest) -> Iterator[StreamEvent]:
        self.requests.append(request)
        result = self.fn(request)
        if isinstance(result, str):
            result = reply(result)
        yield from _stream_item(result, request, self.chunk, "function")


def _stream_item(item: reply | ModelResponse, request: ModelRequest, chunk: int, model: str) -> Iterator[StreamEvent]:
    if isinstance(item, ModelResponse):
        if item.message.text:
            yield TextDelta(item.message.text)
        yield ResponseDone(item)
        return
    text = item.text
    for i in range(0, len(text), chunk):
        yield TextDelta(text[i : i + chunk])
    tool_calls = list(item.tool_calls)
    for index, tc in enumerate(tool_calls):
        yield ToolCallDelta(index=index, id=tc.id, name=tc.name, arguments=json.dumps(dict(tc.input)))
    raw_parts = []
    for offset, (call_id, name, raw_args) in enumerate(item.raw_tool_calls):
        yield ToolCallDelta(index=len(tool_calls) + offset, id=call_id, name=name, arguments=raw_args)
        raw_parts.append(_parse_raw_call(call_id, name, raw_args))
    calls = [*tool_calls, *raw_parts]
    message = assistant_message(text, calls, id=new_id())
    usage = item.usage or Usage(
        input_tokens=rough_request_tokens(request), output_tokens=max(1, len(text) // 4 + 12 * len(calls))
    )
    stop = item.stop_reason or ("tool_use" if calls else "end_turn")
    yield ResponseDone(ModelResponse(message=message, usage=usage, stop_reason=stop, model=model))


def _parse_raw_call(call_id: str, name: str, raw_args: str) -> ToolUsePart:
    """Mirror what the real adapters do with arguments that are not a JSON object."""
    try:
        parsed = json.loads(raw_args)
    except json.JSONDecodeError:
        parsed = None
    if not isinstance(parsed, dict):
        return ToolUsePart(id=call_id, name=name, input={"__invalid_arguments__": raw_args})
    return ToolUsePart(id=call_id, name=name, input=parsed)


def message_of(item: reply) -> Message:
    return assistant_message(item.text, list(item.tool_calls))
