"""A Gemini CLI chat as newer Gemini CLI writes it: `~/.gemini/tmp/<project>/chats/session-*.jsonl`, an
append-only log of the same chat the older `session-*.json` holds whole (`nova.sessions.readers.gemini_cli`).

- the first line is the chat's metadata (`sessionId`, `projectHash`, `startTime`, …);
- a line with an `id` is a message, written again in full each time its tool calls, results or tokens
  change: the last copy of an id is the message, in the place its first copy took;
- `{"$set": {...}}` patches the metadata; a `$set` holding `messages` replaces the whole list (Gemini CLI
  writes one when it starts the history anew: a resumed session, a compression, an aborted turn);
- `{"$rewindTo": id}` drops that message and every one after it (an unknown id drops them all).

The log is folded into the chat Gemini CLI itself loads on resume, and read as one."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from nova.sessions.readers.base import (
    Confidence,
    ImportedSession,
    NotJson,
    SkippedRecord,
    first_object,
    refuse,
    sure,
)
from nova.sessions.readers.common import json_lines, load_text
from nova.sessions.readers.gemini_cli import GeminiCliReader

NAME = "gemini-cli-jsonl"
_OPS = ("$set", "$rewindTo")


class GeminiCliJsonlReader:
    name = NAME

    def confidence(self, path: Path, head_records: Sequence[Any]) -> Confidence:
        first = first_object(head_records)
        if isinstance(first, Confidence):
            return first
        if "sessionId" not in first or "id" in first or "type" in first:
            return refuse("line 1 is not a Gemini CLI chat's metadata (`sessionId`, no `id` or `type`)")
        if len(head_records) < 2:
            return refuse("no message lines")  # one object is the older whole-chat file (gemini-cli)
        for index, record in enumerate(head_records[1:], 2):
            if isinstance(record, NotJson):
                continue  # a damaged line is skipped when read, as in the other JSON-lines formats
            if not isinstance(record, dict) or not (("id" in record and "type" in record)
                                                    or any(op in record for op in _OPS)):
                return refuse(f"line {index}: neither a message (`id`, `type`) nor `$set` / `$rewindTo`")
        return sure(0.9)

    def read(self, path: Path, *, strict: bool = False) -> ImportedSession:
        skipped: list[SkippedRecord] = []
        chat = fold(record for _, record in json_lines(load_text(path), skipped))
        imported = GeminiCliReader().read(path, strict=strict, doc=chat)
        return replace(imported, source_path=path, skipped=(*skipped, *imported.skipped))


def fold(records: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """The chat a Gemini CLI log ends as: its metadata with a `messages` list."""
    metadata: dict[str, Any] = {}
    messages: dict[str, dict[str, Any]] = {}  # insertion order: the place of each id's first copy
    for record in records:
        if isinstance(record.get("$rewindTo"), str):
            ids = list(messages)
            start = ids.index(record["$rewindTo"]) if record["$rewindTo"] in messages else 0
            for dropped in ids[start:]:
                del messages[dropped]
        elif isinstance(record.get("id"), str) and "type" in record:
            messages[record["id"]] = record
        else:
            patch = record["$set"] if isinstance(record.get("$set"), dict) else record
            metadata.update({k: v for k, v in patch.items() if k != "messages"})
            if isinstance(patch.get("messages"), list):
                messages = {str(m.get("id", i)): m for i, m in enumerate(patch["messages"]) if isinstance(m, dict)}
    return {**metadata, "messages": list(messages.values())}
