"""A Codex CLI rollout (`~/.codex/sessions/…/rollout-*.jsonl`): `session_meta`, `turn_context`,
`response_item` and `event_msg` records, each with a `payload`.

`response_item` payloads carry the conversation: `message` (developer / user / assistant), `function_call`
and `custom_tool_call` (apply_patch) with their `*_output`, `local_shell_call`, `reasoning` (not imported,
SES-3), `web_search_call` (a search the API ran itself inside the response: its results are not in the
rollout, yet they are part of that response's input and of every later one, so the response's metadata
names it under `hosted_tools`). Consecutive model items form one response; a `token_count` event whose totals moved closes it
and gives its usage (`last_token_usage`). Codex 0.39 wrote that event before the response's items
instead (with its `agent_message` event): a file whose first such event comes before any response is read
that way, each response taking the usage written before it. The base instructions and developer messages
are the system prompt.

What the person typed: a user `message` item, and the `user_message` event Codex writes beside it. Codex
Desktop writes only the event, so an event whose text no user message since the last response holds is
imported as one (and a user item that follows it with the same text takes its place). The user items
Codex writes itself — the AGENTS.md instructions, `<environment_context>`, `<user_instructions>`, an
aborted turn's note, an image's wrapper tags — are marked `harness`. A `compacted` record (Codex's own
compaction) becomes a Nova summary marked `compaction`, covering everything before it: its
`replacement_history` when it has one (the history Codex went on with: the messages it kept and, from a
remote compaction, an encrypted summary item, whose `message` is then empty), else its `message`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from nova.fs.safe_read import loads
from nova.messages import (
    ImagePart,
    Message,
    Part,
    SummaryPart,
    TextPart,
    ToolResultPart,
    ToolUsePart,
    person_entries,
)
from nova.model import Usage
from nova.sessions.readers.base import Confidence, HeaderReader, ImportedSession, SkippedRecord, refuse, sure
from nova.sessions.readers.common import Builder, arguments, iso_ts, load_text, text_of

NAME = "codex"
_KINDS = ("session_meta", "turn_context", "response_item", "event_msg", "compacted")
_CALLS = ("function_call", "custom_tool_call", "local_shell_call")
_OUTPUTS = ("function_call_output", "custom_tool_call_output", "local_shell_call_output")
# Tools the API runs itself within one response, by item type, as `hosted_tools` names them.
_HOSTED = {"web_search_call": "web_search"}


class CodexReader(HeaderReader):
    name = NAME
    first_types = _KINDS
    expected = "session_meta or response_item"

    def header_confidence(self, first: dict[str, Any]) -> Confidence:
        if not isinstance(first.get("payload"), dict):
            return refuse("record 1: no `payload` object")
        return sure(0.95)

    def read(self, path: Path, *, strict: bool = False) -> ImportedSession:
        b = Builder()
        meta: dict[str, Any] = {}
        skipped: list[SkippedRecord] = []
        response: list[Part] = []
        hosted: list[str] = []  # the hosted tools the open response ran
        response_at: tuple[int, float | None] = (0, None)
        results: list[ToolResultPart] = []
        results_at = 0
        last_totals: Any = None
        usage_first: bool | None = None  # each response's token_count comes before its items (Codex 0.39)
        written_before: Usage | None = None  # there: the usage of the response that comes next
        covered_upto = 0
        counts = {"responses": 0, "tool_calls": 0, "tool_results": 0}

        def close(usage: Usage | None = None) -> None:
            nonlocal response, results, hosted, written_before
            if usage_first and usage is None and response:
                usage, written_before = written_before, None
            if response:
                metadata: dict[str, Any] = {"usage": usage.to_dict()} if usage is not None else {}
                if meta.get("model"):
                    metadata["model"] = meta["model"]
                if hosted:
                    metadata["hosted_tools"] = hosted
                b.add("assistant", response, response_at[0], response_at[1], metadata)
                counts["responses"] += 1
                hosted = []
            if results:
                b.add_results(results, results_at)
            response, results = [], []

        for number, line in enumerate(load_text(path).splitlines(), 1):
            if not line.strip():
                continue
            try:
                record = loads(line)
                kind, payload = record["type"], record.get("payload") or {}
                ts = iso_ts(record.get("timestamp"))
            except (ValueError, KeyError, TypeError) as exc:
                skipped.append(SkippedRecord(f"line {number}", f"not a rollout record ({exc!r})"))
                continue
            if kind == "session_meta":
                meta.update({k: payload[k] for k in ("id", "cwd", "cli_version", "originator") if k in payload})
                base = payload.get("base_instructions")
                text = base.get("text") if isinstance(base, dict) else base
                if isinstance(text, str) and text:
                    b.system.append(text)
            elif kind == "turn_context":
                if payload.get("model"):
                    meta["model"] = payload["model"]
            elif kind == "event_msg" and payload.get("type") == "token_count":
                info = payload.get("info")
                if isinstance(info, dict) and isinstance(info.get("model_context_window"), int):
                    meta["context_window"] = info["model_context_window"]  # what Codex let a request fill
                if isinstance(info, dict) and info.get("total_token_usage") != last_totals:
                    last_totals = info.get("total_token_usage")
                    if usage_first is None:
                        usage_first = not response and counts["responses"] == 0
                    if usage_first:
                        close()  # the open response, with the usage written before it
                        written_before = _usage(info.get("last_token_usage"))
                    else:
                        close(_usage(info.get("last_token_usage")))
            elif kind == "response_item":
                item = payload.get("type")
                if item == "message" and payload.get("role") == "assistant":
                    if results:
                        close()
                    if not response:
                        response_at = (number, ts)
                    response.extend(_parts(payload.get("content")))
                elif item in _CALLS:
                    if results:
                        close()
                    if not response:
                        response_at = (number, ts)
                    response.append(_call(payload, number))
                    counts["tool_calls"] += 1
                elif item in _OUTPUTS:
                    output = payload.get("output")
                    results_at = results_at if results else number
                    results.append(ToolResultPart(tool_use_id=str(payload.get("call_id")), content=_output(output)))
                    counts["tool_results"] += 1
                elif item == "message":
                    close()
                    parts = _parts(payload.get("content"))
                    if payload.get("role") in ("developer", "system"):
                        b.system.append(text_of(payload.get("content")))
                    elif parts:
                        last = b.messages[-1] if b.messages else None
                        if last is not None and last.metadata.get("from_event") and _typed_in(last, parts):
                            b.messages.pop()  # the event came first; the item holds the same words, and more
                        b.add("user", parts, number, ts)
                elif item in _HOSTED:
                    if results:
                        close()
                    hosted.append(_HOSTED[item])
                # reasoning: never imported (SES-3)
            elif kind == "event_msg" and payload.get("type") == "user_message":
                text = str(payload.get("message") or "")
                if text.strip() and not _typed_since_response(b.messages, text):
                    close()
                    b.add("user", [TextPart(text)], number, ts, {"from_event": True})
            elif kind == "compacted":
                close()
                summary = _compaction_text(payload)
                if summary:
                    covers = tuple(m.id for m in b.messages[covered_upto:])
                    b.add("user", [SummaryPart(summary, covers=covers)], number, ts,
                          {"compaction": {"source": "codex", "trigger": "auto"}})
                    covered_upto = len(b.messages)
        close()
        meta["source_counts"] = counts
        return ImportedSession(messages=b.messages, system="\n\n".join(b.system), format=NAME, source_path=path,
                               meta=meta, skipped=tuple(skipped))


def _compaction_text(payload: dict[str, Any]) -> str:
    """What a `compacted` record put in place of the history before it. Codex's remote compaction writes
    an empty `message` and the new history in `replacement_history`: the messages kept (each under its
    role) and a `compaction` item whose summary is encrypted; read as the message alone, the compaction
    would vanish."""
    history = payload.get("replacement_history")
    kept: list[str] = []
    for item in history if isinstance(history, list) else ():
        if not isinstance(item, dict):
            continue
        if item.get("type") == "message":
            content = item.get("content")
            body = "\n".join(str(b["text"]) for b in content if isinstance(b, dict) and b.get("text")) \
                if isinstance(content, list) else str(content or "")
            if body.strip():
                kept.append(f"[{item.get('role') or 'user'}]\n{body}")
        elif item.get("type") == "compaction":
            kept.append("[the provider's compaction summary: encrypted, not readable here]")
    if kept:
        return "\n\n".join(kept)
    message = payload.get("message")
    return message.strip() if isinstance(message, str) else ""


# User items Codex writes itself, never the person: project instructions, the environment, an aborted
# turn's note, the tags around an attached image.
_HARNESS_TEXT = ("# AGENTS.md instructions", "<environment_context>", "<user_instructions>", "<turn_aborted>",
                 "<image name=", "</image>")


def _typed_since_response(messages: list[Message], text: str) -> bool:
    """Whether a user message since the last response already holds `text` (the item Codex CLI writes
    before its event)."""
    wanted = text.strip()
    for m in reversed(messages):
        if m.role == "assistant":
            return False
        if any(wanted in typed for _, typed in person_entries(m)):
            return True
    return False


def _typed_in(message: Message, parts: list[Part]) -> bool:
    typed = "\n\n".join(p.text for p in parts if isinstance(p, TextPart) and not p.harness)
    return all(text.strip() in typed for _, text in person_entries(message))


def _parts(content: Any) -> list[Part]:
    parts: list[Part] = []
    for block in content if isinstance(content, list) else ():
        if not isinstance(block, dict):
            continue
        if block.get("type") in ("input_text", "output_text", "text") and block.get("text"):
            text = str(block["text"])
            parts.append(TextPart(text, harness=text.lstrip().startswith(_HARNESS_TEXT)))
        elif block.get("type") == "input_image":
            parts.append(ImagePart(url=str(block.get("image_url", ""))))
    return parts


def _call(payload: dict[str, Any], number: int) -> ToolUsePart:
    call_id = str(payload.get("call_id") or payload.get("id") or f"call-{number}")
    if payload.get("type") == "custom_tool_call":
        return ToolUsePart(id=call_id, name=str(payload.get("name", "")), input={"input": payload.get("input", "")})
    if payload.get("type") == "local_shell_call":
        action = payload.get("action") or {}
        return ToolUsePart(id=call_id, name="local_shell", input=dict(action) if isinstance(action, dict) else {})
    return ToolUsePart(id=call_id, name=str(payload.get("name", "")), input=arguments(payload.get("arguments")))


def _output(output: Any) -> str:
    if isinstance(output, str):
        return output
    if isinstance(output, dict) and isinstance(output.get("content"), str):
        return str(output["content"])
    return json.dumps(output, ensure_ascii=False)


def _usage(last: Any) -> Usage | None:
    if not isinstance(last, dict):
        return None
    cached = int(last.get("cached_input_tokens") or 0)
    return Usage(input_tokens=max(0, int(last.get("input_tokens") or 0) - cached), cache_read_tokens=cached,
                 output_tokens=int(last.get("output_tokens") or 0),
                 reasoning_tokens=int(last.get("reasoning_output_tokens") or 0))
