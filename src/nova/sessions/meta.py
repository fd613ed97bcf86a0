"""Session ids, the session directory layout and `meta.json`.

    <home>/sessions/<id>/
        transcript.jsonl     the raw log (transcript.py)
        meta.json            SessionMeta, rewritten atomically (temp file + rename)
        tool-results/        spilled tool results (SPILL-1)
        tool-output/         full text of snipped tool outputs (CMP-3)
"""

from __future__ import annotations

import re
import secrets
import time
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from nova.errors import FileRefused, StorageError
from nova.fs.private import replace_private_file
from nova.fs.safe_read import loads, read_bytes
from nova.model import CALL_PURPOSES, CallCount, CallPurpose, Usage
from nova.sessions.schema import json_text, printable

__all__ = [
    "CALLS_KEY",
    "META_VERSION",
    "MODEL_EVENT",
    "SessionMeta",
    "find_git_root",
    "new_session_id",
    "read_meta",
    "read_meta_or_damage",
    "session_dir",
    "title_from_prompt",
    "validate_session_id",
    "write_meta",
]

META_VERSION = 2
MAX_META_BYTES = 1024 * 1024
"""A meta.json is a few hundred bytes; one larger than this is not one Nova wrote."""
"""2: the token totals are one `usage` object (`Usage.to_dict()`); 1 had them as top-level counters.
A version-1 Nova would drop the object and write zeros back, hence the bump: it refuses instead."""
META_NAME = "meta.json"
MODEL_EVENT = "model"
"""The transcript event a session records when it moves to another provider, model or endpoint
(data: provider, model, base_url), so a meta.json rebuilt from the transcript still knows them."""
ARTIFACT_DIRS = ("tool-results", "tool-output")
CALLS_KEY = "calls"
"""`extra[CALLS_KEY]`: the session's model calls by purpose (`CallCount.to_dict()` each)."""

# Letters, digits, dot, dash, underscore; must start with a letter or digit. That excludes "/", "\\",
# "..", leading dots and empty ids, so an id can never name a path outside the sessions directory.
_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


def validate_session_id(session_id: str) -> str:
    if not isinstance(session_id, str) or not _ID_RE.fullmatch(session_id) or ".." in session_id:
        raise StorageError(
            f"invalid session id {session_id!r}: use letters, digits, '.', '-' and '_' (at most 128)"
        )
    return session_id


def new_session_id() -> str:
    """Sortable by creation time, readable in `ls`, unique enough for one machine."""
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + secrets.token_hex(3)


TITLE_CHARS = 80


def title_from_prompt(prompt: str) -> str:
    """A session's title from its first request, the same on every surface (`nova run`, the TUI, the
    web page, a rebuilt meta.json): whitespace collapsed, the first 80 characters."""
    return printable(" ".join(prompt.split())[:TITLE_CHARS])


def session_dir(home: Path, session_id: str) -> Path:
    return home / "sessions" / validate_session_id(session_id)


def find_git_root(cwd: str | Path) -> str:
    """The nearest ancestor holding `.git` (a directory or a worktree file), or ""."""
    try:
        path = Path(cwd).resolve()
    except OSError:
        return ""
    for candidate in (path, *path.parents):
        if (candidate / ".git").exists():
            return str(candidate)
    return ""


@dataclass(slots=True, kw_only=True)
class SessionMeta:
    id: str
    title: str = ""
    cwd: str = ""
    git_root: str = ""
    provider: str = ""
    model: str = ""
    base_url: str | None = None
    """The endpoint the session's model was reached at: "" for the provider's own, None when not
    recorded (sessions written before it was, imports). A resume uses it unless told otherwise."""
    created_at: float = 0.0
    updated_at: float = 0.0
    message_count: int = 0
    usage: Usage = field(default_factory=Usage)
    """The session's running total over every model call, the 1-hour cache writes kept apart."""
    cost_usd: float = 0.0
    compacted_at: float | None = None
    parent_id: str = ""
    """The session that started this one as a sub-agent (its `task` call), or "" for a top-level session."""
    last_context_tokens: int = 0
    """The conversation's size: at a turn's end, the next view as Nova measures it (the figure the run's
    footer and the TUI's bar show); between calls, what the last call read (cached or not) plus what it
    wrote. 0 before the first call (and in a meta.json written before this field existed)."""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def cost_known(self) -> bool:
        """Whether `cost_usd` is the session's whole cost: every call it was charged was priced. A session
        written before unpriced calls were counted is known only when it cost something or billed nothing."""
        unpriced = self.extra.get("unpriced_calls")
        if isinstance(unpriced, int):
            return unpriced == 0
        return self.cost_usd > 0 or self.total_tokens == 0

    @property
    def unmeasured_calls(self) -> int:
        """Calls recorded without their usage (an imported recording may hold some): their tokens nobody
        knows, so `total_tokens` is then what the other calls were billed."""
        return int(self.extra.get("unmeasured_calls") or 0)

    @property
    def tokens_known(self) -> bool:
        """Whether `total_tokens` counts every call (no `unmeasured_calls`)."""
        return not self.unmeasured_calls

    @property
    def context_known(self) -> bool:
        """Whether `last_context_tokens` is a measure: not when no call recorded one."""
        return self.last_context_tokens > 0 or self.tokens_known

    @property
    def total_tokens(self) -> int:
        """Tokens billed over the whole session: every call's input (cached included) plus its output.
        A running total, not the size of the context: see `last_context_tokens` for that."""
        return self.usage.context_tokens + self.usage.output_tokens

    @property
    def calls(self) -> dict[CallPurpose, CallCount]:
        """The session's model calls by purpose, in `CALL_PURPOSES` order; empty for a session recorded
        before calls were counted by purpose (its totals above still hold every call)."""
        stored = self.extra.get(CALLS_KEY)
        if not isinstance(stored, dict):
            return {}
        return {p: CallCount.from_dict(stored[p]) for p in CALL_PURPOSES if isinstance(stored.get(p), dict)}

    def count_call(self, purpose: CallPurpose, usage: Usage, cost_usd: float | None, *, calls: int = 1) -> None:
        """One call (or a sub-agent's calls) in the by-purpose tally. The stored mapping is replaced whole,
        never changed in place: a flush on another thread serializes either the old one or the new one."""
        counts = self.calls
        counts[purpose] = counts.get(purpose, CallCount()).add(usage, cost_usd, calls=calls)
        self.extra[CALLS_KEY] = {p: c.to_dict() for p, c in counts.items()}

    def add_usage(self, usage: Usage) -> None:
        self.usage = self.usage + usage
        self.last_context_tokens = usage.context_tokens + usage.output_tokens

    def to_dict(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["usage"] = self.usage.to_dict()
        data["extra"] = dict(self.extra)
        return {"v": META_VERSION, **data}

    @classmethod
    def from_dict(cls, data: dict[str, Any], where: str) -> SessionMeta:
        version = data.get("v", META_VERSION)
        if not isinstance(version, int) or version > META_VERSION:
            raise StorageError(
                f"{where}: written by a newer Nova (meta version {version!r}, this Nova reads up to "
                f"{META_VERSION}); upgrade Nova to open this session (nothing was changed)"
            )
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        usage = data.get("usage")
        # Version 1 kept the totals as top-level counters (and had no 1-hour split): the codec reads
        # those same keys, so an old meta.json migrates on read and is written back as version 2.
        values["usage"] = Usage.from_dict(usage if isinstance(usage, dict) else data)
        try:
            meta = cls(**values)
        except TypeError as exc:
            raise StorageError(f"{where}: {exc}") from None
        if not isinstance(meta.id, str) or not isinstance(meta.title, str):
            raise StorageError(f"{where}: 'id' and 'title' must be strings")
        return meta


def read_meta(directory: Path) -> SessionMeta:
    """The meta.json of a session directory; `StorageError` when it is missing, corrupt or newer."""
    meta, damage = read_meta_or_damage(directory)
    if meta is None:
        raise StorageError(damage)
    return meta


def read_meta_or_damage(directory: Path) -> tuple[SessionMeta | None, str]:
    """(meta, "") or, when meta.json is missing or damaged (it can be rebuilt from the transcript),
    (None, what is wrong with it). Raises `StorageError` only for what a rebuild must not paper over:
    a meta.json written by a newer Nova, or one the OS will not let us read."""
    path = directory / META_NAME
    try:
        # A FIFO or a device in its place is damage too (never opened, or not read past the limit).
        raw = read_bytes(path, limit=MAX_META_BYTES, what="a meta.json")
    except FileNotFoundError:
        return None, f"{path} is missing"
    except FileRefused as exc:
        return None, f"{path} is corrupt ({exc})"
    except OSError as exc:
        raise StorageError(f"cannot read {path}: {exc.strerror}") from None
    try:
        data = loads(raw.decode("utf-8"), where=str(path))
    except ValueError as exc:
        return None, f"{path} is corrupt (not valid JSON: {exc})"
    if not isinstance(data, dict):
        return None, f"{path} is corrupt (expected a JSON object)"
    version = data.get("v", META_VERSION)
    if isinstance(version, int) and not isinstance(version, bool) and version > META_VERSION:
        SessionMeta.from_dict(data, str(path))  # raises the "newer Nova" refusal
    try:
        meta = SessionMeta.from_dict(data, str(path))
        _check_types(meta)
    except (StorageError, TypeError, ValueError, AttributeError) as exc:
        return None, f"{path} is corrupt ({exc})"
    if meta.id != directory.name:
        return None, f"{path} is corrupt (it names session {meta.id!r}, not {directory.name!r})"
    return meta, ""


def _check_types(meta: SessionMeta) -> None:
    """A hand-edited or damaged meta.json with a field of the wrong kind would break whoever sums or
    prints it later; it counts as corrupt instead."""
    for name in ("cwd", "git_root", "provider", "model", "parent_id"):
        if not isinstance(getattr(meta, name), str):
            raise ValueError(f"'{name}' must be a string")
    if meta.base_url is not None and not isinstance(meta.base_url, str):
        raise ValueError("'base_url' must be a string or null")
    for name in ("created_at", "updated_at", "cost_usd"):
        value = getattr(meta, name)
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise ValueError(f"'{name}' must be a number")
    if not isinstance(meta.message_count, int) or isinstance(meta.message_count, bool) or meta.message_count < 0:
        raise ValueError("'message_count' must be a whole number")
    if not isinstance(meta.extra, dict):
        raise ValueError("'extra' must be an object")


def write_meta(directory: Path, meta: SessionMeta) -> None:
    """Write to a temp file, fsync, rename: a reader sees the old or the new meta, never half of one."""
    path = directory / META_NAME
    try:
        replace_private_file(path, json_text(meta.to_dict(), indent=2), durable=True)
    except OSError as exc:
        raise StorageError(f"cannot write {path}: {exc.strerror}") from None
