"""The manifest of one compiled view (CTX-2): what each segment is, where it came from and why it is there.

Every token of the view belongs to exactly one segment; `used` is the token ledger's figure for the view
(TOK-3), and the segments' `tokens` are their estimates calibrated to it (largest-remainder rounding),
so they sum to `used` exactly. `estimated` keeps each segment's own estimate.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["Dropped", "Manifest", "Segment", "SegmentClass", "apportion"]

SegmentClass = Literal["always-on", "index", "on-demand", "pinned"]
Visibility = Literal["system", "tools", "messages"]


@dataclass(frozen=True, kw_only=True)
class Segment:
    id: str
    cls: SegmentClass
    source: str
    """What it came from: `file:<path>#<sha>`, `memory:<name>`, `messages:<first>..<last> (N)`, `tool:…`."""
    version: str
    """A content hash (or the task state's version): changes exactly when the segment's bytes do."""
    tokens: int
    reason: str
    visibility: Visibility
    estimated: int = 0
    message_ids: tuple[str, ...] = ()
    text: str = field(default="", repr=False, compare=False)
    """The text of a head or observation segment, for `--why` (not serialized; history segments are
    read from the view through their message ids)."""

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": self.id, "class": self.cls, "source": self.source, "version": self.version,
            "tokens": self.tokens, "estimated": self.estimated, "reason": self.reason,
            "visibility": self.visibility,
        }
        if self.message_ids:
            data["message_ids"] = list(self.message_ids)
        return data


@dataclass(frozen=True, kw_only=True)
class Dropped:
    id: str
    source: str
    reason: str
    tokens: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "source": self.source, "reason": self.reason, "tokens": self.tokens}


@dataclass(frozen=True, kw_only=True)
class Manifest:
    used: int
    """The ledger's figure for this view (TOK-3)."""
    limit: int
    window: int
    segments: tuple[Segment, ...]
    dropped: tuple[Dropped, ...] = ()
    digest: str = ""
    """sha256 of the view's bytes."""

    @property
    def percent(self) -> float:
        return round(max(self.used, 0) * 100.0 / self.limit, 1) if self.limit > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "used": self.used, "limit": self.limit, "window": self.window, "percent": self.percent,
            "digest": self.digest,
            "segments": [s.to_dict() for s in self.segments],
            "dropped": [d.to_dict() for d in self.dropped],
        }

    def by_id(self) -> Mapping[str, Segment]:
        return {s.id: s for s in self.segments}


def apportion(total: int, weights: Sequence[int]) -> list[int]:
    """Split `total` in proportion to `weights` with largest-remainder rounding: the parts sum to
    `total` exactly. Ties go to the earlier index, so the split is deterministic."""
    if not weights:
        return []
    weight_sum = sum(weights)
    if weight_sum <= 0:
        parts = [0] * len(weights)
        parts[-1] = total
        return parts
    raw = [total * w / weight_sum for w in weights]
    parts = [int(r) for r in raw]
    short = total - sum(parts)
    order = sorted(range(len(raw)), key=lambda i: (-(raw[i] - parts[i]), i))
    for i in order[:short]:
        parts[i] += 1
    return parts
