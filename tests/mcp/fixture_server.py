"""A small MCP server written with the `mcp` SDK, run by the tests as a real subprocess.

    python fixture_server.py stdio
    python fixture_server.py http PORT
    python fixture_server.py catalog N      (stdio, N generated tools: the benchmark's catalog)

Tools: `echo` (round trip), `fail` (an error result), `crash` (the process exits mid-call),
`add_tool` (registers a new tool and sends tools/list_changed), `slow` (sleeps past a timeout).
"""

from __future__ import annotations

import asyncio
import os
import sys

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError


def build(catalog: int = 0) -> MCPServer:
    server = MCPServer("nova-fixture", log_level="ERROR")

    @server.tool(description="Echo the text back, prefixed with 'echo: '. Used to check a round trip.")
    def echo(text: str) -> str:
        return f"echo: {text}"

    @server.tool(description="Always fails with the given message.")
    def fail(message: str) -> str:
        raise ToolError(message)

    @server.tool(description="Exit the server process at once, in the middle of the call.")
    def crash() -> str:
        sys.stdout.flush()
        os._exit(3)

    @server.tool(description="Sleep for the given seconds, then answer.")
    async def slow(seconds: float) -> str:
        await asyncio.sleep(seconds)
        return "done"

    @server.tool(description="Register a new tool named NAME and announce the changed tool list.")
    async def add_tool(name: str, ctx: Context) -> str:
        def added(value: str) -> str:
            return f"{name}: {value}"

        server.add_tool(added, name=name, description=f"The tool {name}, added at run time.")
        await ctx.session.send_tool_list_changed()
        return f"added {name}"

    for i in range(catalog):
        _catalog_tool(server, i)
    return server


def _catalog_tool(server: MCPServer, i: int) -> None:
    area = ("issues", "pulls", "files", "builds", "deploys", "alerts", "users", "tickets")[i % 8]

    def tool(target: str, limit: int = 20, state: str = "open", labels: list[str] | None = None,
             since: str | None = None, sort: str = "updated", verbose: bool = False) -> str:
        return f"{area} {i}: {target} limit={limit} state={state}"

    server.add_tool(tool, name=f"{area}_op_{i:03d}", description=(
        f"Operation {i} on {area}: lists, filters and summarises {area} of the target project. Returns at most "
        f"`limit` entries sorted by `sort`, optionally only those with the given labels or changed since a date. "
        f"Use verbose for full records; the default is a one-line summary per entry."))


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    if mode == "http":
        build().run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    elif mode == "catalog":
        build(int(sys.argv[2])).run("stdio")
    else:
        build().run("stdio")


if __name__ == "__main__":
    main()
