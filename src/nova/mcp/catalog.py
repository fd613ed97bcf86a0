"""The MCP tools of a session: connections, the catalog the model is sent, its changes and failures.

**On-demand loading.** Every tool definition is sent on every call, so a large catalog costs tokens (and
window) on each one even when read from the cache. `decide_on_demand` (mode `auto`) loads the catalog on
demand when the full MCP definitions would take more than `on_demand_share` (5 %) of the context window:
a twentieth of the window is what a handful of ordinary tools cost, and past it the definitions start to
crowd out the working history; under it, all definitions are cheaper than the extra `mcp_search` call
it takes to fetch a schema. On demand the model gets `mcp_search` (every tool's name and one line, and
full schemas on request, which enter history once) and `mcp_call`. `always`/`never` force a mode.

**Changes.** A server's `tools/list_changed` arrives on the connection's thread and only marks the server
stale. `settle` (called by the agent loop before each request, when every tool call has its result)
lists the stale servers again and rebuilds the MCP part of the registry; the built-in tools come first
(`catalog_order`) so they keep their place, and the change costs at most one cache break, which the
cache diagnosis names ("mcp tools changed"). An unchanged listing changes nothing.

**Failures.** A call that finds its server gone is answered with an error result saying so; the server is
restarted once (and listed again). A second death leaves it `dead` for the session: its tools stay in
the catalog (the prefix does not move) and answer with an error. A server that cannot start at all is
reported and left out; the others work.

**Start-up.** Servers start side by side, each with its own deadline (`startup_timeout_s`); the session
waits for them together at most `startup_wait_s`, so a server that never answers costs the first request
that long once, not its deadline per server. One ready later joins like a list change.
"""

from __future__ import annotations

import concurrent.futures
import functools
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nova.context.extensions import Extension
from nova.mcp.config import McpOptions, ServerConfig
from nova.mcp.connection import (
    CallOutcome,
    Cancelled,
    EventLoopThread,
    McpUnavailable,
    RemoteTool,
    ServerConnection,
    require_sdk,
)
from nova.mcp.tools import McpCallTool, McpSearchTool, McpTool
from nova.model import ToolSpec
from nova.tokens import TokenCounter, count_tools
from nova.tools.base import Tool, ToolRegistry
from nova.tools.policy.sandbox import Sandbox

__all__ = ["McpCatalog", "ServerStatus", "decide_on_demand"]

log = logging.getLogger(__name__)


def decide_on_demand(options: McpOptions, *, definition_tokens: int, window: int) -> bool:
    if options.on_demand != "auto":
        return options.on_demand == "always"
    return definition_tokens > options.on_demand_share * window


@dataclass(frozen=True, slots=True)
class ServerStatus:
    name: str
    transport: str
    state: str
    tools: tuple[str, ...]
    error: str
    restarts: int

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "transport": self.transport, "state": self.state, "tools": list(self.tools),
                "error": self.error or None, "restarts": self.restarts}


class McpCatalog(Extension):
    """The connected servers and their tools. An extension only to be closed with the agent."""

    order = 50

    def __init__(self, servers: Sequence[ServerConfig], *, options: McpOptions | None = None, window: int,
                 counter: TokenCounter, report: Callable[[str, Mapping[str, Any]], None] | None = None,
                 log_dir: Path | None = None, sandbox: Callable[[ServerConfig], Sandbox | None] | None = None,
                 home: Path | None = None, untrusted: Sequence[ServerConfig] = ()) -> None:
        """`log_dir`: where each stdio server's stderr is appended (`mcp-<server>.log`). `sandbox`: the
        sandbox each stdio server runs in (None: none). `home`: the Nova home the servers' processes are
        marked with. `untrusted`: project servers left out until the user trusts them (listed, never
        started)."""
        self.configs = list(servers)
        self.untrusted = list(untrusted)
        self.sandbox_for = sandbox or (lambda _config: None)
        self.home = home
        self.log_dir = log_dir
        self.options = options or McpOptions()
        self.window = window
        self.counter = counter
        self.report = report or (lambda _name, _data: None)
        self.on_demand = False
        self.changes = 0
        """How many times `settle` changed the catalog the model is sent."""
        self._loop: EventLoopThread | None = None
        self._connections: dict[str, ServerConnection] = {}
        self._remote: dict[str, list[RemoteTool]] = {}
        self._tools: dict[str, McpTool] = {}
        self._sent: list[Tool] = []
        self._stale: set[str] = set()
        self._lock = threading.Lock()
        self._settled_starts: set[str] = set()
        self._closing = False

    # -- life cycle ---------------------------------------------------------------------------------
    def start(self, *, wait_s: float | None = None) -> McpCatalog:
        """Start every server at once, each with its deadline (`startup_timeout_s`), and wait for them
        together at most `wait_s` (default: until each is ready or past its deadline; a session passes
        `startup_wait_s`, so a slow server never holds up its turn). One that is ready later joins
        before a later request, as a changed tool list would (one cache break); one that fails or misses
        its deadline is stopped, reported and left out."""
        if not self.configs:
            return self
        require_sdk()
        self._loop = EventLoopThread()
        futures: dict[str, concurrent.futures.Future[list[RemoteTool]]] = {}
        for config in self.configs:
            connection = ServerConnection(config, self._loop, on_list_changed=self._mark_stale,
                                          connect_timeout_s=self.options.startup_timeout_s,
                                          errlog=self.log_dir / f"mcp-{config.name}.log" if self.log_dir else None,
                                          sandbox=self.sandbox_for(config) if config.command is not None else None,
                                          home=self.home)
            self._connections[config.name] = connection
            futures[config.name] = connection.begin()
        wait = self.options.startup_timeout_s + 5 if wait_s is None else wait_s
        concurrent.futures.wait(futures.values(), timeout=wait)
        for name, future in futures.items():
            if future.done():
                self._started(name, future, late=False)
            else:
                future.add_done_callback(functools.partial(self._started_late, name))
        self._rebuild()
        return self

    def _started_late(self, name: str, future: concurrent.futures.Future[list[RemoteTool]]) -> None:
        self._started(name, future, late=True)

    def _started(self, name: str, future: concurrent.futures.Future[list[RemoteTool]], *, late: bool) -> None:
        """A server's start ended: its tools join the catalog (at the next `settle` when late), or it
        is reported as failed."""
        with self._lock:
            if name in self._settled_starts:
                return
            self._settled_starts.add(name)
        connection = self._connections[name]
        try:
            tools = future.result()
        except (Exception, concurrent.futures.CancelledError) as exc:
            connection.state = "failed"
            connection.last_error = connection.last_error or f"{type(exc).__name__}: {exc}"
            if self._closing:  # the session ended while it was still starting: nothing went wrong
                connection.last_error = "still starting when the session ended"
                self._event("mcp_server_not_started", name, connection.last_error)
            else:
                self._event("mcp_server_failed", name, connection.last_error)
            return
        with self._lock:
            self._remote[name] = tools
        if late:
            self._mark_stale(name)
            self._event("mcp_server_joined", name, f"{len(tools)} tools, after the session started")

    def close(self) -> None:
        """Stop every server, side by side: each may take its SDK's grace period to end its process."""
        self._closing = True
        stoppers = [threading.Thread(target=c.stop, name=f"mcp-stop-{name}", daemon=True)
                    for name, c in self._connections.items()]
        for stopper in stoppers:
            stopper.start()
        for stopper in stoppers:
            stopper.join(30)
        if self._loop is not None:
            self._loop.stop()
            self._loop = None

    def attach(self, registry: ToolRegistry) -> ToolRegistry:
        """Add the catalog's tools to `registry` and keep them current there (`settle`)."""
        for tool in self._sent:
            registry.register(tool)
        registry.add_settler(self.settle)
        return registry

    # -- what the model is sent ------------------------------------------------------------------------
    def tools(self) -> list[Tool]:
        """The tools sent for the MCP catalog: every tool, or `mcp_search` and `mcp_call` on demand."""
        return list(self._sent)

    def all_tools(self) -> list[McpTool]:
        return [self._tools[name] for name in sorted(self._tools)]

    def definition_tokens(self) -> int:
        """Tokens of every MCP tool definition (what loading all of them would cost per call)."""
        return count_tools([ToolSpec(t.name, t.description, t.input_schema) for t in self.all_tools()], self.counter)

    def lookup(self, name: str) -> McpTool | None:
        return self._tools.get(name)

    def _rebuild(self) -> None:
        tools: dict[str, McpTool] = {}
        with self._lock:
            listed = {server: list(found) for server, found in self._remote.items()}
        for server in sorted(listed):
            for remote in listed[server]:
                tool = McpTool(server=server, remote_name=remote.name, description=remote.description,
                               input_schema=remote.input_schema, call=self.call)
                tools.setdefault(tool.name, tool)
        self._tools = tools
        self.on_demand = bool(tools) and decide_on_demand(self.options, definition_tokens=self.definition_tokens(),
                                                          window=self.window)
        if self.on_demand:
            self._sent = [McpSearchTool(self.all_tools()), McpCallTool(self.lookup)]
        else:
            self._sent = list(self.all_tools())

    # -- tools/list_changed ------------------------------------------------------------------------------
    def _mark_stale(self, server: str) -> None:
        with self._lock:
            self._stale.add(server)

    def pending(self) -> bool:
        with self._lock:
            return bool(self._stale)

    def settle(self, registry: ToolRegistry | None = None) -> bool:
        """Apply pending list changes: list the stale servers again and, when what the model is sent
        changed, swap the MCP tools of `registry`. True when the sent catalog changed."""
        with self._lock:
            stale, self._stale = self._stale, set()
        if not stale:
            return False
        before = _fingerprint(self._sent)
        for server in sorted(stale):
            connection = self._connections.get(server)
            if connection is None or connection.state not in ("ready", "restarted"):
                continue
            try:
                found = connection.list_tools()
            except Exception as exc:  # a failed listing keeps the old one: the catalog does not flap
                log.warning("MCP server %r: listing its tools again failed: %s", server, exc)
                continue
            with self._lock:
                self._remote[server] = found
        old = list(self._sent)
        self._rebuild()
        if _fingerprint(self._sent) == before:
            return False
        self.changes += 1
        if registry is not None:
            for tool in old:
                registry.unregister(tool.name)
            for tool in self._sent:
                registry.register(tool)
        self._event("mcp_tools_changed", ",".join(sorted(stale)), f"{len(self._tools)} tools")
        return True

    # -- calls ---------------------------------------------------------------------------------------
    def call(self, server: str, tool: str, arguments: Mapping[str, Any], timeout_s: float, *,
             cancel: threading.Event | None = None) -> CallOutcome:
        connection = self._connections[server]
        timeout = min(timeout_s, self.options.tool_timeout_s)
        if connection.state == "dead":
            return CallOutcome(f"Error: MCP server {server!r} died twice and was not restarted again; its tools "
                               f"are unavailable for the rest of this session ({connection.last_error}).", True,
                               {"mcp_server_state": "dead"})
        try:
            return connection.call_tool(tool, arguments, timeout_s=timeout, cancel=cancel)
        except Cancelled:
            return CallOutcome(f"interrupted: the user cancelled the turn while {tool} was running on MCP server "
                               f"{server!r}.", True, {"cancelled": True})
        except TimeoutError:
            return CallOutcome(f"Error: {tool} on MCP server {server!r} did not answer within {timeout:g}s.", True,
                               {"timed_out": True})
        except McpUnavailable as exc:
            why = str(exc)
        except Exception as exc:  # a broken transport looks different per SDK path: all mean "gone"
            why = f"{type(exc).__name__}: {exc}"
        self._event("mcp_server_died", server, why)
        if connection.restart_once(why):
            self._mark_stale(server)  # a restarted server may list different tools
            self._event("mcp_server_restarted", server, "")
            return CallOutcome(f"Error: MCP server {server!r} stopped during the call ({why}); it was restarted. "
                               "Check whether the call took effect before repeating it.", True,
                               {"mcp_server_state": "restarted"})
        return CallOutcome(f"Error: MCP server {server!r} stopped during the call ({why}) and could not be "
                           "restarted; its tools are unavailable for the rest of this session.", True,
                           {"mcp_server_state": "dead"})

    # -- status --------------------------------------------------------------------------------------
    def status(self) -> list[ServerStatus]:
        out = [ServerStatus(name=config.name, transport=config.transport, state="untrusted", tools=(),
                            error=f"from {config.source}, not trusted for this project: run `nova trust` to review "
                                  "and trust it", restarts=0) for config in self.untrusted]
        for config in self.configs:
            connection = self._connections.get(config.name)
            names = tuple(t.name for t in self.all_tools() if t.server == config.name)
            out.append(ServerStatus(
                name=config.name, transport=config.transport,
                state=connection.state if connection else "stopped", tools=names,
                error=connection.last_error if connection else "", restarts=connection.restarts if connection else 0))
        return out

    def _event(self, name: str, server: str, detail: str) -> None:
        quiet = name in ("mcp_tools_changed", "mcp_server_joined", "mcp_server_not_started")
        (log.info if quiet else log.warning)("%s: %s %s", name, server, detail)
        try:
            self.report(name, {"server": server, "detail": detail})
        except Exception:  # reporting must not break a call
            log.exception("reporting %s failed", name)


def _fingerprint(tools: Sequence[Tool]) -> list[tuple[str, str, Any]]:
    return [(t.name, t.description, dict(t.input_schema)) for t in tools]
