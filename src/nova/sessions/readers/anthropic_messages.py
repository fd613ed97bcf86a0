"""A plain list of Anthropic Messages (`role` user/assistant, `content` blocks), as Cline and Roo Code keep
in `api_conversation_history.json`.

Cline answers a tool call with a text block `[read_file for 'x'] Result: …` rather than a `tool_result`;
such a block right after the call becomes that call's result, in order. Cline puts each response's usage
in `metrics.tokens`: `prompt`, `completion` and `cached`, which is the cache reads and writes together
(the `ui_messages.json` beside it has them apart: `cached` is always their sum). Without that file the
split is estimated: a call reads what the previous call had cached, and writes the rest (exact while the
cache stays warm; `meta["cache_split_estimated"]` counts the calls). In a Cline user message only the
blocks in `<task>`, `<feedback>`, `<answer>` or `<user_message>` tags are what the person typed; the rest
(`<environment_details>`, its progress reminders, "The user has provided feedback…") is Cline's and marked
`harness`.

Roo Code adds fields to each message: `ts` (epoch milliseconds: the message times), `isSummary` (its own
context condensing: the summary becomes a Nova summary marked `compaction`, covering the messages tagged
`condenseParent` with its `condenseId`), `isTruncationMarker` (its sliding window's marker, not a
message: counted in `meta["truncation_markers"]`), and stores reasoning as items of their own
(`type: "reasoning"`, often without a role), which are never imported (SES-3).

Neither keeps usage beside every message; both keep it in `ui_messages.json` next to the history: each
`api_req_started` entry's text holds `tokensIn`, `tokensOut`, `cacheWrites`, `cacheReads` and `cost`.
Those become the usage of the responses that lack one or have only Cline's lumped `metrics`, matched by
time when the messages have `ts`, else in order when the counts agree (`meta["usage_from"]` says which)."""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from nova.errors import FileRefused
from nova.fs.safe_read import loads, read_bytes
from nova.messages import Message, Part, SummaryPart, TextPart, ToolResultPart, ToolUsePart
from nova.model import Usage
from nova.sessions.readers.base import Confidence, ImportedSession, refuse, sure
from nova.sessions.readers.common import MAX_IMPORT_BYTES, Builder, anthropic_parts, load_document, text_of
from nova.sessions.readers.openai_chat import ANTHROPIC_BLOCKS, ChatListReader

NAME = "anthropic"
_CLINE_RESULT = re.compile(r"\[([\w.-]+)(?: for .*?)?\] (Result|Error):", re.ASCII | re.DOTALL)
UI_MESSAGES = "ui_messages.json"
HISTORY = "api_conversation_history.json"
"""The conversation file of a Cline / Roo Code task folder."""


def _is_reasoning_item(m: Any) -> bool:
    return isinstance(m, dict) and m.get("type") == "reasoning"


class AnthropicMessagesReader(ChatListReader):
    name = NAME

    def messages_confidence(self, items: list[Any]) -> Confidence:
        blocks = False
        for index, m in enumerate(items):
            if not isinstance(m, dict):
                return refuse(f"message {index}: not an object")
            if _is_reasoning_item(m):
                continue
            role = m.get("role")
            if role not in ("user", "assistant"):
                return refuse(f"message {index}: `role` is {role!r}, expected user or assistant")
            if "tool_calls" in m:
                return refuse(f"message {index}: has OpenAI `tool_calls`")
            content = m.get("content")
            if isinstance(content, list):
                blocks = blocks or any(isinstance(b, dict) and b.get("type") in ANTHROPIC_BLOCKS for b in content)
            # Roo's condensing and Cline's per-response `modelInfo` / `metrics` are theirs alone: a task
            # of text only is still theirs, and its usage is only read here.
            blocks = blocks or any(key in m for key in ("isSummary", "condenseParent", "modelInfo", "metrics"))
        # With tool blocks it is certainly Anthropic; plain text messages read the same either way.
        return sure(0.95) if blocks else sure(0.5)

    def read(self, path: Path, *, strict: bool = False) -> ImportedSession:
        doc = load_document(path)
        items = doc if isinstance(doc, list) else doc["messages"]
        a = _Assembly()
        for index, m in enumerate(items):
            a.message(index, m)
        meta: dict[str, Any] = {"source_counts": a.counts}
        if a.reasoning_items:
            meta["reasoning_items"] = a.reasoning_items
        if a.markers:
            meta["truncation_markers"] = a.markers
        messages = a.finish()
        filled, how = _usage_from_ui_messages(path.parent / UI_MESSAGES, messages, a.estimated)
        if how:
            meta["usage_from"] = how
        # A call whose lumped `cached` is 0 has nothing to split: its figures are the recorded ones.
        split = {i for i, usage in a.estimated.items()
                 if usage.get("cache_read_tokens") or usage.get("cache_write_tokens")}
        if estimated := len(split - filled):
            meta["cache_split_estimated"] = estimated
        # Every Cline / Roo task's file has the same name: the task folder's (its id) names the session.
        return ImportedSession(messages=messages, system="\n\n".join(a.b.system), format=NAME, source_path=path,
                               meta=meta, title=path.parent.name if path.name == HISTORY else "")


@dataclass(slots=True)
class _Assembly:
    b: Builder = field(default_factory=Builder)
    open_calls: list[ToolUsePart] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=lambda: {"responses": 0, "tool_calls": 0, "tool_results": 0})
    reasoning_items: int = 0
    markers: int = 0
    cline_cached: int = 0
    """The previous Cline response's `metrics.tokens.cached`: what the next call can read from the cache."""
    estimated: dict[int, dict[str, int]] = field(default_factory=dict)
    """Position of each response whose usage splits Cline's lumped `cached` by estimate -> that usage."""
    condensed: dict[str, list[str]] = field(default_factory=dict)
    """Roo's `condenseParent` -> the ids of the messages its summary replaced."""
    summaries: list[tuple[int, str]] = field(default_factory=list)
    """(position in the messages, condenseId) of each Roo summary, for its `covers` once all are read."""

    def message(self, index: int, m: dict[str, Any]) -> None:
        if _is_reasoning_item(m):
            self.reasoning_items += 1
            return
        if m.get("isTruncationMarker"):
            self.markers += 1
            return
        role = m["role"]
        ts = m["ts"] / 1000 if isinstance(m.get("ts"), int | float) and m["ts"] > 0 else None
        if m.get("isSummary"):
            self.summaries.append((len(self.b.messages), str(m.get("condenseId") or "")))
            self.b.add("user", [SummaryPart(text_of(m.get("content")))], index, ts,
                       {"compaction": {"source": "roo", "trigger": "auto"}})
        elif role == "assistant":
            parts = anthropic_parts(m.get("content"))
            self.open_calls = [p for p in parts if isinstance(p, ToolUsePart)]
            self.counts["responses"] += 1
            self.counts["tool_calls"] += len(self.open_calls)
            metadata = _metadata(m)
            tokens = _cline_tokens(m)
            if tokens is not None:
                usage = _cline_usage(tokens, self.cline_cached)
                self.cline_cached = int(tokens.get("cached") or 0)
                self.estimated[len(self.b.messages)] = usage
                metadata["usage"] = usage
            self.b.add("assistant", parts or [TextPart("")], index, ts, metadata)
        elif role == "user":
            parts = anthropic_parts(m.get("content"), with_result_images=True)
            parts = _cline_marked(_pair_text_results(parts, self.open_calls))
            self.open_calls = []
            # A provider wants the results first, in call order.
            results = [p for p in parts if isinstance(p, ToolResultPart)]
            others = [p for p in parts if not isinstance(p, ToolResultPart)]
            self.counts["tool_results"] += len(results)
            self.b.add("user", [*results, *others] or [TextPart("")], index, ts)
        elif role == "system":
            self.b.system.append(text_of(m.get("content")))
        else:
            raise ValueError(f"message {index}: unexpected role {role!r}")
        if m.get("condenseParent") and not m.get("isSummary"):
            self.condensed.setdefault(str(m["condenseParent"]), []).append(self.b.messages[-1].id)

    def finish(self) -> list[Message]:
        messages = self.b.messages
        for position, condense_id in self.summaries:
            summary = messages[position]
            part = summary.parts[0]
            if isinstance(part, SummaryPart):
                covered = tuple(self.condensed.get(condense_id, ())) if condense_id else ()
                messages[position] = summary.with_parts([SummaryPart(part.text, covers=covered)])
        return messages


_CLINE_TYPED = re.compile(r"^\s*<(?:task|feedback|answer|user_message)>")
_CLINE_OWN = ("<environment_details>", "[TASK RESUMPTION]")


def _cline_marked(parts: list[Part]) -> list[Part]:
    """In a Cline user message (it has a tagged block or Cline's environment details), the text blocks not
    in a typed tag are Cline's own (`harness`); any other user message is left as it is."""
    texts = [p.text.lstrip() for p in parts if isinstance(p, TextPart)]
    if not any(_CLINE_TYPED.match(t) or t.startswith(_CLINE_OWN) for t in texts):
        return parts
    return [TextPart(p.text, harness=True) if isinstance(p, TextPart) and not _CLINE_TYPED.match(p.text) else p
            for p in parts]


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
    info = m.get("modelInfo")
    if isinstance(info, dict) and info.get("modelId"):
        metadata["model"] = str(info["modelId"])
    return metadata


def _cline_tokens(m: dict[str, Any]) -> dict[str, Any] | None:
    metrics = m.get("metrics")
    tokens = metrics.get("tokens") if isinstance(metrics, dict) else None
    return tokens if isinstance(tokens, dict) else None


def _cline_usage(tokens: dict[str, Any], previous_cached: int) -> dict[str, int]:
    """A Cline response's usage from its `metrics.tokens`: `cached` holds the reads and the writes, split
    as a warm cache splits them (the previous call's cached prefix read, the rest written)."""
    cached = int(tokens.get("cached") or 0)
    read = min(cached, previous_cached)
    return Usage(input_tokens=int(tokens.get("prompt") or 0), output_tokens=int(tokens.get("completion") or 0),
                 cache_read_tokens=read, cache_write_tokens=cached - read).to_dict()


def _usage_from_ui_messages(ui_path: Path, messages: list[Message], estimated: Collection[int]
                            ) -> tuple[set[int], str]:
    """Fill in the usage of responses that have none, or only Cline's estimated split (`estimated`), from
    the `api_req_started` entries of Cline's / Roo's `ui_messages.json`; returns the positions filled and
    how they were matched ("time", "order"; "" when nothing was filled)."""
    lacking = [i for i, m in enumerate(messages)
               if m.role == "assistant" and ("usage" not in m.metadata or i in estimated)]
    if not lacking or not ui_path.is_file():
        return set(), ""
    try:
        entries = loads(read_bytes(ui_path, limit=MAX_IMPORT_BYTES, what="a ui_messages.json")
                        .decode("utf-8", errors="replace"), where=str(ui_path))
    except (OSError, ValueError, FileRefused):
        return set(), ""
    requests: list[tuple[float, Usage, float | None]] = []
    for entry in entries if isinstance(entries, list) else ():
        if not isinstance(entry, dict) or entry.get("say") != "api_req_started":
            continue
        try:
            info = loads(str(entry.get("text") or "{}"))
        except ValueError:
            continue
        if not isinstance(info, dict) or "tokensIn" not in info:
            continue  # a request still running or cancelled before any figure
        usage = Usage(input_tokens=int(info.get("tokensIn") or 0), output_tokens=int(info.get("tokensOut") or 0),
                      cache_write_tokens=int(info.get("cacheWrites") or 0),
                      cache_read_tokens=int(info.get("cacheReads") or 0))
        cost = info.get("cost")
        requests.append((float(entry.get("ts") or 0) / 1000, usage, float(cost) if isinstance(cost, int | float) else None))
    timed = all(messages[i].created_at > 0 for i in lacking) and all(at > 0 for at, _, _ in requests)
    if timed:
        # Each response gets the latest request started before it, each request used once.
        pairs, used = [], -1
        for i in lacking:
            found = max((k for k, (at, _, _) in enumerate(requests) if k > used and at <= messages[i].created_at),
                        default=None)
            if found is not None:
                pairs.append((i, requests[found]))
                used = found
        how = "time"
    elif len(requests) == len(lacking):
        pairs, how = list(zip(lacking, requests, strict=True)), "order"
    else:
        return set(), ""
    for i, (_, usage, cost) in pairs:
        extra: dict[str, Any] = {"usage": usage.to_dict()}
        if cost is not None:
            extra["cost_usd"] = cost
        messages[i] = replace(messages[i], metadata={**messages[i].metadata, **extra})
    return {i for i, _ in pairs}, how if pairs else ""
