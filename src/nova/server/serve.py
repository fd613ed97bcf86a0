"""`nova serve`: build the app from settings and run it under uvicorn, on loopback unless told otherwise.

uvicorn runs with Nova's read deadlines (`nova.server.read_deadlines`), a cap on the connections served
at once, and no WebSocket upgrade (the API has none, and an upgraded connection would leave the
deadlines behind). Binding beyond loopback is allowed, with a warning: the server speaks plain HTTP.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from nova.agent.builder import AgentOptions
from nova.agent.provider_factory import make_provider
from nova.server.config import ServerConfig, parse_server_config
from nova.server.shared_token import server_token
from nova.server.token import TOKEN_FILE
from nova.server.workers import WORKER_ENV, inherited_sockets, require_database, run_workers
from nova.settings import Settings

if TYPE_CHECKING:
    import socket
    from types import FrameType

    import uvicorn
    from fastapi import FastAPI

__all__ = ["ServeOptions", "bind_warning", "build_server_app", "run_server", "uvicorn_config"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ServeOptions:
    host: str = "127.0.0.1"
    port: int = 8765
    cwd: Path
    allowed_tools: frozenset[str] = frozenset()
    yes: bool = False
    log_level: str = "warning"
    workers: int = 1
    """Processes serving the port; more than one shares sessions through PostgreSQL (`workers.py`)."""


def server_config(settings: Settings) -> ServerConfig:
    return parse_server_config(settings.section("server"), source=f"{settings.config_file} [server]")


def build_server_app(settings: Settings, options: ServeOptions, token: str, env: dict[str, str]) -> FastAPI:
    from nova.server.app import create_app

    # Fail now, at start, on a missing key or SDK, rather than at the first message.
    make_provider(settings, env)
    agent_options = AgentOptions(cwd=options.cwd, interactive=False, allowed_tools=options.allowed_tools,
                                 yes=options.yes)
    return create_app(settings, token=token, options=agent_options,
                      make_provider=lambda: make_provider(settings, env), config=server_config(settings),
                      bind_host=options.host, provider_for=lambda own: make_provider(own, env))


def uvicorn_config(app: FastAPI, *, host: str, port: int, config: ServerConfig,
                   log_level: str = "warning") -> uvicorn.Config:
    import uvicorn

    from nova.server.read_deadlines import ReadTimeouts, deadline_protocol

    timeouts = ReadTimeouts(header_timeout_s=config.header_timeout_s, body_timeout_s=config.body_timeout_s)
    # uvicorn counts the connection asking among the open ones: one more lets exactly `max_connections`
    # be served at once.
    return uvicorn.Config(app, host=host, port=port, log_level=log_level, timeout_graceful_shutdown=5,
                          http=deadline_protocol(timeouts), ws="none", limit_concurrency=config.max_connections + 1)


def bind_warning(host: str, home: Path) -> str | None:
    """What to tell the user before listening on `host`; None on loopback."""
    from nova.server.hosts import is_loopback

    if is_loopback(host):
        return None
    return (f"Warning: listening on {host}, beyond this machine, over plain HTTP: the token and every message "
            f"can be read on the network. Every request but /health needs the token (in {home / TOKEN_FILE}). "
            "Names clients use to reach this machine go in the config's server.allowed_hosts (IP addresses "
            "are always accepted). Prefer an SSH tunnel or a TLS proxy to --host beyond loopback.")


def _stopping_promptly(config: uvicorn.Config, app: FastAPI) -> uvicorn.Server:
    """A uvicorn server that, on the first Ctrl-C (or SIGTERM), also ends the open turn streams at once
    (`nova.server.streams`) instead of waiting out uvicorn's graceful timeout for them."""
    import asyncio

    import uvicorn

    class Server(uvicorn.Server):
        loop: asyncio.AbstractEventLoop | None = None

        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            self.loop = asyncio.get_running_loop()
            await super().startup(sockets=sockets)

        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            first = not self.should_exit
            super().handle_exit(sig, frame)
            if first and self.loop is not None:
                # A signal handler may interrupt the loop anywhere: the work is queued onto it instead.
                self.loop.call_soon_threadsafe(app.state.streams.stop, app.state.hub.cancel)

    return Server(config)


def run_server(settings: Settings, options: ServeOptions, *, say: Callable[[str], None] = print) -> None:

    config = server_config(settings)  # a malformed [server] section stops here, before the token is printed
    if options.workers > 1 and os.environ.get(WORKER_ENV) is None:
        require_database(settings)
    token, created = server_token(settings.home)  # shared by every worker when they share a database
    app = build_server_app(settings, options, token, dict(os.environ))
    if (warning := bind_warning(options.host, settings.home)) is not None:
        say(warning)
    base = f"http://{options.host}:{options.port}"
    if created:
        # Printed once, the first time: after that it is only in the file (mode 0600).
        say(f"Nova server token (saved in {settings.home / TOKEN_FILE}): {token}")
        say(f"Open {base}/?token={token}")
    else:
        say(f"Open {base}/ and sign in with the token in {settings.home / TOKEN_FILE} "
            "(`nova serve --print-token` prints it)")
    if options.workers > 1 and os.environ.get(WORKER_ENV) is None:
        # One port, N processes, one database.
        run_workers(settings, host=options.host, port=options.port, workers=options.workers, say=say)
        return
    say(f"Nova serving on {base} (provider {settings.provider}, model {settings.model}); Ctrl-C stops it")
    server = _stopping_promptly(uvicorn_config(app, host=options.host, port=options.port, config=config,
                                               log_level=options.log_level), app)
    with contextlib.suppress(KeyboardInterrupt):
        server.run(sockets=inherited_sockets())
    if not server.started:  # uvicorn said why (the port in use, most often)
        raise SystemExit(3)
