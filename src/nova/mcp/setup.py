"""The MCP catalog of a session, built from settings: `nova.agent.builder` and `nova mcp list` both use it."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from nova.errors import MissingDependency
from nova.mcp.catalog import McpCatalog
from nova.mcp.config import ServerConfig, load_options, load_servers
from nova.mcp.connection import require_sdk
from nova.memory.paths import project_root
from nova.settings import Settings
from nova.tokens import TokenCounter
from nova.tools.policy.sandbox import Sandbox
from nova.tools.policy.trust import TrustItem, TrustStore, trust_hint

__all__ = ["catalog_for", "configured_servers", "project_server_items", "untrusted_servers"]

log = logging.getLogger(__name__)


def configured_servers(settings: Settings, cwd: Path) -> list[ServerConfig]:
    """Servers from the config's `mcpServers` over the project's `.mcp.json`."""
    return load_servers(settings.section("mcpServers"), config_source=str(settings.config_file),
                        project_root=project_root(cwd))


def project_server_items(servers: list[ServerConfig]) -> list[TrustItem]:
    """The project's servers as things to trust (the user's own config needs no trust)."""
    return [TrustItem(kind="mcp", name=s.name, digest=s.digest, source=Path(s.source),
                      runs=" ".join([s.command, *s.args]) if s.command is not None else f"connects to {s.url}")
            for s in servers if s.from_project]


def untrusted_servers(settings: Settings, cwd: Path, servers: list[ServerConfig]) -> list[ServerConfig]:
    """The project's servers the user has not trusted for this project and this content."""
    untrusted = {item.name for item in TrustStore(settings.home).untrusted(project_root(cwd),
                                                                           project_server_items(servers))}
    return [s for s in servers if s.name in untrusted]


def catalog_for(settings: Settings, cwd: Path, *, window: int, counter: TokenCounter,
                report: Callable[[str, Mapping[str, Any]], None] | None = None,
                strict: bool = False, sandbox: Sandbox | None = None) -> McpCatalog | None:
    """The started catalog, or None when no server is configured. Without the `mcp` SDK a session goes on
    without MCP tools and says why (`strict`: raise `MissingDependency` instead, for `nova mcp list`, and
    wait for each server up to its deadline). A project's server not trusted yet is not started: one
    line says which and how to trust it. Stdio servers run in `sandbox` when given (with the network
    when their entry says `"network": true`)."""
    servers = configured_servers(settings, cwd)
    if not servers:
        return None
    untrusted = untrusted_servers(settings, cwd, servers)
    if untrusted:
        root = project_root(cwd)
        log.warning("not starting MCP servers from %s that are not trusted for this project: %s; %s",
                    untrusted[0].source, ", ".join(s.name for s in untrusted), trust_hint(root))
    startable = [s for s in servers if s not in untrusted]
    options = load_options(settings.section("mcp"), source=f"{settings.config_file} [mcp]")
    try:
        require_sdk()
    except MissingDependency as exc:
        if strict:
            raise
        if startable:
            log.warning("%s (servers: %s); continuing without MCP tools", exc, ", ".join(s.name for s in startable))
        return None

    def sandbox_for(config: ServerConfig) -> Sandbox | None:
        if sandbox is None or not config.network or sandbox.plan.network:
            return sandbox
        return dataclasses.replace(sandbox, plan=dataclasses.replace(sandbox.plan, network=True))

    # Servers' own stderr goes to a log beside Nova's, never into the terminal or the TUI.
    catalog = McpCatalog(startable, options=options, window=window, counter=counter, report=report,
                         log_dir=settings.home / "logs", sandbox=sandbox_for, home=settings.home,
                         untrusted=untrusted)
    return catalog.start(wait_s=None if strict else options.startup_wait_s)
