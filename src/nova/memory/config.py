"""The `memory` section of `~/.nova/config.json`, parsed into one value object.

    {"memory": {"model_status": "candidate", "recall_limit": 5, "recall_timeout_s": 8, ...}}

Every key is optional; the defaults are the numbers of SPEC MEM-3..6. Unknown keys are ignored (the
section is owned here, so `nova.settings` does not warn about it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any, Literal

from nova.errors import ConfigError
from nova.settings import config_float, config_int, config_str

__all__ = ["MemoryConfig", "parse_memory_config"]

InitialStatus = Literal["candidate", "active"]


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryConfig:
    enabled: bool = True
    model_status: InitialStatus = "candidate"
    """Status of a model-authored memory that passed every check. A proposal drawn from a conversation
    holding tool output or file content stays `candidate` whatever this says, and a proposal for an
    approved memory's name waits beside it as a candidate revision (MEM-7)."""
    recall_limit: int = 5
    scan_limit: int = 200
    head_lines: int = 30
    recall_timeout_s: float = 8.0
    recall_grace_s: float = 0.04
    """How long the first model call of a turn may wait for a recall still running (MEM-5: < 50 ms)."""
    recall_candidates: bool = False
    """Recall unreviewed candidates too (never external ones, nor files Nova has no record of writing).
    Off: only approved memories are recalled."""
    index_max_lines: int = 200
    index_max_bytes: int = 25_000
    extract_recent_messages: int = 20
    consolidate_min_hours: float = 24.0
    consolidate_min_sessions: int = 5
    consolidate_scan_interval_s: float = 600.0
    lock_stale_s: float = 3600.0


_INT_KEYS = {
    "recall_limit", "scan_limit", "head_lines", "index_max_lines", "index_max_bytes",
    "extract_recent_messages", "consolidate_min_sessions",
}
_FLOAT_KEYS = {"recall_timeout_s", "recall_grace_s", "consolidate_min_hours", "consolidate_scan_interval_s", "lock_stale_s"}
_BOOL_KEYS = {"enabled", "recall_candidates"}


def parse_memory_config(raw: Mapping[str, Any], *, source: str = "config [memory]") -> MemoryConfig:
    known = {f.name for f in fields(MemoryConfig)}
    values: dict[str, Any] = {}
    for key, value in raw.items():
        if key not in known:
            continue
        if key in _INT_KEYS:
            values[key] = config_int(value, source=source, key=key)
            if values[key] < 0:
                raise ConfigError(f"{source}: key {key!r} must not be negative, got {value!r}")
        elif key in _FLOAT_KEYS:
            values[key] = config_float(value, source=source, key=key)
        elif key in _BOOL_KEYS:
            if not isinstance(value, bool):
                raise ConfigError(f"{source}: key {key!r} has value {value!r}, expected true or false")
            values[key] = value
        elif key == "model_status":
            status = config_str(value, source=source, key=key)
            if status not in ("candidate", "active"):
                raise ConfigError(f"{source}: key 'model_status' has value {status!r}, expected "
                                  "'candidate' or 'active'")
            values[key] = status
    return replace(MemoryConfig(), **values)
