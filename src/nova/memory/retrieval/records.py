"""What retrieval ranks: one `Record` per memory or per turn of a past session, with the fields the
hard filters and the rerank read. Memories become records through `nova.memory.retrieval.adapter`,
the one place that reads memory metadata."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

__all__ = ["Kind", "Record", "ReviewState"]

Kind = Literal["memory", "session"]
ReviewState = Literal["candidate", "active", "revoked"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Record:
    id: str
    text: str
    kind: Kind = "memory"
    title: str = ""
    """A memory's name and description; empty for a session turn."""
    type: str = ""
    """Memory type (user, feedback, project, reference) or `turn` for a session record."""
    project: str | None = None
    user: str | None = None
    status: ReviewState = "active"
    at: datetime | None = None
    """When it was written (a memory's last update, a turn's session time): the time filter and recency."""
    expires: datetime | None = None
    trust: float = 0.5
    """0..1: how much the content can be relied on (reviewed by a person > written by Nova > external)."""
    risk: float = 0.0
    """0..1: harm if the content is wrong or hostile (external text, text that reads like an instruction)."""
    cost: int = 0
    """Tokens the snippet will take in the prompt."""
    source: str = ""
    """Where it came from, shown beside the snippet (file path, session and message ids)."""
    group: str | None = None
    """Records of one group (a session) are neighbours: each is indexed with the ones around it."""
    position: int = 0
    speaker: str = ""
    date_label: str = ""
    """The time as people write it ("8 May, 2023"), indexed as words so questions naming a time match."""
    external: bool = False
