"""Helpers every reader shares: content-field text, tool arguments, derived message ids, timestamps, the
message builder that folds a batch of tool results into one user message, and file loading."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from nova.errors import FileRefused, SessionImportError
from nova.fs.safe_read import loads, read_bytes
from nova.messages import ImagePart, Message, Part, TextPart, ToolResultPart, ToolUsePart
from nova.sessions.readers.base import SkippedRecord

__all__ = ["MAX_IMPORT_BYTES", "BlockConverter", "Builder", "anthropic_parts", "arguments", "content_parts",
           "count_response", "iso_ts", "json_lines", "load_document", "load_text", "mid", "text_of"]


MAX_IMPORT_BYTES = 256 * 1024 * 1024
"""The largest session file imported or replayed: it is read whole, so this bounds the memory it takes.
Long real sessions are tens of megabytes."""


def load_text(path: Path) -> str:
    """The file's text. Only a regular file of at most `MAX_IMPORT_BYTES` is read: a FIFO, a device or a
    link to one is refused, naming what it is (nova.fs.safe_read)."""
    try:
        raw = read_bytes(path, limit=MAX_IMPORT_BYTES, what="a session to import")
    except FileNotFoundError:
        raise SessionImportError(f"{path} does not exist") from None
    except FileRefused as exc:
        raise SessionImportError(str(exc)) from None
    except OSError as exc:
        raise SessionImportError(f"cannot read {path}: {exc.strerror}") from None
    return raw.decode("utf-8", errors="replace").lstrip("\ufeff")


def load_document(path: Path) -> Any:
    text = load_text(path)
    try:
        return loads(text, where=str(path))
    except ValueError as exc:
        raise SessionImportError(f"{path}: not one JSON document ({exc})") from None


def json_lines(text: str, skipped: list[SkippedRecord]) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, record) of every line of a JSON-lines text that holds a JSON object. A line that is not
    JSON, or holds something else, is kept in `skipped` with why; blank lines are passed over."""
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = loads(line)
        except ValueError as exc:
            skipped.append(SkippedRecord(f"line {number}", f"not JSON ({exc})"))
            continue
        if not isinstance(record, dict):
            skipped.append(SkippedRecord(f"line {number}", "not a JSON object"))
            continue
        yield number, record


def text_of(content: Any) -> str:
    """Text of an OpenAI / Anthropic content field: a string, or a list of blocks with text."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(b.get("text", "")) if isinstance(b, dict) else str(b)
            for b in content
            if not isinstance(b, dict) or b.get("type", "text") in ("text", "input_text", "output_text")
        )
    return str(content)


def arguments(raw: Any) -> Mapping[str, Any]:
    """Tool arguments as an object; anything else is kept, marked, as the real adapters do."""
    if isinstance(raw, dict):
        return raw
    try:
        parsed = loads(raw) if isinstance(raw, str) and raw.strip() else {}
    except ValueError:
        parsed = None
    return parsed if isinstance(parsed, dict) else {"__invalid_arguments__": raw}


def count_response(counts: dict[str, int], *, calls: int, results: int) -> None:
    """Add one model response, with its tool calls and the results read for them, to `source_counts`."""
    counts["responses"] += 1
    counts["tool_calls"] += calls
    counts["tool_results"] += results


def mid(index: int) -> str:
    return f"m{index:05d}"


def iso_ts(value: Any) -> float | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def image_part(block: Mapping[str, Any]) -> ImagePart:
    source = block.get("source") or {}
    if not isinstance(source, dict):
        source = {}
    return ImagePart(media_type=str(source.get("media_type", "")), data=str(source.get("data", "")),
                     url=str(source.get("url", "")))


def result_images(block: Mapping[str, Any]) -> list[ImagePart]:
    """The images inside an Anthropic tool_result's content (a screenshot tool's output)."""
    content = block.get("content")
    if not isinstance(content, list):
        return []
    return [image_part(b) for b in content if isinstance(b, dict) and b.get("type") == "image"]


BlockConverter = Callable[[Mapping[str, Any]], Part]
"""Turns one content block of a given `type` into the Nova part it stands for."""


def content_parts(content: Any, converters: Mapping[str, BlockConverter]) -> list[Part]:
    """Nova parts of a content field that is a string or a list of typed blocks, as Anthropic's and pi's
    are: a string or a `text` block with text is a text part; a block of a type in `converters` is what
    its converter makes; any other block (thinking above all: never imported, SES-3) is skipped."""
    if isinstance(content, str):
        return [TextPart(content)] if content else []
    parts: list[Part] = []
    for block in content or ():
        kind = block.get("type")
        if kind == "text":
            if block.get("text"):
                parts.append(TextPart(str(block["text"])))
        elif isinstance(kind, str) and kind in converters:
            parts.append(converters[kind](block))
    return parts


def _tool_result(block: Mapping[str, Any]) -> ToolResultPart:
    return ToolResultPart(
        tool_use_id=str(block["tool_use_id"]),
        content=text_of(block.get("content")),
        is_error=bool(block.get("is_error", False)),
    )


_ANTHROPIC_BLOCKS: Mapping[str, BlockConverter] = {
    "tool_use": lambda block: ToolUsePart(id=str(block["id"]), name=str(block["name"]),
                                          input=arguments(block.get("input"))),
    "tool_result": _tool_result,
    "image": image_part,
}


def anthropic_parts(content: Any, *, with_result_images: bool = False) -> list[Part]:
    """Nova parts of an Anthropic content field. Thinking blocks are never imported (SES-3). With
    `with_result_images`, images inside tool results follow the results as image parts (a Nova tool
    result holds text only)."""
    parts = content_parts(content, _ANTHROPIC_BLOCKS)
    if with_result_images and not isinstance(content, str):
        parts += [image for block in content or () if block.get("type") == "tool_result"
                  for image in result_images(block)]
    return parts


class Builder:
    """Collects messages, folding consecutive tool results into one user message (one per batch)."""

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.system: list[str] = []
        self.clock = 0.0

    def at(self, ts: float | None) -> float:
        if ts:
            self.clock = float(ts)
        return self.clock

    def add(
        self,
        role: Literal["user", "assistant"],
        parts: Sequence[Part],
        index: int,
        ts: float | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> None:
        self.messages.append(
            Message(role=role, parts=tuple(parts), id=mid(index), created_at=self.at(ts), metadata=dict(metadata or {}))
        )

    def add_results(self, results: Sequence[ToolResultPart], index: int, ts: float | None = None) -> None:
        last = self.messages[-1] if self.messages else None
        if last is not None and last.role == "user" and last.parts and all(
            isinstance(p, ToolResultPart) for p in last.parts
        ):
            self.messages[-1] = last.with_parts([*last.parts, *results])
        else:
            self.add("user", results, index, ts)
