"""MCP tools as Nova tools: their names, and the two tools of an on-demand catalog.

A server's tool `search` on server `docs` is `mcp__docs__search` to the model, to permission rules
(`mcp__docs__search(...)`, `mcp__docs__*`) and in `nova mcp list`. Characters a provider does not accept in
a tool name become `_`; a name over 64 characters keeps its start and gains a short digest, so two long
names never collide.

On demand (`nova.mcp.catalog`) the model is sent two tools instead of every definition: `mcp_search`,
whose description lists each tool's name and one line and which returns full schemas, and `mcp_call`,
which runs a tool by its Nova name. `mcp_call` is resolved to the real tool before the permission check
(`resolve_call`, `nova.tools.base.resolve_delegate`), so a rule on `mcp__docs__search` holds however
the tool is reached.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from nova.errors import ToolError
from nova.mcp.connection import CallOutcome
from nova.tools._schema import param
from nova.tools.base import DelegatingTool, Tool, ToolContext, ToolOutput

__all__ = ["MCP_PREFIX", "McpCallTool", "McpSearchTool", "McpTool", "nova_tool_name", "one_line"]

MCP_PREFIX = "mcp__"
MAX_NAME = 64
ONE_LINE_CHARS = 80
_BAD = re.compile(r"[^A-Za-z0-9_-]")


def nova_tool_name(server: str, tool: str) -> str:
    name = f"{MCP_PREFIX}{server}__{_BAD.sub('_', tool)}"
    if len(name) <= MAX_NAME:
        return name
    digest = hashlib.blake2b(name.encode(), digest_size=4).hexdigest()
    return f"{name[: MAX_NAME - 9]}_{digest}"


def one_line(description: str) -> str:
    """The first sentence (or line) of a description, at most `ONE_LINE_CHARS` characters."""
    text = " ".join(description.split())
    match = re.search(r"(?<=[.!?])\s", text)
    first = text[: match.start()] if match else text
    return first if len(first) <= ONE_LINE_CHARS else first[: ONE_LINE_CHARS - 1].rstrip() + "…"


class _Caller(Protocol):
    def __call__(self, server: str, tool: str, arguments: Mapping[str, Any], timeout_s: float, *,
                 cancel: threading.Event | None = None) -> CallOutcome: ...


class McpTool:
    """One server tool. Not read-only: a server's own hints are not trusted, so the default policy asks."""

    read_only = False

    def __init__(self, *, server: str, remote_name: str, description: str, input_schema: Mapping[str, Any],
                 call: _Caller) -> None:
        self.server = server
        self.remote_name = remote_name
        self.name = nova_tool_name(server, remote_name)
        self.description = description or f"{remote_name} (MCP server {server})"
        self.input_schema: Mapping[str, Any] = input_schema
        self._call = call

    def definition(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "input_schema": dict(self.input_schema)}

    def run(self, input: Mapping[str, Any], ctx: ToolContext) -> ToolOutput:
        outcome = self._call(self.server, self.remote_name, input, ctx.timeout_s, cancel=ctx.cancel)
        return ToolOutput(content=outcome.text or "(no output)", is_error=outcome.is_error,
                          metadata={"mcp_server": self.server, "mcp_tool": self.remote_name, **outcome.metadata})


SEARCH_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "properties": {
        "query": param("string", "Tool names (comma-separated) or keywords to look for."),
        "max_results": param("integer", minimum=1, maximum=20, default=5),
    },
    "required": ["query"],
}
CALL_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "properties": {
        "name": param("string", "The tool's full name, mcp__<server>__<tool>."),
        "arguments": param("object", "The tool's input, matching the schema mcp_search gave."),
    },
    "required": ["name"],
}


class McpSearchTool:
    """Full definitions of catalog tools, found by exact names or by keywords."""

    name = "mcp_search"
    input_schema = SEARCH_SCHEMA
    read_only = True

    def __init__(self, tools: Sequence[McpTool]) -> None:
        self.tools = sorted(tools, key=lambda t: t.name)
        index = "\n".join(f"- {t.name}: {one_line(t.description)}" for t in self.tools)
        self.description = (
            "Fetch the full definition (description and input schema) of MCP tools before calling them with "
            "mcp_call. Give exact tool names (comma-separated) or keywords. The MCP tools available:\n" + index)

    def run(self, input: Mapping[str, Any], ctx: ToolContext) -> ToolOutput:
        query = input.get("query")
        if not isinstance(query, str) or not query.strip():
            raise ToolError("mcp_search needs `query`: tool names or keywords")
        limit = input.get("max_results", 5)
        limit = max(1, min(20, limit if isinstance(limit, int) and not isinstance(limit, bool) else 5))
        found = self.find(query, limit)
        if not found:
            return ToolOutput(content=f"No MCP tool matches {query!r}. The names are listed in this tool's "
                              "description.", is_error=True)
        body = json.dumps([t.definition() for t in found], ensure_ascii=False, indent=1, sort_keys=True)
        return ToolOutput(content=f"{len(found)} tool(s); call one with mcp_call(name, arguments):\n{body}",
                          metadata={"mcp_tools": [t.name for t in found]})

    def find(self, query: str, limit: int) -> list[McpTool]:
        by_name = {t.name: t for t in self.tools}
        names = [n.strip() for n in query.split(",") if n.strip()]
        exact = [by_name[n] for n in names if n in by_name]
        if exact:
            return exact[:limit]
        terms = [w for w in re.split(r"[\s,_]+", query.lower()) if w]
        scored = []
        for tool in self.tools:
            name, text = tool.name.lower(), tool.description.lower()
            score = sum(3 if term in name else 1 if term in text else 0 for term in terms)
            if score:
                scored.append((-score, tool.name, tool))
        return [t for _, _, t in sorted(scored)[:limit]]


class McpCallTool(DelegatingTool):
    """Runs a catalog tool by name. The agent loop calls `resolve_call` first, so the permission policy,
    timeout and error handling all see the real tool; `run` is only reached without that loop."""

    name = "mcp_call"
    description = ("Call an MCP tool by its full name (mcp__<server>__<tool>) with `arguments` matching the "
                   "input schema mcp_search returned for it.")
    input_schema = CALL_SCHEMA
    read_only = False

    def __init__(self, lookup: Callable[[str], McpTool | None]) -> None:
        self._lookup = lookup

    def resolve_call(self, input: Mapping[str, Any]) -> tuple[Tool, Mapping[str, Any]]:
        name = input.get("name")
        if not isinstance(name, str) or not name:
            raise ToolError("mcp_call needs `name`, the tool's full name mcp__<server>__<tool>")
        tool = self._lookup(name)
        if tool is None:
            raise ToolError(f"there is no MCP tool named {name!r}; use mcp_search to find the right name")
        arguments = input.get("arguments", {})
        if not isinstance(arguments, Mapping):
            raise ToolError("mcp_call `arguments` must be a JSON object")
        return tool, arguments

    def run(self, input: Mapping[str, Any], ctx: ToolContext) -> ToolOutput:
        # Running the target here would skip the permission check made on the target's own name.
        raise ToolError("mcp_call runs only through the agent loop, which checks the target tool's permission")
