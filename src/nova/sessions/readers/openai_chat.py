"""A plain OpenAI chat history: a list of messages, or an object with `messages` (`role`, `content`,
`tool_calls`, `tool` messages). A list whose content holds Anthropic `tool_use` / `tool_result` blocks is
refused here: it is Anthropic Messages, and reading it as OpenAI would lose every tool call."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from nova.messages import ImagePart, Part, TextPart, ToolResultPart, ToolUsePart
from nova.model import Usage
from nova.sessions.readers.base import Confidence, ImportedSession, refuse, sure
from nova.sessions.readers.common import Builder, arguments, load_document, text_of

NAME = "openai"
ANTHROPIC_BLOCKS = ("tool_use", "tool_result")


def chat_items(head_records: Sequence[Any]) -> tuple[list[Any] | None, str]:
    """The message list of a one-document chat file, or None and why not."""
    if len(head_records) != 1:
        return None, f"expected one JSON document, found {len(head_records)} JSON lines"
    doc = head_records[0]
    if isinstance(doc, list):
        return doc, ""
    if isinstance(doc, dict) and isinstance(doc.get("messages"), list):
        return doc["messages"], ""
    return None, "neither a list of messages nor an object with a `messages` list"


class ChatListReader(ABC):
    """A reader of a chat history that is one JSON document, a list of messages or an object with a
    `messages` list (OpenAI chat, Anthropic Messages): anything else is refused alike, and the reader
    judges only the messages."""

    name: str

    def confidence(self, path: Path, head_records: Sequence[Any]) -> Confidence:
        items, why = chat_items(head_records)
        if items is None:
            return refuse(why)
        return self.messages_confidence(items)

    @abstractmethod
    def messages_confidence(self, items: list[Any]) -> Confidence: ...

    @abstractmethod
    def read(self, path: Path, *, strict: bool = False) -> ImportedSession: ...


class OpenAIChatReader(ChatListReader):
    name = NAME

    def messages_confidence(self, items: list[Any]) -> Confidence:
        for index, m in enumerate(items):
            if not isinstance(m, dict):
                return refuse(f"message {index}: not an object")
            if "role" not in m:
                return refuse(f"message {index}: no `role` field (keys: {', '.join(sorted(m)[:6])})")
            content = m.get("content")
            if isinstance(content, list):
                for block in content:
                    if isinstance(block, dict) and block.get("type") in ANTHROPIC_BLOCKS:
                        return refuse(f"message {index}: `content` holds an Anthropic `{block['type']}` block")
        return sure(0.8)

    def read(self, path: Path, *, strict: bool = False) -> ImportedSession:
        doc = load_document(path)
        items = doc if isinstance(doc, list) else doc["messages"]
        b = Builder()
        counts = {"responses": 0, "tool_calls": 0, "tool_results": 0}
        for index, m in enumerate(items):
            role = m["role"]
            if role in ("system", "developer"):
                b.system.append(text_of(m.get("content")))
            elif role == "assistant":
                parts = _parts(m.get("content"))
                for tc in m.get("tool_calls") or ():
                    fn = tc.get("function") or {}
                    parts.append(ToolUsePart(id=str(tc["id"]), name=str(fn.get("name", "")),
                                             input=arguments(fn.get("arguments"))))
                metadata = {"usage": Usage.from_dict(m["usage"]).to_dict()} if isinstance(m.get("usage"), dict) else {}
                b.add("assistant", parts or [TextPart("")], index, metadata=metadata)
                counts["responses"] += 1
                counts["tool_calls"] += len(m.get("tool_calls") or ())
            elif role == "tool":
                b.add_results([ToolResultPart(tool_use_id=str(m["tool_call_id"]), content=text_of(m.get("content")))],
                              index)
                counts["tool_results"] += 1
            elif role == "user":
                b.add("user", _parts(m.get("content")) or [TextPart("")], index)
            else:
                raise ValueError(f"message {index}: unexpected role {role!r}")
        meta: dict[str, Any] = {"model": doc["model"]} if isinstance(doc, dict) and "model" in doc else {}
        meta["source_counts"] = counts
        return ImportedSession(messages=b.messages, system="\n\n".join(b.system), format=NAME, source_path=path,
                               meta=meta)


def _parts(content: Any) -> list[Part]:
    if not isinstance(content, list):
        text = text_of(content)
        return [TextPart(text)] if text else []
    parts: list[Part] = []
    for block in content:
        if isinstance(block, dict) and block.get("type") == "image_url":
            url = block.get("image_url")
            parts.append(ImagePart(url=str(url.get("url", "") if isinstance(url, dict) else url)))
        else:
            text = text_of([block])
            if text:
                parts.append(TextPart(text))
    return parts
