"""A plain list of Anthropic Messages (`role` user/assistant, `content` blocks), as Cline and Roo keep in
`api_conversation_history.json`. Cline answers a tool call with a text block `[read_file for 'x'] Result:
…` rather than a `tool_result`; such a block right after the call becomes that call's result, in order."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from nova.core import Usage
from nova.messages import Part, TextPart, ToolResultPart, ToolUsePart
from nova.sessions.readers.base import Confidence, ImportedSession, refuse, sure
from nova.sessions.readers.common import Builder, anthropic_parts, load_document, text_of
from nova.sessions.readers.openai_chat import ANTHROPIC_BLOCKS, chat_items

NAME = "anthropic"
_CLINE_RESULT = re.compile(r"\[([\w.-]+)(?: for .*?)?\] (Result|Error):", re.ASCII | re.DOTALL)


class AnthropicMessagesReader:
    name = NAME

    def confidence(self, path: Path, head_records: Sequence[Any]) -> Confidence:
        items, why = chat_items(head_records)
        if items is None:
            return refuse(why)
        blocks = False
        for index, m in enumerate(items):
            if not isinstance(m, dict):
                return refuse(f"message {index}: not an object")
            role = m.get("role")
            if role not in ("user", "assistant"):
                return refuse(f"message {index}: `role` is {role!r}, expected user or assistant")
            if "tool_calls" in m:
                return refuse(f"message {index}: has OpenAI `tool_calls`")
            content = m.get("content")
            if isinstance(content, list):
                blocks = blocks or any(isinstance(b, dict) and b.get("type") in ANTHROPIC_BLOCKS for b in content)
        # With tool blocks it is certainly Anthropic; plain text messages read the same either way.
        return sure(0.95) if blocks else sure(0.5)

    def read(self, path: Path, *, strict: bool = False) -> ImportedSession:
        doc = load_document(path)
        items = doc if isinstance(doc, list) else doc["messages"]
        b = Builder()
        open_calls: list[ToolUsePart] = []
        for index, m in enumerate(items):
            role = m["role"]
            if role == "assistant":
                parts = anthropic_parts(m.get("content"))
                open_calls = [p for p in parts if isinstance(p, ToolUsePart)]
                b.add("assistant", parts or [TextPart("")], index, metadata=_metadata(m))
            elif role == "user":
                parts = anthropic_parts(m.get("content"), with_result_images=True)
                parts = _pair_text_results(parts, open_calls)
                open_calls = []
                # A provider wants the results first, in call order.
                results = [p for p in parts if isinstance(p, ToolResultPart)]
                others = [p for p in parts if not isinstance(p, ToolResultPart)]
                b.add("user", [*results, *others] or [TextPart("")], index)
            elif role == "system":
                b.system.append(text_of(m.get("content")))
            else:
                raise ValueError(f"message {index}: unexpected role {role!r}")
        return ImportedSession(messages=b.messages, system="\n\n".join(b.system), format=NAME, source_path=path)


def _pair_text_results(parts: list[Part], calls: list[ToolUsePart]) -> list[Part]:
    answered = {p.tool_use_id for p in parts if isinstance(p, ToolResultPart)}
    pending = [c for c in calls if c.id not in answered]
    if not pending:
        return parts
    out: list[Part] = []
    for part in parts:
        match = _CLINE_RESULT.match(part.text) if isinstance(part, TextPart) else None
        if match and pending and isinstance(part, TextPart):
            call = pending.pop(0)
            out.append(ToolResultPart(tool_use_id=call.id, content=part.text, is_error=match.group(2) == "Error"))
        else:
            out.append(part)
    return out


def _metadata(m: dict[str, Any]) -> dict[str, Any]:
    metadata: dict[str, Any] = {}
    if isinstance(m.get("usage"), dict):
        metadata["usage"] = Usage.from_dict(m["usage"]).to_dict()
    tokens = (m.get("metrics") or {}).get("tokens") if isinstance(m.get("metrics"), dict) else None
    if isinstance(tokens, dict):  # Cline's per-response figures
        metadata["usage"] = Usage(input_tokens=int(tokens.get("prompt") or 0),
                                  output_tokens=int(tokens.get("completion") or 0),
                                  cache_read_tokens=int(tokens.get("cached") or 0)).to_dict()
    info = m.get("modelInfo")
    if isinstance(info, dict) and info.get("modelId"):
        metadata["model"] = str(info["modelId"])
    return metadata
