"""Which MCP servers a session connects to, read from Nova's config and the project's `.mcp.json`.

Both use the `mcpServers` shape other coding agents write, so an existing file works unchanged:

    {"mcpServers": {
        "github": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"],
                   "env": {"GITHUB_TOKEN": "..."}},
        "docs":   {"type": "http", "url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ..."}}
    }}

A server with `command` is started as a subprocess and spoken to over stdio; one with `url` over
streamable HTTP. Nova's own config wins over `.mcp.json` for a server named in both (the user's file is
the one they meant to edit). Nova's `mcp` section holds the knobs of the client itself: `tool_timeout_s`
(per call), `startup_timeout_s` (each server's deadline to start), `startup_wait_s` (how long the first
request waits for servers still starting) and `on_demand` (`auto`, `always`, `never`; see
`nova.mcp.catalog`). A server's `"network": true` lets it reach the network inside the sandbox.

A server from the project's `.mcp.json` starts only once the user trusted it for that project and
that content (`nova trust`, nova.tools.policy.trust).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from nova.errors import ConfigError, FileRefused
from nova.fs.safe_read import read_json
from nova.tools.policy.trust import content_digest

__all__ = ["McpOptions", "ServerConfig", "load_options", "load_servers", "project_mcp_file"]

OnDemand = Literal["auto", "always", "never"]
_NAME_RE = re.compile(r"^[A-Za-z0-9_-]+$")


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerConfig:
    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    source: str = ""
    """Where the entry was read (a file path), for messages."""
    network: bool = False
    """In the sandbox: whether the server may reach the network (`"network": true` in its entry)."""
    digest: str = ""
    """The digest of the entry as written: what a project's server is trusted by (nova.tools.policy.trust)."""
    from_project: bool = False
    """Read from the project's `.mcp.json` (needs the user's trust) rather than Nova's own config."""

    @property
    def transport(self) -> Literal["stdio", "http"]:
        return "stdio" if self.command is not None else "http"


@dataclass(frozen=True, slots=True, kw_only=True)
class McpOptions:
    tool_timeout_s: float = 60.0
    startup_timeout_s: float = 30.0
    """Each server's deadline to start and list its tools; past it the server is stopped and reported."""
    startup_wait_s: float = 3.0
    """How long a session's first request waits, in all, for servers still starting: they start side by
    side, and one ready later joins before a later request (one cache break)."""
    on_demand: OnDemand = "auto"
    on_demand_share: float = 0.05
    """`auto` loads the catalog on demand when its full definitions would take more than this share of
    the context window (see `nova.mcp.catalog.decide_on_demand`)."""


MAX_MCP_FILE_BYTES = 1024 * 1024


def project_mcp_file(root: Path) -> Path:
    return root / ".mcp.json"


def _strings(value: Any, *, where: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise ConfigError(f"{where}: must be an object of strings")
    return dict(value)


def _server(name: str, raw: Any, *, source: str, from_project: bool = False) -> ServerConfig:
    where = f"{source}: mcpServers.{name}"
    if not _NAME_RE.match(name):
        raise ConfigError(f"{where}: a server name may hold only letters, digits, '_' and '-' (it becomes part "
                          "of the tool names mcp__<server>__<tool>)")
    if "__" in name:
        raise ConfigError(f"{where}: a server name may not contain '__' (it separates server and tool in "
                          "mcp__<server>__<tool>)")
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where}: must be an object with `command` (stdio) or `url` (HTTP)")
    command, url = raw.get("command"), raw.get("url")
    if (command is None) == (url is None):
        raise ConfigError(f"{where}: give exactly one of `command` (a stdio server) or `url` (an HTTP server)")
    kind = raw.get("type")
    if kind not in (None, "stdio", "http", "streamable-http", "streamable_http"):
        raise ConfigError(f"{where}: type {kind!r} is not supported; use stdio or http (streamable HTTP)")
    args = raw.get("args", [])
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise ConfigError(f"{where}: `args` must be a list of strings")
    if command is not None and (not isinstance(command, str) or not command.strip()):
        raise ConfigError(f"{where}: `command` must be a non-empty string")
    if url is not None and (not isinstance(url, str) or not url.startswith(("http://", "https://"))):
        raise ConfigError(f"{where}: `url` must be an http:// or https:// address")
    cwd = raw.get("cwd")
    if cwd is not None and not isinstance(cwd, str):
        raise ConfigError(f"{where}: `cwd` must be a string")
    network = raw.get("network", False)
    if not isinstance(network, bool):
        raise ConfigError(f"{where}: `network` must be true or false")
    return ServerConfig(name=name, command=command, args=tuple(args), env=_strings(raw.get("env"), where=f"{where}.env"),
                        cwd=cwd, url=url, headers=_strings(raw.get("headers"), where=f"{where}.headers"),
                        source=source, network=network, digest=content_digest(dict(raw)),
                        from_project=from_project)


def _servers_of(raw: Any, *, source: str, from_project: bool = False) -> dict[str, ServerConfig]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{source}: `mcpServers` must be an object keyed by server name")
    return {name: _server(str(name), value, source=source, from_project=from_project) for name, value in raw.items()}


def load_servers(config_servers: Mapping[str, Any], *, config_source: str, project_root: Path | None) -> list[ServerConfig]:
    """The configured servers, sorted by name: `.mcp.json` in `project_root` (when present) overlaid by
    Nova's config `mcpServers`. Bad entries raise `ConfigError` naming the file and the server."""
    servers: dict[str, ServerConfig] = {}
    if project_root is not None:
        path = project_mcp_file(project_root)
        if path.is_file():
            try:
                # The repository's file: a regular one only, bounded, its JSON depth-limited (nova.fs).
                data = read_json(path, limit=MAX_MCP_FILE_BYTES, what="a .mcp.json")
            except (OSError, UnicodeDecodeError, ValueError, FileRefused) as exc:
                raise ConfigError(f"{path}: cannot be read as JSON ({exc})") from None
            if not isinstance(data, Mapping):
                raise ConfigError(f"{path}: must be a JSON object with `mcpServers`")
            servers.update(_servers_of(data.get("mcpServers"), source=str(path), from_project=True))
    servers.update(_servers_of(config_servers or None, source=config_source))
    return [servers[name] for name in sorted(servers)]


def load_options(raw: Mapping[str, Any], *, source: str) -> McpOptions:
    defaults = McpOptions()
    timeout = raw.get("tool_timeout_s", defaults.tool_timeout_s)
    startup = raw.get("startup_timeout_s", defaults.startup_timeout_s)
    wait = raw.get("startup_wait_s", defaults.startup_wait_s)
    for key, value in (("startup_timeout_s", startup), ("startup_wait_s", wait)):
        if not isinstance(value, int | float) or isinstance(value, bool) or value < 0 or (
                key == "startup_timeout_s" and value == 0):
            raise ConfigError(f"{source}: mcp.{key} must be a {'positive' if key == 'startup_timeout_s' else 'non-negative'} "
                              "number of seconds")
    on_demand = raw.get("on_demand", defaults.on_demand)
    share = raw.get("on_demand_share", defaults.on_demand_share)
    if not isinstance(timeout, int | float) or isinstance(timeout, bool) or timeout <= 0:
        raise ConfigError(f"{source}: mcp.tool_timeout_s must be a positive number of seconds")
    if on_demand not in ("auto", "always", "never"):
        raise ConfigError(f"{source}: mcp.on_demand must be auto, always or never")
    if not isinstance(share, int | float) or isinstance(share, bool) or not 0 < share <= 1:
        raise ConfigError(f"{source}: mcp.on_demand_share must be a number in (0, 1]")
    return McpOptions(tool_timeout_s=float(timeout), startup_timeout_s=float(startup), startup_wait_s=float(wait),
                      on_demand=on_demand, on_demand_share=float(share))
