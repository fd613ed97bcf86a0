"""What a session has cost so far: the figures `nova run` closes a turn with (model, cost, cache hit
rate), over the whole session, for the screens that show them while it goes on (the web page, the TUI).

The totals are the session's own (`meta.json`, moved once per model call by `Session.add_cost`); the
hit rate is `Usage.cache_hit_rate`, the one `nova run` prints.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from nova.providers.pricing import model_info
from nova.sessions.meta import SessionMeta

__all__ = ["SessionFigures", "session_figures"]


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionFigures:
    provider: str
    model: str
    cost_usd: float | None
    """None when the model is not in the price table (Nova does not guess a price), as `nova run` says."""
    cache_hit_rate: float | None
    """None before the first model call."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def session_figures(meta: SessionMeta) -> SessionFigures:
    # A model the table does not know is charged 0 per call: its total says nothing, unless a call
    # answered by a known model (an alias resolving to a dated id) was priced.
    priced = model_info(meta.model) is not None or meta.cost_usd > 0
    return SessionFigures(provider=meta.provider, model=meta.model, cost_usd=meta.cost_usd if priced else None,
                          cache_hit_rate=meta.usage.cache_hit_rate)
