"""One live connection to one MCP server, driven from synchronous code.

The `mcp` SDK is asynchronous (anyio) and a transport's context must be entered and left by the same
task, while Nova's tools run synchronously on the loop's thread. So every connection of a catalog lives
on one background event loop (`EventLoopThread`): a task per server enters the SDK's `Client`, publishes
it, and holds it open until asked to stop; synchronous callers submit coroutines to that loop and wait
with a deadline.

The handshake-era protocol (`initialize`) is used: it is what current servers speak, and on it a server
announces a changed tool list with a `notifications/tools/list_changed` message, which arrives here on
the session's message handler and is passed on as `on_list_changed(server)`.

The SDK is imported only here and only when a connection starts, so Nova runs without the `mcp` extra.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TextIO, TypeVar

from nova.errors import MissingDependency, NovaError
from nova.mcp.config import ServerConfig
from nova.tools.policy.controls import TOOL_RUN_ENV, mark_name, mark_tool_runner, unmark_tool_runner
from nova.tools.policy.sandbox import Sandbox, sandbox_env
from nova.version import install_line

__all__ = ["MCP_EXTRA_HINT", "CallOutcome", "Cancelled", "EventLoopThread", "McpUnavailable", "RemoteTool", "ServerConnection",
           "require_sdk"]

log = logging.getLogger(__name__)

MCP_EXTRA_HINT = install_line("mcp")
T = TypeVar("T")
ConnectionState = Literal["stopped", "starting", "ready", "failed", "restarted", "dead", "untrusted"]


class Cancelled(NovaError):
    """The user cancelled the turn while a call was waiting for its server."""


class McpUnavailable(NovaError):
    """A server could not be reached, or died and could not be brought back."""


def require_sdk() -> None:
    """Raise `MissingDependency` naming the extra when the `mcp` SDK is not installed."""
    try:
        import mcp  # noqa: F401
    except ImportError:
        raise MissingDependency(
            f"MCP servers are configured but the `mcp` package is not installed; run: {MCP_EXTRA_HINT}"
        ) from None


class EventLoopThread:
    """An asyncio loop on a daemon thread; `run(coro, timeout)` waits for a coroutine from any thread."""

    def __init__(self, name: str = "nova-mcp") -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name=name, daemon=True)
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None, *,
            cancel: threading.Event | None = None) -> T:
        """Raises `TimeoutError` after `timeout`, and `Cancelled` soon after `cancel` is set."""
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            while True:
                left = None if deadline is None else max(0.0, deadline - time.monotonic())
                try:
                    return future.result(left if cancel is None else min(0.1, left if left is not None else 0.1))
                except TimeoutError:
                    if deadline is not None and time.monotonic() >= deadline:
                        raise
                    if cancel is not None and cancel.is_set():
                        raise Cancelled from None
        except (TimeoutError, Cancelled):
            future.cancel()
            raise

    def stop(self) -> None:
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=5)
        if not self._thread.is_alive():
            self.loop.close()


@dataclass(frozen=True, slots=True)
class RemoteTool:
    """A tool as the server lists it."""

    name: str
    description: str
    input_schema: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class CallOutcome:
    text: str
    is_error: bool
    metadata: Mapping[str, Any] = field(default_factory=dict)


def _content_text(result: Any) -> str:
    """A tool result's content as text: text blocks as they are, other blocks named; the structured
    result when there is no text."""
    pieces: list[str] = []
    for block in getattr(result, "content", None) or []:
        kind = getattr(block, "type", "")
        if kind == "text":
            pieces.append(str(block.text))
        elif kind == "resource":
            resource = block.resource
            pieces.append(str(getattr(resource, "text", None) or f"[resource {resource.uri}]"))
        elif kind == "resource_link":
            pieces.append(f"[resource link {block.uri}]")
        else:
            pieces.append(f"[{kind or 'unknown'} content, {getattr(block, 'mime_type', '') or 'no type'}]")
    structured = getattr(result, "structured_content", None)
    if not pieces and structured is not None:
        import json

        pieces.append(json.dumps(structured, ensure_ascii=False, sort_keys=True))
    return "\n".join(pieces)


class ServerConnection:
    """The connection to one server. Synchronous methods; the work happens on `loop`."""

    def __init__(self, config: ServerConfig, loop: EventLoopThread, *,
                 on_list_changed: Callable[[str], None] = lambda _name: None, connect_timeout_s: float = 30.0,
                 errlog: Path | None = None, sandbox: Sandbox | None = None, home: Path | None = None) -> None:
        """`errlog`: where a stdio server's stderr goes (appended), so its logging never lands in the
        user's terminal or the TUI; None: Nova's own stderr. `connect_timeout_s`: the deadline to start
        and list the tools. `sandbox`: where a stdio server runs (nova.tools.policy.sandbox), its
        environment without inherited credentials (its own `env` entries still reach it). `home`: the
        Nova home whose tool runner's mark the server's process carries (nova.tools.policy.controls)."""
        self.config = config
        self.errlog = errlog
        self.loop = loop
        self.on_list_changed = on_list_changed
        self.connect_timeout_s = connect_timeout_s
        self.sandbox = sandbox
        self.home = home
        self.state: ConnectionState = "stopped"
        self.restarts = 0
        self.last_error = ""
        self._client: Any = None
        self._stop: asyncio.Event | None = None
        self._task: asyncio.Future[None] | None = None
        self._errlog_file: TextIO | None = None
        self._starting: concurrent.futures.Future[list[RemoteTool]] | None = None
        self._start_over = threading.Event()
        self._marked = False

    # -- life cycle ---------------------------------------------------------------------------------
    def begin(self) -> concurrent.futures.Future[list[RemoteTool]]:
        """Start the server and list its tools, on the loop, without waiting: the future holds the tools,
        or `McpUnavailable` (also past `connect_timeout_s`, when the server is stopped again)."""
        require_sdk()
        self.state = "starting"
        self._start_over.clear()
        self._starting = asyncio.run_coroutine_threadsafe(self._start(), self.loop.loop)
        return self._starting

    def start(self) -> list[RemoteTool]:
        """Start, wait for it, and return the tools; `McpUnavailable` when the server does not come up."""
        future = self.begin()
        try:
            return future.result(self.connect_timeout_s + 10)
        except concurrent.futures.TimeoutError:
            self.stop()
            raise McpUnavailable(f"MCP server {self.config.name!r} did not start within "
                                 f"{self.connect_timeout_s:g} s") from None

    async def _start(self) -> list[RemoteTool]:
        if self.config.command is not None and not self._marked:
            mark_tool_runner(self.home)
            self._marked = True
        try:
            async with asyncio.timeout(self.connect_timeout_s):
                await self._open()
                tools = await self._list_tools()
        except BaseException as exc:
            await self._close()
            self._unmark()
            self.state = "failed"
            if isinstance(exc, TimeoutError):
                self.last_error = f"did not start and list its tools within {self.connect_timeout_s:g} s"
            elif isinstance(exc, asyncio.CancelledError):
                self.last_error = "stopped while starting"
            else:
                self.last_error = _describe(exc)
            if isinstance(exc, FileNotFoundError) and self.config.command is not None:
                self.last_error = f"the command {self.config.command!r} was not found"
            elif self.errlog is not None and self.config.command is not None:
                self.last_error += f" (the server's own messages: {self.errlog})"
            if isinstance(exc, asyncio.CancelledError):
                raise
            raise McpUnavailable(f"MCP server {self.config.name!r} could not be started: {self.last_error}") from exc
        finally:
            self._start_over.set()
        self.state = "ready" if self.restarts == 0 else "restarted"
        return tools

    def _unmark(self) -> None:
        if self._marked:
            unmark_tool_runner(self.home)
            self._marked = False

    def stop(self) -> None:
        starting = self._starting
        if starting is not None and not starting.done():
            # Still starting (a server that never answers): stop waiting for it, and its process with it.
            starting.cancel()
            self._start_over.wait(15)
        if self._stop is not None:
            with contextlib.suppress(Exception):
                self.loop.run(self._close(), 10)
        self._client = None
        self._unmark()
        if self.state in ("ready", "restarted"):
            self.state = "stopped"

    def restart_once(self, why: str) -> bool:
        """After the server died: start it again, once in the connection's life. False when it already
        was restarted (the server is then `dead`) or the restart failed."""
        self.last_error = why
        self.stop()
        if self.restarts >= 1:
            self.state = "dead"
            return False
        self.restarts += 1
        try:
            self.start()
        except (McpUnavailable, Cancelled, concurrent.futures.CancelledError) as exc:
            self.state = "dead"
            self.last_error = str(exc)
            return False
        log.warning("MCP server %r died (%s) and was restarted", self.config.name, why)
        return True

    # -- requests ------------------------------------------------------------------------------------
    def list_tools(self) -> list[RemoteTool]:
        return self.loop.run(self._list_tools(), self.connect_timeout_s)

    def call_tool(self, name: str, arguments: Mapping[str, Any], *, timeout_s: float,
                  cancel: threading.Event | None = None) -> CallOutcome:
        """Raises `TimeoutError` after `timeout_s`, `Cancelled` when `cancel` is set, `McpUnavailable` when
        the connection is gone."""
        if self._client is None:
            raise McpUnavailable(f"MCP server {self.config.name!r} is not connected")
        return self.loop.run(self._call(name, dict(arguments), timeout_s), timeout_s + 5, cancel=cancel)

    # -- on the loop -----------------------------------------------------------------------------------
    async def _open(self) -> None:
        from mcp import Client

        ready: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._stop = asyncio.Event()
        stop = self._stop

        async def handle(message: Any) -> None:
            if type(message).__name__ == "ToolListChangedNotification":
                self.on_list_changed(self.config.name)

        async def hold() -> None:
            try:
                async with Client(self._transport(), mode="legacy", cache=None, message_handler=handle,
                                  client_info=_client_info()) as client:
                    ready.set_result(client)
                    await stop.wait()
            except BaseException as exc:
                if not ready.done():
                    ready.set_exception(exc if isinstance(exc, Exception) else McpUnavailable(str(exc)))
                else:
                    log.debug("MCP server %r connection ended: %s", self.config.name, _describe(exc))
                if isinstance(exc, asyncio.CancelledError | KeyboardInterrupt | SystemExit):
                    raise

        self._task = asyncio.ensure_future(hold())
        self._client = await ready  # a cancelled start is undone by `_close` (the caller's)

    async def _close(self) -> None:
        if self._stop is not None:
            self._stop.set()
        if self._task is not None:
            if self._client is None:
                self._task.cancel()  # still in the handshake: nothing to wait for
            try:
                await asyncio.wait_for(asyncio.shield(self._task), 5)
            except (TimeoutError, Exception, asyncio.CancelledError):
                self._task.cancel()
                with contextlib.suppress(BaseException):
                    await asyncio.wait_for(self._task, 5)
        self._task = None
        self._client = None
        if self._errlog_file is not None:
            self._errlog_file.close()
            self._errlog_file = None

    def _transport(self) -> Any:
        config = self.config
        if config.command is not None:
            from mcp import StdioServerParameters

            # The server inherits the environment (PATH, HOME ...) with the configured values on top; in
            # the sandbox, the inherited credentials stay out (the configured ones are the server's own).
            command, args, cwd = config.command, list(config.args), config.cwd
            env: dict[str, str] | None = {**os.environ, **config.env} if config.env else None
            if self.sandbox is not None:
                where = Path(cwd).expanduser() if cwd else self.sandbox.plan.cwd
                wrapped = self.sandbox.wrap([command, *args], cwd=where if where.is_absolute() else
                                            self.sandbox.plan.cwd / where)
                command, args, cwd = wrapped[0], wrapped[1:], None
                env = {**sandbox_env(os.environ), **config.env}
            env = {**(env if env is not None else os.environ), TOOL_RUN_ENV: mark_name(self.home)}
            params = StdioServerParameters(command=command, args=args, env=env, cwd=cwd)
            if self.errlog is None:
                return params
            from mcp.client.stdio import stdio_client

            self.errlog.parent.mkdir(parents=True, exist_ok=True)
            log_file = self._errlog_file = self.errlog.open("a", encoding="utf-8")
            return stdio_client(params, errlog=log_file)
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        assert config.url is not None
        if not config.headers:
            return config.url
        http = httpx2.AsyncClient(headers=dict(config.headers), timeout=httpx2.Timeout(30.0, read=300.0))
        return streamable_http_client(config.url, http_client=http)

    async def _list_tools(self) -> list[RemoteTool]:
        tools: list[RemoteTool] = []
        cursor: str | None = None
        for _ in range(100):  # a server that pages forever is cut off
            page = await self._client.list_tools(cursor=cursor)
            tools.extend(RemoteTool(t.name, t.description or "", dict(t.input_schema or {"type": "object"}))
                         for t in page.tools)
            cursor = page.next_cursor
            if cursor is None:
                break
        return tools

    async def _call(self, name: str, arguments: dict[str, Any], timeout_s: float) -> CallOutcome:
        from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT

        from mcp import MCPError

        try:
            # The SDK's read timeout is not a deadline for the whole call (seen firing seconds late), so
            # the call itself is bounded here too; the thread waiting on it keeps a looser guard.
            async with asyncio.timeout(timeout_s):
                result = await self._client.call_tool(name, arguments, read_timeout_seconds=timeout_s)
        except MCPError as exc:
            if exc.code == REQUEST_TIMEOUT:
                raise TimeoutError(exc.message) from None
            if exc.code == CONNECTION_CLOSED:
                raise McpUnavailable(f"the connection to MCP server {self.config.name!r} closed") from None
            # A protocol error (unknown tool, bad arguments) is the call's answer, not a dead server.
            return CallOutcome(f"MCP error {exc.code}: {exc.message}", True, {"mcp_error_code": exc.code})
        except TimeoutError:
            raise  # an OSError too, but the server is slow, not gone
        except (OSError, EOFError) as exc:
            raise McpUnavailable(f"MCP server {self.config.name!r}: {_describe(exc)}") from None
        return CallOutcome(_content_text(result), bool(getattr(result, "is_error", False)))


def _client_info() -> Any:
    from mcp_types import Implementation

    from nova.version import __version__

    return Implementation(name="nova", version=__version__)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_describe(e) for e in exc.exceptions)
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
