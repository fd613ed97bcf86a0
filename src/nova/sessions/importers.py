"""Readers of recorded agent sessions into Nova messages (`nova sessions import`, later `nova replay`).

    imported = read_session_file(path)      # format detected from the content
    imported.messages, imported.system, imported.format, imported.meta

Formats:
    nova            a Nova `transcript.jsonl` (or a session directory holding one)
    mini-swe-agent  `.traj.json`: OpenAI-shaped messages, one ```bash block per assistant turn; each block
                    becomes a `bash` tool_use {command} and the next user message its tool_result.
                    `extra.response.usage` is kept as normalized usage in message metadata.
    swe-agent       `.traj`: `history` with native `tool_calls` and `tool` messages
    openai          a list of chat messages, or an object with `messages`
    claude-code     Claude Code session JSONL (`type` user/assistant records, `message.content` blocks)

Imported ids are derived from positions in the source (`m00012`), so importing a file twice gives the
same messages. Thinking blocks are not imported (SES-3).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from nova.core import Usage, usage_of
from nova.errors import SessionImportError
from nova.messages import ImagePart, Message, Part, TextPart, ToolResultPart, ToolUsePart
from nova.sessions.schema import EventRecord, MessageRecord
from nova.sessions.transcript import TRANSCRIPT_NAME, Transcript

__all__ = ["FORMATS", "ImportedSession", "SessionImportError", "detect_format", "read_session_file", "usage_of"]

FORMATS = ("nova", "mini-swe-agent", "swe-agent", "openai", "claude-code")
SYSTEM_PROMPT_EVENT = "system_prompt"
IMPORTED_EVENT = "imported"


@dataclass(frozen=True, slots=True)
class ImportedSession:
    messages: list[Message]
    system: str
    format: str
    source_path: Path
    meta: dict[str, Any] = field(default_factory=dict)


def read_session_file(path: str | Path, *, strict: bool = False) -> ImportedSession:
    """Read a recorded session. A Nova transcript's damaged lines are skipped and described in
    `meta["damaged_records"]` (with `strict`, refused naming the offset)."""
    source = Path(path)
    fmt, data = _sniff(source)
    reader = _READERS[fmt]
    try:
        if fmt == "nova":
            messages, system, meta = _read_nova(data, source, strict=strict)
        else:
            messages, system, meta = reader(data, source)
    except SessionImportError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise SessionImportError(f"{source}: looks like {fmt} but could not be read: {exc!r}") from None
    return ImportedSession(messages=messages, system=system, format=fmt, source_path=source, meta=meta)


def detect_format(path: str | Path) -> str:
    return _sniff(Path(path))[0]


# -- detection ---------------------------------------------------------------------------------------
def _sniff(path: Path) -> tuple[str, Any]:
    if path.is_dir():
        if (path / TRANSCRIPT_NAME).is_file():
            return "nova", path / TRANSCRIPT_NAME
        raise SessionImportError(f"{path} is a directory without a {TRANSCRIPT_NAME}")
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise SessionImportError(f"{path} does not exist") from None
    except OSError as exc:
        raise SessionImportError(f"cannot read {path}: {exc.strerror}") from None
    text = raw.decode("utf-8", errors="replace").lstrip("\ufeff")
    try:
        document = json.loads(text)
    except ValueError:
        document = None
    if document is not None:
        fmt = _classify_document(document)
        if fmt:
            return fmt, document
    first = _first_json_line(text)
    if isinstance(first, dict):
        if isinstance(first.get("v"), int) and first.get("type") in ("message", "compact_boundary", "event"):
            return "nova", path
        if "sessionId" in first or first.get("type") in ("user", "assistant", "summary", "system"):
            return "claude-code", text
    raise SessionImportError(
        f"{path}: not a recognised session format (expected one of: {', '.join(FORMATS)})"
    )


def _classify_document(doc: Any) -> str | None:
    if isinstance(doc, list):
        return "openai" if all(isinstance(m, dict) and "role" in m for m in doc) else None
    if not isinstance(doc, dict):
        return None
    info = doc.get("info")
    if str(doc.get("trajectory_format", "")).startswith("mini-swe-agent") or (
        isinstance(info, dict) and "mini_version" in info and isinstance(doc.get("messages"), list)
    ):
        return "mini-swe-agent"
    if isinstance(doc.get("history"), list):
        return "swe-agent"
    if isinstance(doc.get("messages"), list):
        return "openai"
    if isinstance(doc.get("v"), int) and doc.get("type") in ("message", "compact_boundary", "event"):
        return None  # a one-line Nova transcript: handled as JSONL
    return None


def _first_json_line(text: str) -> Any:
    for line in text.splitlines():
        if line.strip():
            try:
                return json.loads(line)
            except ValueError:
                return None
    return None


# -- shared helpers ----------------------------------------------------------------------------------
def _text(content: Any) -> str:
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


def _arguments(raw: Any) -> Mapping[str, Any]:
    """Tool arguments as an object; anything else is kept, marked, as the real adapters do."""
    if isinstance(raw, dict):
        return raw
    try:
        parsed = json.loads(raw) if isinstance(raw, str) and raw.strip() else {}
    except ValueError:
        parsed = None
    return parsed if isinstance(parsed, dict) else {"__invalid_arguments__": raw}


def _mid(index: int) -> str:
    return f"m{index:05d}"


class _Builder:
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
            Message(role=role, parts=tuple(parts), id=_mid(index), created_at=self.at(ts), metadata=dict(metadata or {}))
        )

    def add_results(self, results: Sequence[ToolResultPart], index: int, ts: float | None = None) -> None:
        last = self.messages[-1] if self.messages else None
        if last is not None and last.role == "user" and last.parts and all(
            isinstance(p, ToolResultPart) for p in last.parts
        ):
            self.messages[-1] = last.with_parts([*last.parts, *results])
        else:
            self.add("user", results, index, ts)


Reader = Any  # Callable[[Any, Path], tuple[list[Message], str, dict[str, Any]]]


# -- mini-swe-agent ----------------------------------------------------------------------------------
# The action format mini-swe-agent's default config asks for: exactly one fenced bash block.
_BASH_BLOCK = re.compile(r"```bash\s*\n(.*?)\n```", re.DOTALL)


def _read_mini(doc: Mapping[str, Any], path: Path) -> tuple[list[Message], str, dict[str, Any]]:
    b = _Builder()
    open_call: ToolUsePart | None = None
    for index, m in enumerate(doc["messages"]):
        role, content = m["role"], _text(m.get("content"))
        if role == "system":
            b.system.append(content)
            continue
        if role == "assistant":
            response = (m.get("extra") or {}).get("response") or {}
            metadata: dict[str, Any] = {}
            usage = response.get("usage")
            if isinstance(usage, dict):
                metadata["usage"] = Usage.from_dict(usage).to_dict()
                if isinstance(usage.get("cost"), int | float):
                    metadata["cost_usd"] = float(usage["cost"])
            if response.get("model"):
                metadata["model"] = response["model"]
            blocks = list(_BASH_BLOCK.finditer(content))
            open_call = None
            parts: list[Part] = []
            if len(blocks) == 1:
                # One action: the agent ran it. The prose around the block stays as text.
                block = blocks[0]
                prose = (content[: block.start()] + content[block.end() :]).strip()
                if prose:
                    parts.append(TextPart(prose))
                open_call = ToolUsePart(id=f"bash-{index:05d}", name="bash", input={"command": block.group(1)})
                parts.append(open_call)
            else:
                # Zero or several blocks: mini-swe-agent ran nothing and answered with a format error.
                parts.append(TextPart(content))
            b.add("assistant", parts, index, response.get("created"), metadata)
        elif role == "user":
            if open_call is not None:
                b.add("user", [ToolResultPart(tool_use_id=open_call.id, content=content)], index)
                open_call = None
            else:
                b.add("user", [TextPart(content)], index)
        else:
            raise ValueError(f"message {index}: unexpected role {role!r}")
    info = doc.get("info") or {}
    config = info.get("config") or {}
    model_config = config.get("model") or {} if isinstance(config, dict) else {}
    meta = {
        "instance_id": doc.get("instance_id"),
        "exit_status": info.get("exit_status"),
        "mini_version": info.get("mini_version"),
        "model": model_config.get("model_name") if isinstance(model_config, dict) else None,
        "model_stats": info.get("model_stats"),
    }
    return b.messages, "\n\n".join(b.system), {k: v for k, v in meta.items() if v is not None}


# -- SWE-agent ---------------------------------------------------------------------------------------
def _read_swe_agent(doc: Mapping[str, Any], path: Path) -> tuple[list[Message], str, dict[str, Any]]:
    b = _Builder()
    for index, m in enumerate(doc["history"]):
        role = m["role"]
        content = _text(m.get("content"))
        extra = {"is_demo": True} if m.get("is_demo") else {}
        if role == "system":
            b.system.append(content)
        elif role == "assistant":
            parts: list[Part] = [TextPart(content)] if content else []
            for tc in m.get("tool_calls") or ():
                fn = tc.get("function") or {}
                parts.append(ToolUsePart(id=str(tc["id"]), name=str(fn.get("name", "")), input=_arguments(fn.get("arguments"))))
            b.add("assistant", parts or [TextPart("")], index, metadata=extra)
        elif role == "tool":
            ids = m.get("tool_call_ids") or ([m["tool_call_id"]] if m.get("tool_call_id") else [])
            if not ids:
                raise ValueError(f"history[{index}]: tool message without tool_call_ids")
            b.add_results([ToolResultPart(tool_use_id=str(i), content=content) for i in ids], index)
        elif role == "user":
            b.add("user", [TextPart(content)], index, metadata=extra)
        else:
            raise ValueError(f"history[{index}]: unexpected role {role!r}")
    info = doc.get("info") or {}
    meta = {k: info[k] for k in ("exit_status", "model_stats", "swe_agent_version") if k in info}
    return b.messages, "\n\n".join(b.system), meta


# -- plain OpenAI chat -------------------------------------------------------------------------------
def _openai_parts(content: Any) -> list[Part]:
    if not isinstance(content, list):
        text = _text(content)
        return [TextPart(text)] if text else []
    parts: list[Part] = []
    for block in content:
        if isinstance(block, dict) and block.get("type") == "image_url":
            url = block.get("image_url")
            parts.append(ImagePart(url=str(url.get("url", "") if isinstance(url, dict) else url)))
        else:
            text = _text([block])
            if text:
                parts.append(TextPart(text))
    return parts


def _read_openai(doc: Any, path: Path) -> tuple[list[Message], str, dict[str, Any]]:
    items = doc if isinstance(doc, list) else doc["messages"]
    b = _Builder()
    for index, m in enumerate(items):
        role = m["role"]
        if role in ("system", "developer"):
            b.system.append(_text(m.get("content")))
        elif role == "assistant":
            parts = _openai_parts(m.get("content"))
            for tc in m.get("tool_calls") or ():
                fn = tc.get("function") or {}
                parts.append(ToolUsePart(id=str(tc["id"]), name=str(fn.get("name", "")), input=_arguments(fn.get("arguments"))))
            metadata = {"usage": Usage.from_dict(m["usage"]).to_dict()} if isinstance(m.get("usage"), dict) else {}
            b.add("assistant", parts or [TextPart("")], index, metadata=metadata)
        elif role == "tool":
            b.add_results([ToolResultPart(tool_use_id=str(m["tool_call_id"]), content=_text(m.get("content")))], index)
        elif role == "user":
            b.add("user", _openai_parts(m.get("content")) or [TextPart("")], index)
        else:
            raise ValueError(f"message {index}: unexpected role {role!r}")
    meta = {"model": doc["model"]} if isinstance(doc, dict) and "model" in doc else {}
    return b.messages, "\n\n".join(b.system), meta


# -- Claude Code -------------------------------------------------------------------------------------
def _iso_ts(value: Any) -> float | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _anthropic_parts(content: Any) -> list[Part]:
    if isinstance(content, str):
        return [TextPart(content)] if content else []
    parts: list[Part] = []
    for block in content or ():
        kind = block.get("type")
        if kind == "text" and block.get("text"):
            parts.append(TextPart(str(block["text"])))
        elif kind == "tool_use":
            parts.append(ToolUsePart(id=str(block["id"]), name=str(block["name"]), input=_arguments(block.get("input"))))
        elif kind == "tool_result":
            parts.append(
                ToolResultPart(
                    tool_use_id=str(block["tool_use_id"]),
                    content=_text(block.get("content")),
                    is_error=bool(block.get("is_error", False)),
                )
            )
        elif kind == "image":
            source = block.get("source") or {}
            parts.append(
                ImagePart(media_type=str(source.get("media_type", "")), data=str(source.get("data", "")), url=str(source.get("url", "")))
            )
        # thinking / redacted_thinking: never imported (SES-3); unknown blocks: skipped
    return parts


def _read_claude_code(text: str, path: Path) -> tuple[list[Message], str, dict[str, Any]]:
    b = _Builder()
    by_response: dict[str, int] = {}  # Claude Code writes one record per content block of a response
    meta: dict[str, Any] = {}
    for index, line in enumerate(text.splitlines()):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            raise ValueError(f"line {index + 1} is not JSON") from None
        if not isinstance(record, dict):
            continue
        for key in ("sessionId", "cwd", "gitBranch", "version"):
            if key in record and key not in meta:
                meta[key] = record[key]
        kind = record.get("type")
        if kind not in ("user", "assistant") or record.get("isSidechain") or record.get("isMeta"):
            continue  # summaries, system notes and sub-agent branches are not the main conversation
        message = record.get("message") or {}
        parts = _anthropic_parts(message.get("content"))
        ts = _iso_ts(record.get("timestamp"))
        if kind == "assistant":
            metadata: dict[str, Any] = {}
            usage = message.get("usage")
            if isinstance(usage, dict):
                metadata["usage"] = Usage.from_dict(usage).to_dict()
            if message.get("model"):
                metadata["model"] = message["model"]
            response_id = message.get("id")
            if response_id and response_id in by_response:
                at = by_response[response_id]
                if at == len(b.messages) - 1:
                    previous = b.messages[at]
                    b.messages[at] = previous.with_parts([*previous.parts, *parts]).with_metadata(**metadata)
                    continue
            if not parts:
                continue
            if response_id:
                by_response[response_id] = len(b.messages)
            b.add("assistant", parts, index, ts, metadata)
        else:
            if not parts:
                continue
            results = [p for p in parts if isinstance(p, ToolResultPart)]
            if results and len(results) == len(parts):
                b.add_results(results, index, ts)
            else:
                b.add("user", parts, index, ts)
    return b.messages, "", meta


# -- Nova's own transcript ---------------------------------------------------------------------------
def _read_nova(transcript_path: Path, path: Path, *, strict: bool = False) -> tuple[list[Message], str, dict[str, Any]]:
    transcript = Transcript(transcript_path)
    messages: list[Message] = []
    system = ""
    meta: dict[str, Any] = {}
    damaged: list[str] = []
    for record in transcript.iter_records(strict=strict, on_bad=lambda bad: damaged.append(bad.describe())):
        if isinstance(record, MessageRecord):
            messages.append(record.message)
        elif isinstance(record, EventRecord):
            if record.name == SYSTEM_PROMPT_EVENT:
                system = str(record.data.get("text", ""))
            elif record.name == IMPORTED_EVENT:
                meta = dict(record.data.get("meta") or {})
    torn = transcript.find_torn_tail()
    if torn is not None:
        meta["torn_tail_bytes"] = torn.size
    if damaged:
        meta["damaged_records"] = damaged
    return messages, system, meta


_READERS: dict[str, Reader] = {
    "nova": _read_nova,
    "mini-swe-agent": _read_mini,
    "swe-agent": _read_swe_agent,
    "openai": _read_openai,
    "claude-code": _read_claude_code,
}
