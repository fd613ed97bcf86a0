"""`ServerConfig`: the server's settings, read from the `server` section of config.json.

    {"server": {"cors_origins": ["http://localhost:5173"], "max_body_bytes": 262144,
                "max_live_sessions": 256, "idle_session_timeout_s": 1800}}

CORS stays off unless origins are listed: the API holds a bearer token and runs tools on this machine,
so no other web origin may call it by default.

`max_live_sessions` and `idle_session_timeout_s` bound the sessions the server keeps open between turns
(see `nova.host`): past the count the least recently used idle ones are closed, and one unused for the
timeout is closed (`null`: only the count closes them). A closed session reopens from its record on its
next request, which costs a resume, so the defaults keep hundreds open.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nova.errors import ConfigError
from nova.host import DEFAULT_IDLE_TIMEOUT_S, DEFAULT_MAX_LIVE
from nova.settings import _bad, _to_float

__all__ = ["DEFAULT_MAX_BODY_BYTES", "ServerConfig", "parse_server_config"]

# A chat message is text; a quarter of a megabyte is far more than any prompt a person types and small
# enough that a runaway client cannot make the server buffer much.
DEFAULT_MAX_BODY_BYTES = 256 * 1024


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerConfig:
    cors_origins: tuple[str, ...] = ()
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    max_live_sessions: int = DEFAULT_MAX_LIVE
    """Sessions kept open in memory; the least recently used idle one is closed past this."""
    idle_session_timeout_s: float | None = DEFAULT_IDLE_TIMEOUT_S
    """An open session unused this long is closed; None: never for being idle."""


def parse_server_config(raw: Mapping[str, Any], *, source: str) -> ServerConfig:
    values: dict[str, Any] = {}
    if "cors_origins" in raw:
        origins = raw["cors_origins"]
        if not isinstance(origins, list) or not all(isinstance(o, str) for o in origins):
            raise ConfigError(f"{source}: 'cors_origins' must be a list of strings, got {origins!r}")
        values["cors_origins"] = tuple(origins)
    for key in ("max_body_bytes", "max_live_sessions"):
        if key in raw:
            value = raw[key]
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ConfigError(f"{source}: {key!r} must be a positive integer, got {value!r}")
            values[key] = value
    if "idle_session_timeout_s" in raw:
        key, value = "idle_session_timeout_s", raw["idle_session_timeout_s"]
        if value is not None:
            seconds = _to_float(value, source=source, key=key)
            if seconds <= 0:
                raise _bad(source, key, value, "a positive number of seconds or null")
            value = seconds
        values[key] = value
    return ServerConfig(**values)
