"""Which names the server answers to: the defence against DNS rebinding.

A web page on `evil.example` can point its own name at 127.0.0.1 once loaded; the browser then sends
the page's requests to this server, same-origin as far as it knows, with `Host: evil.example`. A request
is therefore answered only when its Host header names this server:

- bound to loopback: `localhost` (and `*.localhost`, which browsers keep on loopback), a loopback
  address, or a name listed in `allowed_hosts`;
- bound beyond loopback: also any IP address (a rebinding needs a name the attacker controls; a URL
  with an address cannot be rebound), so a name people use to reach the machine must be listed.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

__all__ = ["HostPolicy", "host_name", "is_loopback"]


def is_loopback(bind_host: str) -> bool:
    """Whether binding `bind_host` keeps the server reachable from this machine only. A name other than
    `localhost` may resolve anywhere, so it counts as beyond loopback."""
    host = bind_host.strip().strip("[]").lower().rstrip(".")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def host_name(header: str) -> str:
    """The host part of a Host header (`name:port`, `[v6]:port`, a bare name), lower case."""
    value = header.strip().lower()
    if value.startswith("["):
        return value[1:].partition("]")[0]
    if value.count(":") == 1:
        value = value.partition(":")[0]
    return value.rstrip(".")


def _address(name: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(name)
    except ValueError:
        return None


@dataclass(frozen=True, slots=True, kw_only=True)
class HostPolicy:
    loopback: bool
    """Bound to loopback: only loopback names and addresses, and the listed names, are answered."""
    allowed: frozenset[str] = frozenset()
    """Names from `allowed_hosts`, lower case."""

    @classmethod
    def for_bind(cls, bind_host: str, allowed: tuple[str, ...] = ()) -> HostPolicy:
        return cls(loopback=is_loopback(bind_host), allowed=frozenset(allowed))

    def allows(self, header: str | None) -> bool:
        if header is None:
            # Only an HTTP/1.0 client omits it; a browser, the rebinding attacker's tool, always sends it.
            return True
        name = host_name(header)
        if name in self.allowed or name == "localhost" or name.endswith(".localhost"):
            return True
        address = _address(name)
        if address is None:
            return False
        return address.is_loopback or not self.loopback
