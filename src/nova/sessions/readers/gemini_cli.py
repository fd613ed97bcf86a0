"""A Gemini CLI chat, as written under `~/.gemini/tmp/<project hash>/chats/session-*.json`: one JSON object
with `sessionId`, `projectHash`, `startTime` and `messages`.

Each message has a `type`: `user` (what the person typed: `content` a string or a list of parts with
`text`), `gemini` (the model: `content` its text, `toolCalls` the calls it made, each with its `args` and
its `result` — a list of `functionResponse` objects whose `response` holds `output` or `error` — and
`status`; `thoughts` are never imported, SES-3; `tokens` its usage: `input` includes `cached`, `output`
does not include `thoughts`, which the usage read counts as reasoning within the output), and the
CLI's own notes (`info`, `warning`, `error`), which are not conversation and are counted in
`meta["ignored_records"]`. A `gemini` message becomes an assistant message with its calls, followed by
one user message with their results in call order.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from nova.messages import Part, TextPart, ToolResultPart, ToolUsePart
from nova.model import Usage
from nova.sessions.readers.base import (
    Confidence,
    DocumentReader,
    ImportedSession,
    SkippedRecord,
    refuse,
    sure,
)
from nova.sessions.readers.common import Builder, arguments, count_response, iso_ts, load_document

NAME = "gemini-cli"
_TYPES = ("user", "gemini", "info", "warning", "error")


class GeminiCliReader(DocumentReader):
    name = NAME

    def document_confidence(self, doc: dict[str, Any]) -> Confidence:
        if "sessionId" not in doc or "projectHash" not in doc:
            return refuse("no `sessionId` and `projectHash`")
        messages = doc.get("messages")
        if not isinstance(messages, list):
            return refuse("no `messages` list")
        for index, m in enumerate(messages):
            if not isinstance(m, dict) or m.get("type") not in _TYPES:
                kind = m.get("type") if isinstance(m, dict) else None
                return refuse(f"messages[{index}]: `type` is {kind!r}, expected user or gemini")
        return sure(0.95)

    def read(self, path: Path, *, strict: bool = False, doc: dict[str, Any] | None = None) -> ImportedSession:
        """`doc`: the chat already read (newer Gemini CLI's JSON-lines log, folded: `gemini_cli_jsonl`)."""
        doc = load_document(path) if doc is None else doc
        b = Builder()
        ignored: Counter[str] = Counter()
        skipped: list[SkippedRecord] = []
        counts = {"responses": 0, "tool_calls": 0, "tool_results": 0}
        model = ""
        for index, m in enumerate(doc.get("messages") or ()):
            ts = iso_ts(m.get("timestamp"))
            kind = m.get("type")
            try:
                if kind == "user":
                    parts = _text_parts(m.get("content"))
                    if parts:
                        b.add("user", parts, 2 * index, ts)
                elif kind == "gemini":
                    model = str(m.get("model") or model)
                    _response(b, m, 2 * index, ts, counts)
                else:
                    ignored[str(kind)] += 1
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                skipped.append(SkippedRecord(f"messages[{index}]", f"{kind} message could not be read: {exc!r}"))
        meta: dict[str, Any] = {"session_id": doc.get("sessionId"), "project_hash": doc.get("projectHash"),
                                "source_counts": counts}
        if model:
            meta["model"] = model
        if ignored:
            meta["ignored_records"] = dict(ignored)
        return ImportedSession(messages=b.messages, system="", format=NAME, source_path=path,
                               meta={k: v for k, v in meta.items() if v is not None}, skipped=tuple(skipped))


def _text_parts(content: Any) -> list[Part]:
    if isinstance(content, str):
        return [TextPart(content)] if content.strip() else []
    parts: list[Part] = []
    for block in content if isinstance(content, list) else ():
        text = block.get("text") if isinstance(block, dict) else block if isinstance(block, str) else None
        if isinstance(text, str) and text.strip():
            parts.append(TextPart(text))
    return parts


def _response(b: Builder, m: dict[str, Any], index: int, ts: float | None, counts: dict[str, int]) -> None:
    calls: list[Part] = []
    results: list[ToolResultPart] = []
    for number, call in enumerate(m.get("toolCalls") or ()):
        call_id = str(call.get("id") or f"call-{index}-{number}")
        calls.append(ToolUsePart(id=call_id, name=str(call.get("name", "")), input=arguments(call.get("args"))))
        output, failed = _result(call)
        if output is not None:
            results.append(ToolResultPart(tool_use_id=call_id, content=output, is_error=failed))
    parts = [*_text_parts(m.get("content")), *calls]
    if not parts:
        return
    count_response(counts, calls=len(calls), results=len(results))
    metadata: dict[str, Any] = {}
    tokens = m.get("tokens")
    # All zeros is a call whose usage was not recorded (older Gemini CLI wrote some so), not a free call.
    if isinstance(tokens, dict) and any(tokens.get(k) for k in ("input", "output", "cached", "thoughts", "total")):
        # Gemini counts thoughts apart from the reply (`total` is input + output + thoughts + tool); Nova's
        # output holds its reasoning, as OpenAI's does, so that the anchor leaves out only the thoughts
        # and the bill prices them as the output they are.
        cached = int(tokens.get("cached") or 0)
        thoughts = int(tokens.get("thoughts") or 0)
        metadata["usage"] = Usage(input_tokens=max(0, int(tokens.get("input") or 0) - cached),
                                  cache_read_tokens=cached, output_tokens=int(tokens.get("output") or 0) + thoughts,
                                  reasoning_tokens=thoughts).to_dict()
    if m.get("model"):
        metadata["model"] = str(m["model"])
    b.add("assistant", parts, index, ts, metadata)
    if results:
        b.add("user", results, index + 1, ts)


def _result(call: dict[str, Any]) -> tuple[str | None, bool]:
    """The call's output as text and whether it failed; (None, False) for a call that never returned."""
    failed = str(call.get("status") or "").lower() in ("error", "cancelled")
    responses = call.get("result")
    if not isinstance(responses, list) or not responses:
        return (call.get("resultDisplay") or "cancelled", True) if failed else (None, False)
    chunks: list[str] = []
    for item in responses:
        response = ((item or {}).get("functionResponse") or {}).get("response") if isinstance(item, dict) else None
        if isinstance(response, dict):
            if "error" in response:
                failed = True
                chunks.append(str(response["error"]))
            elif "output" in response:
                chunks.append(str(response["output"]))
            else:
                chunks.append(json.dumps(response, ensure_ascii=False))
    return "\n".join(chunks), failed
