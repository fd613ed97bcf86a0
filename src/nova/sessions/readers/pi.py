"""A pi coding-agent session (`~/.pi/agent/sessions/…/*.jsonl`): a `session` header, then entries linked
by `id` / `parentId` (a tree: going back and trying again starts a branch). The conversation read is the
branch ending at the last entry; entries on abandoned branches are counted in
`meta["abandoned_entries"]`. Message roles: `user`, `assistant` (content `text`, `thinking` — not
imported, SES-3 — and `toolCall`), `toolResult`, and `bashExecution` (a command the user ran, which the
model sees unless `excludeFromContext`: its text, written by pi, is marked `harness`). pi's own compaction
(a `compaction` entry with its `summary`) and a `branch_summary` become Nova summaries marked
`compaction`, covering what came before them on the branch."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nova.messages import ImagePart, Part, SummaryPart, TextPart, ToolResultPart, ToolUsePart
from nova.model import Usage
from nova.sessions.readers.base import Confidence, HeaderReader, ImportedSession, SkippedRecord, refuse, sure
from nova.sessions.readers.common import (
    BlockConverter,
    Builder,
    arguments,
    content_parts,
    iso_ts,
    json_lines,
    load_text,
    text_of,
)

NAME = "pi"


class PiReader(HeaderReader):
    name = NAME
    first_types = ("session",)
    expected = "'session'"

    def header_confidence(self, first: dict[str, Any]) -> Confidence:
        if "version" not in first or "id" not in first:
            return refuse("record 1: a `session` header without `version` and `id`")
        return sure(0.9)

    def read(self, path: Path, *, strict: bool = False) -> ImportedSession:
        entries: dict[str, dict[str, Any]] = {}
        order: list[str] = []
        meta: dict[str, Any] = {}
        skipped: list[SkippedRecord] = []
        for number, record in json_lines(load_text(path), skipped):
            if record.get("type") == "session":
                meta.update({k: record[k] for k in ("id", "cwd", "version") if k in record})
                continue
            entry_id = str(record.get("id") or f"line-{number}")
            record["_line"] = number
            entries[entry_id] = record
            order.append(entry_id)
        branch: list[dict[str, Any]] = []
        at = order[-1] if order else None
        seen: set[str] = set()
        while at is not None and at in entries and at not in seen:
            seen.add(at)
            branch.append(entries[at])
            parent = entries[at].get("parentId")
            at = str(parent) if parent is not None else None
        branch.reverse()
        meta["abandoned_entries"] = len(order) - len(branch)
        b = Builder()
        counts = {"responses": 0, "tool_calls": 0, "tool_results": 0}
        covered_upto = 0
        for entry in branch:
            kind = entry.get("type")
            message = entry.get("message") if kind == "message" else None
            if isinstance(message, dict):
                role, content = message.get("role"), message.get("content")
                counts["responses"] += role == "assistant"
                counts["tool_results"] += role == "toolResult"
                if role == "assistant" and isinstance(content, list):
                    counts["tool_calls"] += sum(isinstance(c, dict) and c.get("type") == "toolCall" for c in content)
            if kind == "model_change" and entry.get("modelId"):
                meta["model"] = entry["modelId"]
            if kind in ("compaction", "branch_summary") and isinstance(entry.get("summary"), str):
                covers = tuple(m.id for m in b.messages[covered_upto:])
                b.add("user", [SummaryPart(entry["summary"], covers=covers)], entry["_line"],
                      iso_ts(entry.get("timestamp")), {"compaction": {"source": "pi", "trigger": kind,
                                                                       "tokens_before": entry.get("tokensBefore", 0)}})
                covered_upto = len(b.messages)
                continue
            if kind != "message":
                continue
            try:
                _message(b, entry, meta)
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                skipped.append(SkippedRecord(f"line {entry['_line']}", f"message could not be read: {exc!r}"))
        meta["source_counts"] = counts
        return ImportedSession(messages=b.messages, system="", format=NAME, source_path=path, meta=meta,
                               skipped=tuple(skipped))


def _message(b: Builder, entry: dict[str, Any], meta: dict[str, Any]) -> None:
    m = entry["message"]
    role, number, ts = m["role"], entry["_line"], iso_ts(entry.get("timestamp"))
    if role == "user":
        b.add("user", _parts(m.get("content")) or [TextPart("")], number, ts)
    elif role == "assistant":
        metadata: dict[str, Any] = {}
        usage = m.get("usage")
        if isinstance(usage, dict):
            metadata["usage"] = Usage(input_tokens=int(usage.get("input") or 0),
                                      output_tokens=int(usage.get("output") or 0),
                                      cache_read_tokens=int(usage.get("cacheRead") or 0),
                                      cache_write_tokens=int(usage.get("cacheWrite") or 0)).to_dict()
            cost = usage.get("cost")
            if isinstance(cost, dict) and isinstance(cost.get("total"), int | float):
                metadata["cost_usd"] = float(cost["total"])
        if m.get("model"):
            metadata["model"] = m["model"]
        b.add("assistant", _parts(m.get("content")) or [TextPart("")], number, ts, metadata)
    elif role == "toolResult":
        b.add_results([ToolResultPart(tool_use_id=str(m["toolCallId"]), content=text_of(m.get("content")),
                                      is_error=bool(m.get("isError", False)))], number, ts)
    elif role == "bashExecution" and not m.get("excludeFromContext"):
        b.add("user", [TextPart(f"I ran `{m.get('command', '')}` (exit {m.get('exitCode')}):\n{m.get('output', '')}",
                                harness=True)], number, ts, {"user_shell": True})


_BLOCKS: Mapping[str, BlockConverter] = {
    "toolCall": lambda block: ToolUsePart(id=str(block["id"]), name=str(block["name"]),
                                          input=arguments(block.get("arguments"))),
    "image": lambda block: ImagePart(media_type=str(block.get("mimeType", "")), data=str(block.get("data", ""))),
}


def _parts(content: Any) -> list[Part]:
    return content_parts(content, _BLOCKS)
