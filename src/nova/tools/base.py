"""What a tool is, what it gets when it runs, and what it returns.

A tool is a small object with a name, a description, a JSON schema for its input, a `read_only` flag
(read-only tools are allowed by the default permission policy) and `run(input, ctx)`. A tool reports a
failure the model should see by returning `ToolOutput(is_error=True)` or raising `ToolError`; any other
exception is caught by the loop and turned into an error result too.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from nova.model import ToolSpec
from nova.tools.policy.read_policy import FileScreen

__all__ = ["DelegatingTool", "Tool", "ToolContext", "ToolOutput", "ToolRegistry", "catalog_order", "resolve_delegate"]


@dataclass(frozen=True, kw_only=True)
class ToolContext:
    cwd: Path
    session_dir: Path | None = None
    timeout_s: float = 120.0
    """How long one call may work. `bash` kills its command then; the other tools stop their walk or
    read and return what they have, saying so."""
    cancel: threading.Event = field(default_factory=threading.Event)
    """Set by the user's cancel; every tool checks it inside long work."""
    tool_use_id: str = ""
    """The id of the call being answered (a sub-agent's fork finds the delegating call by it)."""
    screen: FileScreen | None = None
    """What a directory search may show of each file it meets (nova.tools.policy.read_policy). None: no rules,
    only the built-in care for secret-looking files and links out of `cwd`."""

    def file_screen(self) -> FileScreen:
        return self.screen if self.screen is not None else FileScreen.default(self.cwd)


@dataclass(frozen=True, kw_only=True)
class ToolOutput:
    content: str
    is_error: bool = False
    metadata: Mapping[str, Any] = field(default_factory=dict)
    """Facts for the deterministic layer, e.g. `exit_code`, `paths_read`, `paths_written`."""


@runtime_checkable
class Tool(Protocol):
    name: str
    description: str
    input_schema: Mapping[str, Any]
    read_only: bool

    def run(self, input: Mapping[str, Any], ctx: ToolContext) -> ToolOutput: ...


@runtime_checkable
class DelegatingTool(Protocol):
    """A `Tool` whose call names another tool in its input and runs that one (`mcp_call`). It declares
    only the method (not the tool's attributes again), which halves what `isinstance` costs on each call."""

    def resolve_call(self, input: Mapping[str, Any]) -> tuple[Tool, Mapping[str, Any]]:
        """The target tool and its own input; `ToolError` for a target that does not exist."""
        ...


def resolve_delegate(tool: Tool, input: Mapping[str, Any]) -> tuple[Tool, Mapping[str, Any]]:
    """The tool a call really runs: the target of a `DelegatingTool`, so permission rules and results
    are those of the target; any other tool itself. Raises `ToolError` for a target that does not exist."""
    if isinstance(tool, DelegatingTool):
        return tool.resolve_call(input)
    return tool, input


def catalog_order(name: str) -> tuple[bool, str]:
    """Built-in tools first, then MCP tools (`mcp_…`, `mcp__server__tool`), each group by name: a server's
    catalog changing never moves a built-in tool's place in the cached prefix."""
    return name.startswith("mcp_"), name


class ToolRegistry:
    """Tools by name. `specs()` lists them in `catalog_order` so the catalog is cache-stable (CCH-3).

    A tool source whose tools change during a session (an MCP server's `tools/list_changed`) registers a
    settler; the agent loop calls `settle()` before it builds each request, when every tool call has its
    result, so the catalog only ever changes between calls."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        self._settlers: list[Callable[[ToolRegistry], object]] = []
        for tool in tools:
            self.register(tool)

    def register(self, tool: Tool) -> None:
        if tool.name in self._tools:
            raise ValueError(f"a tool named {tool.name!r} is already registered")
        self._tools[tool.name] = tool

    def unregister(self, name: str) -> None:
        self._tools.pop(name, None)

    def add_settler(self, settle: Callable[[ToolRegistry], object]) -> None:
        self._settlers.append(settle)

    def settle(self) -> None:
        """Let each tool source apply its pending changes (called only between model calls)."""
        for settle in self._settlers:
            settle(self)

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[Tool]:
        return iter(sorted(self._tools.values(), key=lambda t: catalog_order(t.name)))

    def __len__(self) -> int:
        return len(self._tools)

    def names(self) -> list[str]:
        return sorted(self._tools, key=catalog_order)

    def specs(self) -> list[ToolSpec]:
        return [ToolSpec(t.name, t.description, t.input_schema) for t in self]
