"""A memory as a value: its kinds, its provenance and the checks on its name (SPEC MEM-1..3).

`nova.memory.store` reads and writes these as files; the review ledger (`nova.memory.reviews`) judges
them. Both take the type from here, so neither has to import the other for it.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from nova.errors import UnsafeMemoryName

__all__ = ["HOME_TYPES", "MEMORY_TYPES", "PROJECT_TYPES", "STATUSES", "Author", "Memory", "MemorySource", "MemoryType",
           "Origin", "Status", "format_time", "parse_time", "slugify", "utc_now"]

MemoryType = Literal["user", "feedback", "project", "reference"]
Status = Literal["candidate", "active", "revoked"]
Author = Literal["user", "model"]
Origin = Literal["user", "assistant", "tool", "web", "cli"]

MEMORY_TYPES: tuple[MemoryType, ...] = ("user", "feedback", "project", "reference")
HOME_TYPES: frozenset[str] = frozenset({"user", "feedback"})
PROJECT_TYPES: frozenset[str] = frozenset({"project", "reference"})
STATUSES: tuple[Status, ...] = ("candidate", "active", "revoked")
_MAX_SLUG = 80


# -- names ---------------------------------------------------------------------------------------------
def slugify(name: str) -> str:
    """The file stem for `name`. Names that could escape the directory or hide in a listing are refused
    outright instead of being cleaned, so a hostile name never silently lands on another memory."""
    if not name or not name.strip():
        raise UnsafeMemoryName("memory name is empty")
    if "\x00" in name:
        raise UnsafeMemoryName("memory name contains a NUL character")
    if any(unicodedata.category(ch) in ("Cc", "Cf") for ch in name):
        raise UnsafeMemoryName("memory name contains control characters")
    if "/" in name or "\\" in name:
        raise UnsafeMemoryName(f"memory name {name!r} contains a path separator")
    if ".." in name:
        raise UnsafeMemoryName(f"memory name {name!r} contains '..'")
    chars = [ch if ch.isalnum() or ch in "._-" else "-" for ch in unicodedata.normalize("NFKC", name).lower()]
    slug = re.sub(r"-{2,}", "-", "".join(chars)).strip("-._")[:_MAX_SLUG].strip("-._")
    if not slug:
        raise UnsafeMemoryName(f"memory name {name!r} has no usable characters")
    # MEMORY.md is the index; memory.md would collide with it on case-insensitive file systems.
    if slug == "memory":
        raise UnsafeMemoryName("memory name 'memory' is reserved for the index")
    return slug


# -- time -----------------------------------------------------------------------------------------------
def format_time(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(value: Any) -> datetime | None:
    """YAML gives datetimes for unquoted ISO times and strings for quoted ones; accept both."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if hasattr(value, "isoformat") and not isinstance(value, str):  # a bare date
        return datetime.fromisoformat(value.isoformat()).replace(tzinfo=UTC)
    try:
        parsed = datetime.fromisoformat(str(value).strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def utc_now() -> datetime:
    """Now, to the second: what a memory's times are written with."""
    return datetime.now(UTC).replace(microsecond=0)


# -- the value -----------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True, kw_only=True)
class MemorySource:
    session: str | None = None
    messages: tuple[str, ...] = ()
    origin: Origin = "user"
    tool_calls: tuple[str, ...] = ()
    """The tool calls whose results the memory was drawn from (extraction fills it)."""

    def describe(self) -> str:
        parts: list[str] = [self.origin]
        if self.session:
            parts.append(f"session {self.session}")
        if self.messages:
            parts.append("messages " + ",".join(self.messages))
        if self.tool_calls:
            parts.append("tool calls " + ",".join(self.tool_calls))
        return ", ".join(parts)


@dataclass(frozen=True, slots=True, kw_only=True)
class Memory:
    name: str
    description: str
    type: MemoryType
    body: str
    status: Status = "active"
    author: Author = "user"
    created: datetime = field(default_factory=utc_now)
    updated: datetime = field(default_factory=utc_now)
    expires: datetime | None = None
    source: MemorySource = field(default_factory=MemorySource)
    external: bool = False
    reason: str = ""
    path: Path | None = None
    review_note: str = ""
    """Why the memory is held for review when Nova's review records, not the file, decided (never
    written to the file; see `nova.memory.reviews`)."""
    recorded: bool = True
    """False when Nova has no record of writing this content: its provenance is unknown, so it is not
    recalled even where candidates are."""
    evidence: tuple[str, ...] = ()
    """What besides the user's and the model's own words it was drawn from ("tool result", "file content")."""

    @property
    def scope(self) -> str:
        """`user` (the home, this person only) or `project` (the repository, shared with everyone in it)."""
        return "user" if self.type in HOME_TYPES else "project"

    @property
    def slug(self) -> str:
        return slugify(self.name)

    def is_expired(self, now: datetime) -> bool:
        return self.expires is not None and self.expires <= now

    def recallable(self, now: datetime, *, include_candidates: bool = False) -> bool:
        if self.status == "revoked" or self.is_expired(now):
            return False
        if self.status == "candidate":
            return include_candidates and not self.external and self.recorded
        return True
