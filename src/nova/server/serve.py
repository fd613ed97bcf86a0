"""`nova serve`: build the app from settings and run it under uvicorn on loopback."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from nova.app import AgentOptions
from nova.providers.factory import make_provider
from nova.server.config import ServerConfig, parse_server_config
from nova.server.token import TOKEN_FILE, load_or_create_token
from nova.settings import Settings

if TYPE_CHECKING:
    from fastapi import FastAPI

__all__ = ["ServeOptions", "build_server_app", "run_server"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ServeOptions:
    host: str = "127.0.0.1"
    port: int = 8765
    cwd: Path
    allowed_tools: frozenset[str] = frozenset()
    yes: bool = False
    log_level: str = "warning"


def server_config(settings: Settings) -> ServerConfig:
    return parse_server_config(settings.section("server"), source=f"{settings.config_file} [server]")


def build_server_app(settings: Settings, options: ServeOptions, token: str, env: dict[str, str]) -> FastAPI:
    from nova.server.app import create_app

    # Fail now, at start, on a missing key or SDK, rather than at the first message.
    make_provider(settings, env)
    agent_options = AgentOptions(cwd=options.cwd, interactive=False, allowed_tools=options.allowed_tools,
                                 yes=options.yes)
    return create_app(settings, token=token, options=agent_options,
                      make_provider=lambda: make_provider(settings, env), config=server_config(settings))


def run_server(settings: Settings, options: ServeOptions, *, say: Callable[[str], None] = print) -> None:
    import uvicorn

    server_config(settings)  # a malformed [server] section stops here, before the token is printed
    token, created = load_or_create_token(settings.home)
    app = build_server_app(settings, options, token, dict(os.environ))
    base = f"http://{options.host}:{options.port}"
    if created:
        # Printed once, the first time: after that it is only in the file (mode 0600).
        say(f"Nova server token (saved in {settings.home / TOKEN_FILE}): {token}")
        say(f"Open {base}/?token={token}")
    else:
        say(f"Token in {settings.home / TOKEN_FILE} (`nova serve --print-token` prints it); "
            f"open {base}/?token=<token>")
    say(f"Nova serving on {base} (provider {settings.provider}, model {settings.model}); Ctrl-C stops it")
    uvicorn.run(app, host=options.host, port=options.port, log_level=options.log_level,
                timeout_graceful_shutdown=5)
