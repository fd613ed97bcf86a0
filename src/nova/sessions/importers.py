"""Readers of recorded agent sessions into Nova messages (`nova sessions import`, `nova replay`).

    imported = read_session_file(path)      # format detected from the content
    imported.messages, imported.system, imported.format, imported.meta, imported.skipped, imported.children

Each format is a module of `nova.sessions.readers` behind one protocol; detection asks every reader how
sure it is and the surest reads the file:
    nova            a Nova `transcript.jsonl` (or a session directory holding one)
    mini-swe-agent  `.traj.json`: one ```bash block per assistant turn becomes a `bash` tool call
    swe-agent       `.traj`: `history` with native `tool_calls` and `tool` messages
    opencode        an OpenCode session export
    anthropic       a plain list of Anthropic Messages (Cline / Roo `api_conversation_history.json`, with
                    usage from the `ui_messages.json` beside it)
    openai          a list of chat messages, or an object with `messages`
    claude-code     Claude Code session JSONL (see `nova.sessions.readers.claude_code`)
    codex           a Codex CLI rollout JSONL
    gemini-cli      a Gemini CLI chat (`~/.gemini/tmp/<project>/chats/session-*.json`, or newer Gemini CLI's
                    `session-*.jsonl` log of it: `gemini-cli-jsonl` detects it, the same reader reads it)
    pi              a pi coding-agent session JSONL (the branch ending at the last entry)
    aider           Aider's `.aider.chat.history.md`
    openhands       an OpenHands event stream (trajectory JSON), or an evaluation / resolver `output.jsonl`:
                    one session per run (`ImportedSession.siblings`)

Imported ids are derived from positions in the source (`m00012`), so importing a file twice gives the
same messages. Thinking blocks are not imported (SES-3).
"""

from __future__ import annotations

from pathlib import Path

from nova.errors import SessionImportError
from nova.model import usage_of
from nova.sessions.readers import READERS, detect, read
from nova.sessions.readers.base import ImportedSession, SkippedRecord
from nova.sessions.readers.nova import IMPORTED_EVENT, SYSTEM_PROMPT_EVENT

__all__ = ["FORMATS", "IMPORTED_EVENT", "SYSTEM_PROMPT_EVENT", "ImportedSession", "SessionImportError",
           "SkippedRecord", "detect_format", "read_session_file", "usage_of"]

FORMATS = tuple(reader.name for reader in READERS)


def read_session_file(path: str | Path, *, strict: bool = False) -> ImportedSession:
    """Read a recorded session. Records a reader could not use are listed in `skipped` (a Nova
    transcript's also in `meta["damaged_records"]`); with `strict`, any such record refuses the file."""
    return read(path, strict=strict)


def detect_format(path: str | Path) -> str:
    return detect(path).name
