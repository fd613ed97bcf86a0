"""Builds an assistant message from streamed pieces, whatever the provider's event vocabulary.

Adapters feed it deltas keyed by the provider's own block or output index and get back the stream
events to yield; at the end `parts()` gives the parts in the order the blocks were opened, which keeps
interleaved thinking and tool calls in the order the model produced them (Anthropic checks it).
"""

from __future__ import annotations

import json
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any, Literal

from nova.messages import Part, TextPart, ThinkingPart, ToolUsePart, new_id
from nova.model import TextDelta, ThinkingDelta, ToolCallDelta
from nova.providers.formats._common import parse_arguments

__all__ = ["StreamAssembler"]


@dataclass
class _Slot:
    kind: Literal["text", "thinking", "tool"]
    chunks: list[str] = field(default_factory=list)
    signature: str = ""
    redacted: bool = False
    call_id: str = ""
    name: str = ""
    tool_index: int = 0
    id_from_server: bool = False
    final_arguments: str | None = None


class StreamAssembler:
    """`thinking_provider` is stamped on every thinking part built: the API whose signatures they carry
    (see `ThinkingPart.provider`); "" for an API whose reasoning comes unsigned."""

    def __init__(self, *, thinking_provider: str = "") -> None:
        self._thinking_provider = thinking_provider
        self._slots: dict[Hashable, _Slot] = {}
        self._tool_count = 0
        # Provider key -> slot key of the call currently open under it (see `tool`).
        self._current: dict[Hashable, Hashable] = {}

    def _slot(self, key: Hashable, kind: Literal["text", "thinking", "tool"]) -> _Slot:
        slot = self._slots.get(key)
        if slot is None:
            slot = self._slots[key] = _Slot(kind)
        return slot

    def text(self, key: Hashable, delta: str) -> TextDelta | None:
        if not delta:
            self._slot(key, "text")
            return None
        self._slot(key, "text").chunks.append(delta)
        return TextDelta(delta)

    def thinking(self, key: Hashable, delta: str) -> ThinkingDelta | None:
        slot = self._slot(key, "thinking")
        if not delta:
            return None
        slot.chunks.append(delta)
        return ThinkingDelta(delta)

    def signature(self, key: Hashable, signature: str, *, replace: bool = False) -> None:
        slot = self._slot(key, "thinking")
        slot.signature = signature if replace else slot.signature + signature

    def redacted(self, key: Hashable, data: str) -> None:
        slot = self._slot(key, "thinking")
        slot.redacted = True
        slot.signature = data

    def has_tool(self, key: Hashable) -> bool:
        slot = self._slots.get(self._current.get(key, key))
        return slot is not None and slot.kind == "tool"

    def tool(self, key: Hashable, *, call_id: str = "", name: str = "", arguments: Any = "") -> ToolCallDelta:
        """A piece of a tool call. The first piece for `key` opens the call and its delta carries the id
        and name (a made-up id when the server sent none: some local servers leave it out). A new id
        under a key that already holds a call opens a second call: some local servers number every
        parallel call 0."""
        if not isinstance(arguments, str):
            arguments = _json_text(arguments)
        slot_key = self._current.get(key, key)
        slot = self._slots.get(slot_key)
        starts_another = (
            slot is not None
            and slot.kind == "tool"
            and slot.id_from_server
            and bool(call_id)
            and call_id != slot.call_id
        )
        if slot is None or slot.kind != "tool" or starts_another:
            slot_key = (key, self._tool_count) if slot is not None else key
            self._current[key] = slot_key
            slot = self._slots[slot_key] = _Slot(
                "tool", call_id=call_id or new_id("call"), name=name, id_from_server=bool(call_id)
            )
            slot.tool_index = self._tool_count
            self._tool_count += 1
            slot.chunks.append(arguments)
            return ToolCallDelta(index=slot.tool_index, id=slot.call_id, name=slot.name, arguments=arguments)
        if name and not slot.name:
            slot.name = name
        slot.chunks.append(arguments)
        return ToolCallDelta(index=slot.tool_index, arguments=arguments)

    def tool_arguments(self, key: Hashable, arguments: Any) -> None:
        """The complete arguments, when the provider repeats them at the end: they win over the deltas."""
        slot = self._slots.get(self._current.get(key, key))
        if slot is not None and slot.kind == "tool":
            slot.final_arguments = arguments if isinstance(arguments, str) else _json_text(arguments)

    @property
    def tool_count(self) -> int:
        return self._tool_count

    def parts(self) -> list[Part]:
        parts: list[Part] = []
        for slot in self._slots.values():
            joined = "".join(slot.chunks)
            if slot.kind == "text":
                if joined:
                    parts.append(TextPart(joined))
            elif slot.kind == "thinking":
                if joined or slot.signature:
                    parts.append(ThinkingPart(joined, signature=slot.signature, redacted=slot.redacted,
                                             provider=self._thinking_provider))
            else:
                raw = slot.final_arguments if slot.final_arguments is not None else joined
                parts.append(ToolUsePart(id=slot.call_id, name=slot.name, input=parse_arguments(raw)))
        return parts


def _json_text(value: Any) -> str:
    try:
        return json.dumps(value, sort_keys=True)
    except (TypeError, ValueError):
        return str(value)
