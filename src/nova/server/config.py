"""`ServerConfig`: the server's settings, read from the `server` section of config.json.

    {"server": {"cors_origins": ["http://localhost:5173"], "max_body_bytes": 262144,
                "max_live_sessions": 256, "idle_session_timeout_s": 1800,
                "header_timeout_s": 10, "body_timeout_s": 30, "max_connections": 512,
                "allowed_hosts": ["nova.example.lan"], "approval_timeout_s": 300}}

CORS stays off unless origins are listed: the API holds a bearer token and runs tools on this machine,
so no other web origin may call it by default.

`max_live_sessions` and `idle_session_timeout_s` bound the sessions the server keeps open between turns
(see `nova.host.hub`): past the count the least recently used idle ones are closed, and one unused for the
timeout is closed (`null`: only the count closes them). A closed session reopens from its record on its
next request, which costs a resume, so the defaults keep hundreds open.

`header_timeout_s` and `body_timeout_s` bound how long a client may take to send a request's head and
its body (`nova.server.read_deadlines`): a client that trickles bytes to hold a connection open gets 408
and is disconnected. `max_connections` caps the connections served at once; a request on one past it
is answered 503 at once. `allowed_hosts` lists the names, besides localhost and IP addresses, that a
request's Host header may carry (`nova.server.hosts`): a web page that rebinds its own domain name to
this machine is refused with 421. `approval_timeout_s` is how long a tool call waits for the user's
answer (`nova.server.approvals`) before it is denied.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nova.errors import ConfigError
from nova.host.hub import DEFAULT_IDLE_TIMEOUT_S, DEFAULT_MAX_LIVE
from nova.server.approvals import DEFAULT_APPROVAL_TIMEOUT_S
from nova.settings import config_error, config_float

__all__ = ["DEFAULT_MAX_BODY_BYTES", "ServerConfig", "parse_server_config"]

# A chat message is text; a quarter of a megabyte is far more than any prompt a person types and small
# enough that a runaway client cannot make the server buffer much.
DEFAULT_MAX_BODY_BYTES = 256 * 1024
# A person's browser or a script sends a request head in milliseconds and a quarter-megabyte body in well
# under a second even on a poor link; these leave a wide margin and still free a held slot quickly.
DEFAULT_HEADER_TIMEOUT_S = 10.0
DEFAULT_BODY_TIMEOUT_S = 30.0
# Each open connection costs a file descriptor and, while it streams a turn, a task; 512 is far more
# than one person's clients and well under the usual limit of 1024 open files with the sessions' own.
DEFAULT_MAX_CONNECTIONS = 512


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerConfig:
    cors_origins: tuple[str, ...] = ()
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    max_live_sessions: int = DEFAULT_MAX_LIVE
    """Sessions kept open in memory; the least recently used idle one is closed past this."""
    idle_session_timeout_s: float | None = DEFAULT_IDLE_TIMEOUT_S
    """An open session unused this long is closed; None: never for being idle."""
    header_timeout_s: float = DEFAULT_HEADER_TIMEOUT_S
    """Time a client has to send a request's head (from connecting or from the previous response)."""
    body_timeout_s: float = DEFAULT_BODY_TIMEOUT_S
    """Time a client has to send a request's body, from the end of its head."""
    max_connections: int = DEFAULT_MAX_CONNECTIONS
    """Connections served at once; a request on one past this gets 503."""
    allowed_hosts: tuple[str, ...] = ()
    """Host names a request may be addressed to besides localhost and IP addresses (lower case)."""
    approval_timeout_s: float = DEFAULT_APPROVAL_TIMEOUT_S
    """How long a tool call waits for the user's answer before it is denied."""


def parse_server_config(raw: Mapping[str, Any], *, source: str) -> ServerConfig:
    values: dict[str, Any] = {}
    if "cors_origins" in raw:
        origins = raw["cors_origins"]
        if not isinstance(origins, list) or not all(isinstance(o, str) for o in origins):
            raise ConfigError(f"{source}: 'cors_origins' must be a list of strings, got {origins!r}")
        values["cors_origins"] = tuple(origins)
    if "allowed_hosts" in raw:
        hosts = raw["allowed_hosts"]
        if not isinstance(hosts, list) or not all(isinstance(h, str) and h.strip() for h in hosts):
            raise ConfigError(f"{source}: 'allowed_hosts' must be a list of host names, got {hosts!r}")
        values["allowed_hosts"] = tuple(h.strip().lower().rstrip(".") for h in hosts)
    for key in ("max_body_bytes", "max_live_sessions", "max_connections"):
        if key in raw:
            value = raw[key]
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ConfigError(f"{source}: {key!r} must be a positive integer, got {value!r}")
            values[key] = value
    if "idle_session_timeout_s" in raw:
        key, value = "idle_session_timeout_s", raw["idle_session_timeout_s"]
        if value is not None:
            seconds = config_float(value, source=source, key=key)
            if seconds <= 0:
                raise config_error(source, key, value, "a positive number of seconds or null")
            value = seconds
        values[key] = value
    for key in ("header_timeout_s", "body_timeout_s"):
        if key in raw:
            seconds = config_float(raw[key], source=source, key=key)
            if not 0 < seconds <= 3600:
                raise config_error(source, key, raw[key], "a number of seconds between 0 and 3600")
            values[key] = seconds
    if "approval_timeout_s" in raw:
        seconds = config_float(raw["approval_timeout_s"], source=source, key="approval_timeout_s")
        if not 0 < seconds <= 86400:
            raise config_error(source, "approval_timeout_s", raw["approval_timeout_s"], "a number of seconds up to a day")
        values["approval_timeout_s"] = seconds
    return ServerConfig(**values)
