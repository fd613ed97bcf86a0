"""The Anthropic Messages API adapter, over the `anthropic` SDK (an optional extra).

    provider = AnthropicProvider(api_key="sk-ant-...")
    provider = AnthropicProvider(api_key="test", http_client=httpx2.Client(transport=httpx2.MockTransport(h)))

The stream is read as the SDK's raw server-sent events (message_start, content_block_*, message_delta,
message_stop): text and thinking deltas are passed on as they come, tool input arrives as pieces of
JSON (`input_json_delta`) and is parsed once at the end, signatures arrive as `signature_delta`. Usage
comes from message_start and is completed by message_delta; Anthropic already reports uncached input,
cache reads and cache writes separately, which is the normalized form (CCH-4).

Context editing (`clear_tool_uses`: Anthropic clears old tool results server-side) is a request option:

    provider = AnthropicProvider(api_key=..., clear_tool_uses=ClearToolUses(keep=3, trigger_tokens=100_000))

Such requests go through the SDK's beta Messages API with the `context-management-2025-06-27` beta,
carrying `context_management: {"edits": [{"type": "clear_tool_uses_20250919", ...}]}` in the SDK's own
shape (`anthropic.types.beta.BetaClearToolUses20250919EditParam`). The API puts its own placeholder in
each cleared result; the SDK's type has no field to choose its text.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from nova.errors import ProviderUnavailable
from nova.messages import Message, new_id
from nova.model import ModelRequest, ModelResponse, ResponseDone, StopReason, StreamEvent, Usage
from nova.providers._assembly import StreamAssembler
from nova.providers._sdk_provider import SdkProvider, as_dict
from nova.providers.errors import classify_stream_error
from nova.providers.formats.anthropic import (
    THINKING_PROVIDER,
    request_to_anthropic,
    stop_reason_from_anthropic,
)

__all__ = ["CONTEXT_MANAGEMENT_BETA", "AnthropicProvider", "ClearToolUses", "usage_from_anthropic"]

# The beta that enables `context_management` (the SDK's `AnthropicBetaParam` lists it).
CONTEXT_MANAGEMENT_BETA = "context-management-2025-06-27"


@dataclass(frozen=True, slots=True, kw_only=True)
class ClearToolUses:
    """Anthropic context editing's `clear_tool_uses_20250919` edit: once the input passes `trigger_tokens`,
    the oldest tool results are cleared, the newest `keep` tool uses kept; `clear_at_least` (0: unset)
    makes it clear only when that many tokens can go (a cleared prefix is a cache rewrite), and the tools
    in `exclude_tools` are never cleared. The defaults are the API's documented ones."""

    keep: int = 3
    trigger_tokens: int = 100_000
    clear_at_least: int = 0
    exclude_tools: tuple[str, ...] = ()
    clear_tool_inputs: bool = False

    def __post_init__(self) -> None:
        for name in ("keep", "trigger_tokens", "clear_at_least"):
            if getattr(self, name) < 0:
                raise ValueError(f"ClearToolUses.{name} must be 0 or more, not {getattr(self, name)}")

    def to_edit(self) -> dict[str, Any]:
        """The edit as the SDK's `BetaClearToolUses20250919EditParam` has it."""
        edit: dict[str, Any] = {
            "type": "clear_tool_uses_20250919",
            "trigger": {"type": "input_tokens", "value": self.trigger_tokens},
            "keep": {"type": "tool_uses", "value": self.keep},
        }
        if self.clear_at_least:
            edit["clear_at_least"] = {"type": "input_tokens", "value": self.clear_at_least}
        if self.exclude_tools:
            edit["exclude_tools"] = list(self.exclude_tools)
        if self.clear_tool_inputs:
            edit["clear_tool_inputs"] = True
        return edit


def usage_from_anthropic(usage: Mapping[str, Any]) -> Usage:
    """Anthropic's usage object, normalized (`cache_creation` splits the writes by TTL when the request
    used both 5-minute and 1-hour breakpoints)."""
    return Usage.from_dict(usage)


class AnthropicProvider(SdkProvider):
    """`stream(request)` against the Messages API (the guard and error translation: `SdkProvider`)."""

    name = "anthropic"
    sdk = "anthropic"
    client_class = "Anthropic"
    error_class = "AnthropicError"

    def __init__(self, *, api_key: str, clear_tool_uses: ClearToolUses | None = None, **options: Any) -> None:
        super().__init__(api_key=api_key, **options)
        self.clear_tool_uses = clear_tool_uses

    def _stream(self, request: ModelRequest) -> Iterator[StreamEvent]:
        params = request_to_anthropic(request)
        if self.clear_tool_uses is None:
            events = self._client.messages.create(**params, stream=True)
        else:
            events = self._client.beta.messages.create(
                **params, stream=True, betas=[CONTEXT_MANAGEMENT_BETA],
                context_management={"edits": [self.clear_tool_uses.to_edit()]})
        yield from self._read(events, request)

    def _read(self, events: Iterable[Any], request: ModelRequest) -> Iterator[StreamEvent]:
        assembler = StreamAssembler(thinking_provider=THINKING_PROVIDER)
        usage: dict[str, Any] = {}
        stop: StopReason = "end_turn"
        response_id, model, finished = "", request.model, False
        for raw in events:
            event = as_dict(raw)
            kind = event.get("type")
            if kind == "message_start":
                message = event.get("message") or {}
                response_id = str(message.get("id") or "")
                model = str(message.get("model") or model)
                usage.update({k: v for k, v in (message.get("usage") or {}).items() if v is not None})
            elif kind == "content_block_start":
                delta = self._block_start(assembler, event.get("index", 0), event.get("content_block") or {})
                if delta is not None:
                    yield delta
            elif kind == "content_block_delta":
                delta = self._block_delta(assembler, event.get("index", 0), event.get("delta") or {})
                if delta is not None:
                    yield delta
            elif kind == "message_delta":
                stop = stop_reason_from_anthropic((event.get("delta") or {}).get("stop_reason"))
                # message_delta carries cumulative counts; newer API versions repeat the input figures.
                usage.update({k: v for k, v in (event.get("usage") or {}).items() if v is not None})
            elif kind == "message_stop":
                finished = True
            elif kind == "error":
                raise classify_stream_error(self.name, event)
        if not finished:
            raise ProviderUnavailable(
                f"{self.name}: the stream ended before message_stop", provider=self.name
            )
        message = Message(
            role="assistant",
            parts=tuple(assembler.parts()),
            id=new_id(),
            metadata={"provider": self.name, "response_id": response_id}
            if response_id
            else {"provider": self.name},
        )
        yield ResponseDone(
            ModelResponse(message=message, usage=usage_from_anthropic(usage), stop_reason=stop, model=model)
        )

    @staticmethod
    def _block_start(assembler: StreamAssembler, index: Any, block: Mapping[str, Any]) -> StreamEvent | None:
        kind = block.get("type")
        if kind == "text":
            return assembler.text(index, str(block.get("text") or ""))
        if kind == "thinking":
            if block.get("signature"):
                assembler.signature(index, str(block["signature"]), replace=True)
            return assembler.thinking(index, str(block.get("thinking") or ""))
        if kind == "redacted_thinking":
            assembler.redacted(index, str(block.get("data") or ""))
            return None
        if kind == "tool_use":
            initial = block.get("input")
            # The input object in content_block_start is a placeholder ({}); the JSON deltas follow.
            delta = assembler.tool(
                index, call_id=str(block.get("id") or ""), name=str(block.get("name") or "")
            )
            if isinstance(initial, Mapping) and initial:
                assembler.tool_arguments(index, dict(initial))
            return delta
        return None

    @staticmethod
    def _block_delta(assembler: StreamAssembler, index: Any, delta: Mapping[str, Any]) -> StreamEvent | None:
        kind = delta.get("type")
        if kind == "text_delta":
            return assembler.text(index, str(delta.get("text") or ""))
        if kind == "thinking_delta":
            return assembler.thinking(index, str(delta.get("thinking") or ""))
        if kind == "signature_delta":
            assembler.signature(index, str(delta.get("signature") or ""))
            return None
        if kind == "input_json_delta":
            return assembler.tool(index, arguments=str(delta.get("partial_json") or ""))
        return None
