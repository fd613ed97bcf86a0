"""Nova's MCP client: servers from config and `.mcp.json`, their tools as `mcp__<server>__<tool>`.

`nova.mcp.config` reads the `mcpServers` entries, `nova.mcp.connection` speaks to one server through the
`mcp` SDK (an optional extra, imported only when a server is configured), `nova.mcp.tools` turns server
tools into Nova tools, and `nova.mcp.catalog` holds a session's servers: on-demand loading of a large
catalog, `tools/list_changed` applied between calls, and restart-once for a server that dies.
"""

from nova.mcp.catalog import McpCatalog, ServerStatus, decide_on_demand
from nova.mcp.config import McpOptions, ServerConfig, load_options, load_servers
from nova.mcp.connection import MCP_EXTRA_HINT, McpUnavailable
from nova.mcp.tools import McpCallTool, McpSearchTool, McpTool, nova_tool_name

__all__ = [
    "MCP_EXTRA_HINT",
    "McpCallTool",
    "McpCatalog",
    "McpOptions",
    "McpSearchTool",
    "McpTool",
    "McpUnavailable",
    "ServerConfig",
    "ServerStatus",
    "decide_on_demand",
    "load_options",
    "load_servers",
    "nova_tool_name",
]
