"""What a session's model was last sent, beside the session: `<session dir>/last-request.json`.

`nova context ID` describes a recorded session "as the model saw it". Recomputing that from today's
settings misses what only the live agent knew: the MCP tools its servers listed, the provider and model
a resume switched to (an imported session keeps naming the agent it came from), the window that model
has. So the agent writes down, at each turn's end, the fixed part of the last request it sent — the
provider and model, the window and compaction threshold it measured against, the system prompt and the
tool schemas exactly as sent — and `nova context` measures against that, recomputing only when a
session has no such file (recorded before it existed, or by another machine's worker).

The messages are not kept here: they are the session's history, which the transcript already holds, and
the compiled view of it is rebuilt the same way the next call would build it.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nova.errors import FileRefused, StorageError
from nova.fs.private import replace_private_file
from nova.fs.safe_read import loads, read_bytes
from nova.model import ToolSpec

__all__ = ["SENT_NAME", "SentRequest", "read_sent", "write_sent"]

SENT_NAME = "last-request.json"
SENT_VERSION = 1
MAX_SENT_BYTES = 16 * 1024 * 1024
"""A catalog of a few hundred MCP tools is well under a megabyte; more than this is not a file Nova wrote."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SentRequest:
    """The fixed part of the last request a session's model was sent, with what it was measured against."""

    provider: str
    """The adapter that sent it ("anthropic", "openai", "compatible", …)."""
    model: str
    """The model asked for."""
    window: int
    threshold: int
    """The compaction threshold the agent measured against (`ContextBudget.threshold`)."""
    system: str
    tools: tuple[ToolSpec, ...]
    sent_tokens: int
    """The request's size as Nova measured it when it was sent."""
    reported_input_tokens: int | None = None
    """What the provider said it read for it (cached included); None when it did not say."""
    at: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"v": SENT_VERSION, "provider": self.provider, "model": self.model, "window": self.window,
                "threshold": self.threshold, "system": self.system,
                "tools": [{"name": t.name, "description": t.description, "input_schema": dict(t.input_schema)}
                          for t in self.tools],
                "sent_tokens": self.sent_tokens, "reported_input_tokens": self.reported_input_tokens, "at": self.at}

    @classmethod
    def from_dict(cls, data: dict[str, Any], where: str) -> SentRequest:
        try:
            tools = tuple(ToolSpec(str(t["name"]), str(t.get("description") or ""), dict(t.get("input_schema") or {}))
                          for t in data["tools"])
            reported = data.get("reported_input_tokens")
            return cls(provider=str(data["provider"]), model=str(data["model"]), window=int(data["window"]),
                       threshold=int(data["threshold"]), system=str(data["system"]), tools=tools,
                       sent_tokens=int(data.get("sent_tokens") or 0),
                       reported_input_tokens=int(reported) if isinstance(reported, int) else None,
                       at=float(data.get("at") or 0.0))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise StorageError(f"{where}: not a last request Nova wrote ({type(exc).__name__}: {exc})") from None


def write_sent(directory: Path, sent: SentRequest) -> None:
    """Replace the file whole (temp file + rename): a reader sees the previous request or this one. Not
    fsynced: it is a convenience for `nova context`, rewritten every turn, never the record itself."""
    path = directory / SENT_NAME
    try:
        replace_private_file(path, json.dumps({**sent.to_dict(), "at": sent.at or time.time()}, ensure_ascii=False))
    except OSError as exc:
        raise StorageError(f"cannot write {path}: {exc.strerror}") from None


def read_sent(directory: Path) -> SentRequest | None:
    """The session's last request, or None when it has none. A damaged or foreign file raises
    `StorageError` naming it (the caller may fall back to recomputing, and should say so)."""
    path = directory / SENT_NAME
    try:
        raw = read_bytes(path, limit=MAX_SENT_BYTES, what="a last-request file")
    except FileNotFoundError:
        return None
    except (FileRefused, OSError) as exc:
        raise StorageError(f"cannot read {path}: {exc}") from None
    try:
        data = loads(raw.decode("utf-8"), where=str(path))
    except (ValueError, UnicodeDecodeError) as exc:
        raise StorageError(f"{path} is corrupt (not valid JSON: {exc})") from None
    if not isinstance(data, dict):
        raise StorageError(f"{path} is corrupt (expected a JSON object)")
    version = data.get("v")
    if not isinstance(version, int) or version > SENT_VERSION:
        raise StorageError(f"{path}: written by a newer Nova (version {version!r}); upgrade Nova to read it")
    return SentRequest.from_dict(data, str(path))
