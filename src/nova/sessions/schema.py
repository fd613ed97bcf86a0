"""The transcript record schema, version 1: what one line of `transcript.jsonl` means.

Every line is one JSON object ending in a newline. Keys common to all records:

    v       int     schema version of this record (1). A reader refuses a record whose version it does
                    not know instead of guessing, and changes nothing on disk when it does.
    type    str     "message" | "compact_boundary" | "event"
    ts      float   seconds since the epoch when the record was written

`message` — one user or assistant message, provider-neutral (SES-2):

    message dict    `nova.messages.to_dict(...)` with thinking parts removed (SES-3): tool_use parts in
                    the assistant message, tool_result parts inline in the following user message
    usage   dict?   normalized `Usage.to_dict()` of the model call that produced this message, or null

`compact_boundary` — written by a compaction (SES-4). Resume starts here and ignores everything before:

    id              str     id of the boundary
    summary         str     the summary text
    trigger         str     "threshold" | "overflow" | "manual" | ...
    tokens_before   int     context size before compaction
    tokens_after    int     context size after compaction
    duration_ms     float   how long the compaction took
    covers          [str]   ids of the messages folded into the summary
    messages        [dict]  the head of the new working history (summary message, restore attachment,
                            the verbatim tail), so that resume never has to read before the boundary.
                            Empty means "a summary message built from `summary`".
    receipt         dict?   what the compaction cost and saves (`nova.context.receipt`); absent in
                            older records

`event` — a system event for audit (tool metadata, permission decisions, snips, imports):

    name    str
    data    dict

Writers put `v` and `type` first so a reader can recognise a record kind from its first bytes.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from nova.errors import SchemaVersionError, StorageError, TaskStateConflict
from nova.fs.safe_read import JSONTooDeep, loads
from nova.messages import Message, SummaryPart, ThinkingPart, from_dict, to_dict
from nova.model import Usage

__all__ = [
    "SCHEMA_VERSION",
    "BoundaryRecord",
    "EventRecord",
    "MessageRecord",
    "Record",
    "SchemaVersionError",
    "boundary_record",
    "encode",
    "event_record",
    "json_text",
    "message_json",
    "message_record",
    "parse_record",
    "printable",
    "record_from_json",
    "strip_thinking",
    "task_state_text",
    "write_task_state",
]

SCHEMA_VERSION = 1
RecordType = Literal["message", "compact_boundary", "event"]


@dataclass(frozen=True, slots=True)
class MessageRecord:
    message: Message
    usage: Usage | None = None
    ts: float = 0.0
    type: Literal["message"] = "message"


@dataclass(frozen=True, slots=True)
class BoundaryRecord:
    id: str
    summary: str
    trigger: str = "threshold"
    tokens_before: int = 0
    tokens_after: int = 0
    duration_ms: float = 0.0
    covers: tuple[str, ...] = ()
    messages: tuple[Message, ...] = ()
    ts: float = 0.0
    receipt: dict[str, Any] | None = None
    type: Literal["compact_boundary"] = "compact_boundary"

    def head(self) -> list[Message]:
        """The working history a resume starts from."""
        if self.messages:
            return list(self.messages)
        return [
            Message(
                role="user",
                parts=(SummaryPart(f"[Previous conversation summary]\n{self.summary}", covers=self.covers),),
                id=f"{self.id}.summary",
                created_at=self.ts,
            )
        ]


@dataclass(frozen=True, slots=True)
class EventRecord:
    name: str
    data: Mapping[str, Any] = field(default_factory=dict)
    ts: float = 0.0
    type: Literal["event"] = "event"


Record = MessageRecord | BoundaryRecord | EventRecord


def strip_thinking(message: Message) -> Message:
    """SES-3: thinking signatures mean something only inside one tool loop, so they never reach disk."""
    if not any(isinstance(p, ThinkingPart) for p in message.parts):
        return message
    return message.with_parts(p for p in message.parts if not isinstance(p, ThinkingPart))


def message_record(message: Message, usage: Usage | None = None, *, ts: float | None = None) -> dict[str, Any]:
    return {
        "v": SCHEMA_VERSION,
        "type": "message",
        "ts": time.time() if ts is None else ts,
        "message": to_dict(strip_thinking(message)),
        "usage": usage.to_dict() if usage is not None else None,
    }


def boundary_record(boundary: BoundaryRecord, *, ts: float | None = None) -> dict[str, Any]:
    """The line a compaction boundary is written as (`boundary.ts` is what a parsed line carries; the
    line written gets `ts`, or now)."""
    record: dict[str, Any] = {
        "v": SCHEMA_VERSION,
        "type": "compact_boundary",
        "ts": time.time() if ts is None else ts,
        "id": boundary.id,
        "summary": boundary.summary,
        "trigger": boundary.trigger,
        "tokens_before": int(boundary.tokens_before),
        "tokens_after": int(boundary.tokens_after),
        "duration_ms": float(boundary.duration_ms),
        "covers": list(boundary.covers),
        "messages": [to_dict(strip_thinking(m)) for m in boundary.messages],
    }
    if boundary.receipt is not None:
        record["receipt"] = dict(boundary.receipt)
    return record


def event_record(name: str, data: Mapping[str, Any], *, ts: float | None = None) -> dict[str, Any]:
    return {
        "v": SCHEMA_VERSION,
        "type": "event",
        "ts": time.time() if ts is None else ts,
        "name": name,
        "data": dict(data),
    }


def encode(record: Mapping[str, Any]) -> bytes:
    """One record as one line. Non-English text stays readable in the raw log; json never emits a raw
    newline inside a string, so the line cannot be split."""
    try:
        return (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: see `json_text`
        return (json.dumps(record, ensure_ascii=True, separators=(",", ":")) + "\n").encode("utf-8")


def json_text(value: Any, **options: Any) -> str:
    """JSON that is always valid UTF-8, losing nothing. Text is kept readable (`ensure_ascii=False`)
    unless it holds a lone surrogate (a prompt from a badly encoded terminal, bytes a tool could not
    decode, a model's broken escape), which UTF-8 cannot carry: then every non-ASCII character is
    written as a JSON escape, and reading the record back gives the same string."""
    text = json.dumps(value, ensure_ascii=False, **options)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(value, ensure_ascii=True, **options)
    return text


def message_json(message: Message) -> str:
    """A message as the stores keep it: its JSON text, thinking stripped (SES-3)."""
    return json_text(to_dict(strip_thinking(message)))


def task_state_text(session_id: str, state: Mapping[str, Any]) -> str:
    """A task state as the stores keep it (sorted keys); a value JSON cannot hold is a StorageError."""
    try:
        return json_text(dict(state), sort_keys=True)
    except (TypeError, ValueError) as exc:
        raise StorageError(f"task state for {session_id} is not JSON-serializable: {exc}") from None


def write_task_state(
    session_id: str,
    state: Mapping[str, Any],
    expected_version: int | None,
    *,
    upsert: Callable[[str, float], int],
    insert_new: Callable[[str, float], int],
    update_at: Callable[[str, float, int], int],
) -> int:
    """The compare-and-set rule of `SessionStore.put_task_state`, kept once for every store; the store
    gives the three statements, each called with the state's text and the time. No expected version:
    `upsert` writes unconditionally and returns the version it stored. 0: `insert_new` adds the row only
    where none is. Any other: `update_at` rewrites the row only at that version. Each is one statement,
    so the check and the write are atomic even against another connection (another process) writing the
    same row; the last two return the rows they changed, and none changed is a `TaskStateConflict`."""
    text = task_state_text(session_id, state)
    now = time.time()
    if expected_version is None:
        return upsert(text, now)
    changed = insert_new(text, now) if expected_version == 0 else update_at(text, now, expected_version)
    if changed != 1:
        raise TaskStateConflict(session_id, expected_version)
    return expected_version + 1


def printable(text: str) -> str:
    """`text` with each lone surrogate replaced by U+FFFD, for plain-text fields (a title) that are
    stored as text rather than JSON."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _ids(values: Any) -> tuple[str, ...]:
    """`tuple(str(v) for v in values)`, fast for the usual list of strings: a late boundary covers every
    message folded so far, 100,000s of ids, and resume reads it. `str.join` is a C loop that refuses
    anything but a str, so a list it takes needs no conversion."""
    try:
        "".join(values)
    except TypeError:
        return tuple(str(v) for v in values)
    return tuple(values)


def check_version(data: Mapping[str, Any], where: str) -> None:
    version = data.get("v")
    if not isinstance(version, int) or isinstance(version, bool):
        raise StorageError(f"{where}: record has no schema version ('v'); the file is not a Nova transcript")
    if version > SCHEMA_VERSION:
        raise SchemaVersionError(
            f"{where}: record has schema version {version}, this Nova reads up to version "
            f"{SCHEMA_VERSION}; upgrade Nova to open this session (nothing was changed)"
        )


def parse_record(line: bytes | str, where: str) -> Record:
    """Decode one line. Raises `StorageError` naming `where` for anything that is not a valid record."""
    try:
        data = loads(line, where=where)
    except JSONTooDeep as exc:
        raise StorageError(str(exc)) from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise StorageError(f"{where}: not valid JSON ({exc})") from None
    return record_from_json(data, where)


def record_from_json(data: Any, where: str) -> Record:
    """The record a decoded line holds (`parse_record` without the decoding, for readers that decode
    many lines their own way). Raises `StorageError` naming `where` like `parse_record`."""
    if not isinstance(data, dict):
        raise StorageError(f"{where}: a record must be a JSON object")
    check_version(data, where)
    kind = data.get("type")
    try:
        if kind == "message":
            usage = data.get("usage")
            return MessageRecord(
                message=from_dict(data["message"]),
                usage=Usage.from_dict(usage) if isinstance(usage, Mapping) else None,
                ts=float(data.get("ts", 0.0)),
            )
        if kind == "compact_boundary":
            return BoundaryRecord(
                id=str(data["id"]),
                summary=str(data.get("summary", "")),
                trigger=str(data.get("trigger", "threshold")),
                tokens_before=int(data.get("tokens_before", 0)),
                tokens_after=int(data.get("tokens_after", 0)),
                duration_ms=float(data.get("duration_ms", 0.0)),
                covers=_ids(data.get("covers", ())),
                messages=tuple(from_dict(m) for m in data.get("messages", ())),
                ts=float(data.get("ts", 0.0)),
                receipt=dict(data["receipt"]) if isinstance(data.get("receipt"), Mapping) else None,
            )
        if kind == "event":
            return EventRecord(name=str(data["name"]), data=dict(data.get("data") or {}), ts=float(data.get("ts", 0.0)))
    except (KeyError, TypeError, ValueError) as exc:
        raise StorageError(f"{where}: malformed {kind} record ({exc})") from None
    raise StorageError(f"{where}: unknown record type {kind!r}")
