"""`nova serve`: the HTTP API and web page. The signature lives in `nova.cli.main`; this module loads the
server only when the command runs (and only after checking the `server` extra is installed)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from nova.cli.commands.cli_settings import settings_from_cli
from nova.cli.commands.errors import user_errors
from nova.errors import NovaError
from nova.version import install_line

__all__ = ["serve_command"]


def serve_command(
    *, host: str, port: int, provider: str | None, model: str | None, base_url: str | None,
    allow: list[str] | None, yes: bool, cwd: Path | None, print_token: bool, workers: int = 1,
) -> None:
    from nova.server.shared_token import server_token
    from nova.tools.policy.controls import require_person

    with user_errors():
        settings = settings_from_cli(provider=provider, model=model, base_url=base_url)
        # Whoever holds the token may approve calls and memories: never handed to a command the model ran.
        require_person("nova serve --print-token" if print_token else "nova serve", settings.home)
        if print_token:
            token, _ = server_token(settings.home)
            print(token)
            return
        if not all(importlib.util.find_spec(name) for name in ("fastapi", "uvicorn")):
            raise NovaError(f"the server needs its extra: {install_line('server')}")
        from nova.cli.commands.config_check import check_config

        check_config(settings)
        from nova.present.terminal import terminal_console
        from nova.server.serve import ServeOptions, run_server

        console = terminal_console(highlight=False)
        options = ServeOptions(host=host, port=port, cwd=(cwd or Path.cwd()).resolve(),
                               allowed_tools=frozenset(allow or ()), yes=yes, workers=workers)
        run_server(settings, options, say=lambda line: console.print(line, markup=False, soft_wrap=True))
