"""Nova's HTTP server: the API with AI SDK streaming and the web page (`nova serve`).

Needs the `server` extra: `pip install 'nova-context-engine[server]'`.
"""

from __future__ import annotations

from nova.server.config import ServerConfig, parse_server_config
from nova.server.token import TOKEN_FILE, load_or_create_token

__all__ = ["TOKEN_FILE", "ServerConfig", "create_app", "load_or_create_token", "parse_server_config"]


def __getattr__(name: str) -> object:
    # FastAPI is imported only when the app is built, so `nova serve --print-token` and the config
    # parser work without the extra.
    if name == "create_app":
        from nova.server.app import create_app

        return create_app
    raise AttributeError(name)
