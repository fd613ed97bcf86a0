"""Readers of recorded agent sessions, one module per format behind `SessionReader` (see `base`).

    reader, head = detect(path)        # every reader says how sure it is; the surest takes the file
    imported = read(path, strict=...)  # detect, read, and report (or with `strict` refuse) skipped records

A file no reader takes is refused with one message that lists each format tried and why it refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from nova.errors import NotASessionFile, SessionImportError
from nova.fs.safe_read import loads
from nova.sessions.readers.aider import AiderReader
from nova.sessions.readers.anthropic_messages import HISTORY, UI_MESSAGES, AnthropicMessagesReader
from nova.sessions.readers.base import (
    Confidence,
    ImportedSession,
    NotJson,
    SessionReader,
    SkippedRecord,
)
from nova.sessions.readers.claude_code import ClaudeCodeReader
from nova.sessions.readers.codex import CodexReader
from nova.sessions.readers.common import load_text
from nova.sessions.readers.discover import folder_sessions
from nova.sessions.readers.gemini_cli import GeminiCliReader
from nova.sessions.readers.gemini_cli_jsonl import GeminiCliJsonlReader
from nova.sessions.readers.mini_swe_agent import MiniSweAgentReader
from nova.sessions.readers.nova import NovaReader
from nova.sessions.readers.openai_chat import OpenAIChatReader
from nova.sessions.readers.opencode import OpenCodeReader
from nova.sessions.readers.openhands import OpenHandsReader
from nova.sessions.readers.pi import PiReader
from nova.sessions.readers.swe_agent import SweAgentReader
from nova.sessions.readers.usage_check import checked_usage
from nova.sessions.transcript import full_collections_paused

__all__ = ["READERS", "Confidence", "ImportedSession", "SessionReader", "SkippedRecord", "detect", "head_records",
           "read", "task_file"]

# In order of preference when two readers are equally sure.
READERS: tuple[SessionReader, ...] = (
    NovaReader(), MiniSweAgentReader(), SweAgentReader(), OpenCodeReader(), OpenHandsReader(), AnthropicMessagesReader(),
    OpenAIChatReader(), GeminiCliReader(), GeminiCliJsonlReader(), ClaudeCodeReader(), CodexReader(), PiReader(), AiderReader(),
)
HEAD_LINES = 64


def head_records(path: Path) -> tuple[Any, ...]:
    """What detection looks at: the file's one JSON document, or its first JSON lines."""
    if path.is_dir():
        return ()
    text = load_text(path)
    try:
        return (loads(text),)
    except ValueError:
        pass
    head: list[Any] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            head.append(loads(line))
        except ValueError as exc:
            head.append(NotJson(number, str(exc)))
        if len(head) >= HEAD_LINES:
            break
    return tuple(head)


def task_file(path: str | Path) -> Path:
    """The file to read for `path`: a Cline / Roo Code task folder (`tasks/<id>/`, as those agents keep a
    task) is read as the conversation file it holds; anything else is itself."""
    source = Path(path)
    if source.is_dir() and (source / HISTORY).is_file() and not (source / "transcript.jsonl").exists():
        return source / HISTORY
    return source


def detect(path: str | Path) -> SessionReader:
    source = task_file(path)
    if not source.exists():
        raise SessionImportError(f"{source} does not exist")
    if source.name == UI_MESSAGES and (source.parent / HISTORY).is_file():
        # What Cline shows, not what the model was sent; the conversation is beside it.
        raise SessionImportError(f"{source} is Cline's UI log, not the conversation: give {source.parent / HISTORY} "
                                 "(its usage is read from this file)")
    if source.is_file() and source.stat().st_size == 0:
        raise NotASessionFile(f"{source} is empty: a recorded session holds at least one record")
    if source.is_file() and _binary(source):
        raise NotASessionFile(f"{source} is a binary file, not a recorded session: give the JSON or JSONL "
                              "file an agent wrote (or Aider's Markdown history)")
    head = head_records(source)
    verdicts = [(reader, reader.confidence(source, head)) for reader in READERS]
    best, verdict = max(verdicts, key=lambda rv: rv[1].score)  # max keeps the first of equals
    if verdict.score > 0:
        return best
    if source.is_dir():
        if inside := folder_sessions(source):
            raise SessionImportError(f"{source} is a folder of {len(inside)} sessions, not one: name "
                                     f"one (e.g. {inside[0]}), or import them all with `nova sessions import "
                                     f"{source}`")
        raise SessionImportError(f"{source} is a folder with no session in it: give a session file, a Nova session "
                                 f"folder (holding transcript.jsonl) or a Cline task folder (holding {HISTORY})")
    why = "; ".join(f"{reader.name}: {v.reason}" for reader, v in verdicts)
    # JSON that no format fits is no session; text that does not parse may be a damaged one.
    damaged = any(isinstance(record, NotJson) for record in head)
    refusal = SessionImportError if damaged else NotASessionFile
    raise refusal(f"{source}: not a recognised session format ({_shape(head)}). Tried {why}")


def _shape(head: Sequence[Any]) -> str:
    """What a file no reader takes holds, as far as detection parsed it: said first in the refusal, so
    `package.json` reads as a JSON object with `name` and `version`, not as thirteen formats' reasons."""
    first = head[0] if head else None
    if isinstance(first, NotJson):
        return f"text that is not JSON: line {first.line}"
    if bad := next((r for r in head if isinstance(r, NotJson)), None):
        return f"JSON lines, but line {bad.line} is not JSON"
    what = "one JSON document" if len(head) == 1 else "JSON lines"
    if isinstance(first, dict):
        keys = ", ".join(str(k) for k in list(first)[:5]) + (", ..." if len(first) > 5 else "")
        record = "an object" if len(head) == 1 else "the first an object"
        return f"{what}, {record} with keys {keys}" if first else f"{what}, {record} with no keys"
    kind = ("a list" if isinstance(first, list) else "a string" if isinstance(first, str)
            else "null" if first is None else "a number or true/false")
    return f"{what}, {kind if len(head) == 1 else 'the first ' + kind}"


def _binary(path: Path) -> bool:
    """A NUL byte in the first 8 KB: no text format (JSON, JSONL, Markdown) holds one."""
    try:
        with path.open("rb") as f:
            return b"\0" in f.read(8192)
    except OSError:
        return False  # the reader that opens it says why


def read(path: str | Path, *, strict: bool = False) -> ImportedSession:
    # Detecting (a one-document format is parsed whole) and reading build a great many containers and
    # none in cycles: without the pause, full collections walk the growing heap again and again, and a
    # file 10x as long took 13x as long to read.
    with full_collections_paused():
        return _read(task_file(path), strict=strict)


def _read(source: Path, *, strict: bool) -> ImportedSession:
    reader = detect(source)
    try:
        imported = reader.read(source, strict=strict)
    except SessionImportError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise SessionImportError(f"{source}: looks like {reader.name} but could not be read: {exc!r}") from None
    imported = checked_usage(imported)
    if not any(run.messages or run.children for run in imported.runs()):
        # An empty session imported with exit 0 would look like a success; say what was found instead.
        raise NotASessionFile(f"{source}: read as {reader.name}, but it holds no conversation (no messages)")
    skipped = _all_skipped(imported)
    if strict and skipped:
        listed = "; ".join(s.describe() for s in skipped[:5])
        raise SessionImportError(f"{source}: {len(skipped)} record(s) could not be read ({listed}); "
                                 "without --strict they are skipped")
    return imported


def _all_skipped(imported: ImportedSession) -> Sequence[SkippedRecord]:
    return [s for run in imported.runs() for s in (*run.skipped, *(s for child in run.children for s in child.skipped))]
