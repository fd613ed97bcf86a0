"""The MCP catalog of a session, built from settings: `nova.agent.builder` and `nova mcp list` both use it."""

from __future__ import annotations

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

__all__ = ["catalog_for", "configured_servers"]

log = logging.getLogger(__name__)


def configured_servers(settings: Settings, cwd: Path) -> list[ServerConfig]:
    """Servers from the config's `mcpServers` over the project's `.mcp.json`."""
    return load_servers(settings.section("mcpServers"), config_source=str(settings.config_file),
                        project_root=project_root(cwd))


def catalog_for(settings: Settings, cwd: Path, *, window: int, counter: TokenCounter,
                report: Callable[[str, Mapping[str, Any]], None] | None = None,
                strict: bool = False) -> McpCatalog | None:
    """The started catalog, or None when no server is configured. Without the `mcp` SDK a session goes on
    without MCP tools and says why (`strict`: raise `MissingDependency` instead, for `nova mcp list`)."""
    servers = configured_servers(settings, cwd)
    if not servers:
        return None
    options = load_options(settings.section("mcp"), source=f"{settings.config_file} [mcp]")
    try:
        require_sdk()
    except MissingDependency as exc:
        if strict:
            raise
        log.warning("%s (servers: %s); continuing without MCP tools", exc, ", ".join(s.name for s in servers))
        return None
    # Servers' own stderr goes to a log beside Nova's, never into the terminal or the TUI.
    return McpCatalog(servers, options=options, window=window, counter=counter, report=report,
                      log_dir=settings.home / "logs").start()
