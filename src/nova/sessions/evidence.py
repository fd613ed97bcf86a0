"""What a session's record says happened, turn by turn: the requests a person sent, the assistant's replies
(where its decisions and conclusions are), the files each call edited or read, the commands it ran and
the calls that failed. The search over past sessions (`nova.memory.retrieval.session_index`) indexes
these facts; they are read from the raw log, never from the working copy a snip rewrote.

    reader = EvidenceReader(session_id)              # or EvidenceReader(session_id, state=saved_state)
    for message in messages_in_order:
        facts.extend(reader.feed(message))
    saved_state = reader.state()                      # JSON-able: resume reading where this stopped

Turns are numbered from 1 by the requests a person sent: a user message with text and no tool result,
not injected by Nova (`origin` memory, summary, restore …), and not a wrapper another agent recorded as
a user message although nobody typed it (Claude Code's `<command-name>` and caveat lines, Codex's
`<environment_context>` and AGENTS.md preamble, Cline's `<environment_details>`). Facts recorded before
the first request belong to turn 0.

A call's facts are written when its result arrives (an edit that was refused edited nothing; a command
is `command` when it ran and `error` when it failed), which is a later message than the call, possibly
after a reading stopped: the calls still waiting for their result are part of `state()`, so a result
read on the next reading still names its command and files. A call that never got a result (the
session was killed) leaves no fact.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from nova.errors import StorageError
from nova.history.tool_paths import SHELL_TOOLS, paths_of
from nova.messages import Message, TextPart, ToolResultPart, ToolUsePart
from nova.sessions.schema import MessageRecord, parse_record

__all__ = ["KINDS", "Evidence", "EvidenceKind", "EvidenceReader", "TranscriptChunk", "failed_exit_code",
           "is_wrapper", "passages", "read_transcript_from", "tail_mark"]

EvidenceKind = Literal["request", "reply", "edit", "read", "command", "error"]
KINDS: tuple[EvidenceKind, ...] = ("request", "reply", "edit", "read", "command", "error")

TEXT_LIMIT = 8000
"""Characters of a request or reply kept: enough for every word a search could match, while a pasted
log of megabytes does not become facts of megabytes."""
PASSAGE = 600
"""Characters of one passage: a long request or reply is several facts of about this size, split at
sentence and line ends. Short facts rank better (one long reply would match every query a little) and fit
the sentence encoder, which reads at most 256 tokens of a text."""
SNIPPET = 160
"""Characters of an edit's new text, a command or an error's output kept beside the fact."""
_PENDING_LIMIT = 500
"""Calls waiting for their result kept in the state; an agent that never answers its calls must not make
the state grow without bound."""

_WRAPPER = re.compile(
    r"\A\s*(?:<(?:command-name|command-message|command-args|local-command-stdout|local-command-stderr"
    r"|environment_context|environment_details|system-reminder|user_instructions|INSTRUCTIONS)\b"
    r"|Caveat: The messages below were generated"
    r"|# AGENTS\.md instructions"
    r"|\[Request interrupted by user)"
)
# Exit statuses as the agents write them: Nova `[exit code: 1]`, Claude Code `Exit code 1`, Codex
# `Process exited with code 1`, mini-swe-agent `<returncode>1</returncode>`.
_EXIT = re.compile(r"(?:exit(?:ed with)? code:?\s*|<returncode>)(-?\d+)", re.IGNORECASE)


@dataclass(frozen=True, slots=True, kw_only=True)
class Evidence:
    session_id: str
    turn: int
    position: int
    """Order within the session (0, 1, 2 …), across turns."""
    kind: EvidenceKind
    text: str
    message_id: str
    at: float
    """When the message holding it was written (Unix seconds)."""
    external: bool = False
    """Holds a tool's output (an error message): text nobody in the session wrote."""


def is_wrapper(text: str) -> bool:
    """Whether a user message's text is another agent's wrapper rather than a person's words."""
    return bool(_WRAPPER.match(text))


def failed_exit_code(output: str) -> int | None:
    """The non-zero exit status a shell result reports, if it reports one. The status is where the agents
    write it, at the head (Claude Code, Codex, mini-swe-agent) or the tail (Nova) of the output; a number
    that only looks like one in the middle of a command's own output does not count."""
    head = _EXIT.search(output[:400])
    if head is not None:
        code = int(head.group(1))
        return code or None
    tail = [int(m.group(1)) for m in _EXIT.finditer(output[-400:])]
    return (tail[-1] or None) if tail else None


_BREAK = re.compile(r"(?<=[.!?:;])\s+|\n+")


def passages(text: str, size: int = PASSAGE) -> list[str]:
    """`text` in pieces of at most `size` characters, cut where a sentence or a line ends (a sentence
    longer than `size` is cut inside); the sentences of one piece are kept one per line."""
    pieces: list[str] = []
    current = ""
    begin = 0
    for end in [m.start() for m in _BREAK.finditer(text)] + [len(text)]:
        sentence = text[begin:end].strip()
        begin = end
        if not sentence:
            continue
        while len(sentence) > size:
            if current:
                pieces.append(current)
                current = ""
            pieces.append(sentence[:size])
            sentence = sentence[size:].lstrip()
        if current and len(current) + 1 + len(sentence) > size:
            pieces.append(current)
            current = sentence
        elif sentence:
            current = f"{current}\n{sentence}" if current else sentence
    if current:
        pieces.append(current)
    return pieces


def _one_line(text: str, limit: int = SNIPPET) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _command_of(call: ToolUsePart) -> str:
    command = call.input.get("command") or call.input.get("cmd") or ""
    if isinstance(command, list):
        command = " ".join(str(c) for c in command)
    return str(command)


def _call_summary(call: ToolUsePart) -> str:
    """How a call is named in its fact: the command for a shell ("" when it has none), else the tool and
    its arguments."""
    if call.name.lower() in SHELL_TOOLS:
        command = _one_line(_command_of(call), 300)
        return f"`{command}`" if command else ""
    arguments = json.dumps(dict(call.input), ensure_ascii=False, default=str, sort_keys=True)
    return f"{call.name} {_one_line(arguments, 200)}"


def _change_of(call: ToolUsePart) -> str:
    """A short look at what an edit wrote (its new text), so a search for the change finds the edit."""
    for key in ("new_string", "new_str", "content", "file_text", "newString", "input", "patch", "diff"):
        value = call.input.get(key)
        if isinstance(value, str) and value.strip():
            return _one_line(value)
    edits = call.input.get("edits")
    if isinstance(edits, list) and edits and isinstance(edits[0], Mapping):
        value = edits[0].get("new_string") or edits[0].get("newString")
        if isinstance(value, str):
            return _one_line(value)
    return ""


class EvidenceReader:
    """Turns one session's messages, in order, into facts. Keeps the turn count, the position and the
    calls waiting for a result; `state()` saves them so a later reader goes on from there."""

    def __init__(self, session_id: str, state: Mapping[str, Any] | None = None) -> None:
        saved = dict(state or {})
        self.session_id = session_id
        self.turn = int(saved.get("turn", 0))
        self.position = int(saved.get("position", 0))
        self._pending: dict[str, _Call] = {str(k): _Call.from_json(v)
                                            for k, v in dict(saved.get("pending") or {}).items()}

    def state(self) -> dict[str, Any]:
        return {"turn": self.turn, "position": self.position,
                "pending": {k: v.to_json() for k, v in self._pending.items()}}

    def feed(self, message: Message) -> list[Evidence]:
        if message.origin is not None or message.has("summary"):
            return []  # Nova's own injections and summaries: derived, not what happened
        out: list[Evidence] = []
        text = "\n\n".join(p.text for p in message.parts if isinstance(p, TextPart)).strip()
        if message.role == "user":
            if text and not message.has("tool_result") and not is_wrapper(text):
                self.turn += 1
                out.extend(self._fact(message, "request", passage) for passage in passages(text[:TEXT_LIMIT]))
            for result in message.tool_results():
                out.extend(self._result(message, result))
        elif message.role == "assistant":
            if text:
                out.extend(self._fact(message, "reply", passage) for passage in passages(text[:TEXT_LIMIT]))
            for call in message.tool_uses():
                out.extend(self._call(message, call))
        return out

    def _fact(self, message: Message, kind: EvidenceKind, text: str, *, external: bool = False) -> Evidence:
        fact = Evidence(session_id=self.session_id, turn=self.turn, position=self.position, kind=kind, text=text,
                        message_id=message.id, at=message.created_at, external=external)
        self.position += 1
        return fact

    def _call(self, message: Message, call: ToolUsePart) -> list[Evidence]:
        """Nothing yet: what a call did is known from its result (an edit refused, a read that found no
        file, a command that failed), so its facts are written then."""
        if len(self._pending) >= _PENDING_LIMIT:
            self._pending.pop(next(iter(self._pending)))
        touched = paths_of(call)
        self._pending[call.id] = _Call(name=call.name, summary=_call_summary(call), writes=touched.writes,
                                       reads=touched.reads, change=_change_of(call))
        return []

    def _result(self, message: Message, result: ToolResultPart) -> list[Evidence]:
        """A call's facts, now that its result is known: the files it edited and read and, for a shell,
        the command it ran; or one `error` fact (with the head of its output) when it failed."""
        call = self._pending.pop(result.tool_use_id, None) or _Call()
        shell = call.name.lower() in SHELL_TOOLS
        code = failed_exit_code(result.content) if shell else None
        if result.is_error or code is not None:
            status = f" (exit code {code})" if code is not None else ""
            output = _one_line(result.content, 300)
            return [self._fact(message, "error", f"{call.summary or 'a tool call'} failed{status}: {output}",
                               external=True)]
        out: list[Evidence] = []
        if shell and call.summary:
            out.append(self._fact(message, "command", f"ran {call.summary}"))
        for path in call.writes:
            detail = f": {call.change}" if call.change else ""
            out.append(self._fact(message, "edit", f"edited {path} ({call.name}){detail}"))
        for path in call.reads:
            out.append(self._fact(message, "read", f"read {path} ({call.name})"))
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class _Call:
    """A call waiting for its result, as much of it as its facts need (saved in the reader's state)."""

    name: str = ""
    summary: str = ""
    writes: tuple[str, ...] = ()
    reads: tuple[str, ...] = ()
    change: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "summary": self.summary, "writes": list(self.writes), "reads": list(self.reads),
                "change": self.change}

    @classmethod
    def from_json(cls, data: Any) -> _Call:
        value = dict(data) if isinstance(data, Mapping) else {}
        return cls(name=str(value.get("name", "")), summary=str(value.get("summary", "")),
                   writes=tuple(str(p) for p in value.get("writes") or ()),
                   reads=tuple(str(p) for p in value.get("reads") or ()), change=str(value.get("change", "")))


# -- reading the raw log from a watermark -------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class TranscriptChunk:
    messages: list[Message]
    end: int
    """The offset after the last complete line read: where the next reading starts."""
    bad_lines: int = 0


def read_transcript_from(path: Path, offset: int) -> TranscriptChunk:
    """The messages recorded in `path` after byte `offset`, up to its last complete line (a line still
    being written is left for the next reading). Damaged lines are skipped and counted; boundaries and
    events are not messages."""
    try:
        with path.open("rb") as f:
            f.seek(offset)
            data = f.read()
    except FileNotFoundError:
        return TranscriptChunk([], offset)
    except OSError as exc:
        raise StorageError(f"cannot read {path}: {exc.strerror}") from None
    cut = data.rfind(b"\n") + 1
    messages: list[Message] = []
    bad = 0
    start = offset
    for line in _lines(data[:cut]):
        if line.strip():
            try:
                record = parse_record(line, f"{path} at byte {start}")
            except StorageError:
                bad += 1
            else:
                if isinstance(record, MessageRecord):
                    messages.append(record.message)
        start += len(line)
    return TranscriptChunk(messages, offset + cut, bad)


def _lines(data: bytes) -> Iterator[bytes]:
    begin = 0
    while begin < len(data):
        end = data.index(b"\n", begin) + 1
        yield data[begin:end]
        begin = end


def tail_mark(path: Path, offset: int) -> str:
    """A digest of the bytes just before `offset`: when it no longer matches, the file was replaced or
    rewritten under the watermark (a database worker's copy written anew), and the reading starts over."""
    if offset <= 0:
        return ""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return ""
    try:
        start = max(0, offset - 256)
        return hashlib.sha1(os.pread(fd, offset - start, start)).hexdigest()
    finally:
        os.close(fd)
