"""Hard filters: records that must never be ranked (another project or user, outside the time window,
another type, expired, revoked, not reviewed). Each exclusion is counted by reason for the manifest."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from nova.memory.retrieval.records import Record, ReviewState

__all__ = ["Filtered", "HardFilters"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Filtered:
    kept: tuple[Record, ...]
    excluded: dict[str, int]
    """Reason -> how many records it removed."""


@dataclass(frozen=True, slots=True, kw_only=True)
class HardFilters:
    project: str | None = None
    """Only records of this project (records with no project, such as user memories, pass)."""
    user: str | None = None
    types: frozenset[str] | None = None
    since: datetime | None = None
    until: datetime | None = None
    now: datetime | None = None
    """Validity: records that expired at or before `now` are removed."""
    states: frozenset[ReviewState] = field(default_factory=lambda: frozenset({"active"}))
    """Review states allowed through; revoked is never allowed, whatever is asked."""

    def reason_to_exclude(self, record: Record) -> str | None:
        if record.status == "revoked" or record.status not in self.states:
            return f"review state {record.status}"
        if self.now is not None and record.expires is not None and record.expires <= self.now:
            return "expired"
        if self.project is not None and record.project is not None and record.project != self.project:
            return "other project"
        if self.user is not None and record.user is not None and record.user != self.user:
            return "other user"
        if self.types is not None and record.type not in self.types:
            return "type"
        if self.since is not None and (record.at is None or record.at < self.since):
            return "before time window"
        if self.until is not None and (record.at is None or record.at > self.until):
            return "after time window"
        return None

    def apply(self, records: Iterable[Record]) -> Filtered:
        kept: list[Record] = []
        excluded: Counter[str] = Counter()
        for record in records:
            reason = self.reason_to_exclude(record)
            if reason is None:
                kept.append(record)
            else:
                excluded[reason] += 1
        return Filtered(kept=tuple(kept), excluded=dict(excluded))

    def describe(self) -> dict[str, object]:
        return {
            "project": self.project, "user": self.user,
            "types": sorted(self.types) if self.types is not None else None,
            "since": self.since.isoformat() if self.since else None,
            "until": self.until.isoformat() if self.until else None,
            "states": sorted(self.states),
        }
