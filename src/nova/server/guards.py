"""ASGI middleware in front of every route: the Host header, the bearer token and the request size limit.

All are plain ASGI rather than FastAPI dependencies so they also cover 404s, the OpenAPI document and
anything mounted later: nothing answers a request addressed to a foreign name, and nothing answers
without the token except `/health` and the browser's sign-in form (`nova.server.browser_login`).
"""

from __future__ import annotations

import json
import secrets

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from nova.server.browser_login import (
    LOGIN_PATH,
    LOGOUT_PATH,
    PAGE_PATHS,
    SAFE_METHODS,
    BrowserLogin,
    same_origin,
)
from nova.server.hosts import HostPolicy

__all__ = ["PUBLIC_PATHS", "BearerAuth", "BodyLimit", "HostCheck"]

PUBLIC_PATHS = frozenset({"/health"})


async def _json_error(send: Send, status: int, detail: str, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    body = json.dumps({"detail": detail}).encode()
    await send({
        "type": "http.response.start",
        "status": status,
        "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                    *(headers or [])],
    })
    await send({"type": "http.response.body", "body": body})


class _HttpGuard:
    """A middleware that checks HTTP requests only: lifespan and websocket scopes go straight to `app`."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        await self.http(scope, receive, send)

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        raise NotImplementedError


class HostCheck(_HttpGuard):
    """421 for a request whose Host header does not name this server (DNS rebinding; see `nova.server.hosts`)."""

    def __init__(self, app: ASGIApp, *, policy: HostPolicy) -> None:
        super().__init__(app)
        self.policy = policy

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        header = next((v.decode("latin-1") for k, v in scope["headers"] if k == b"host"), None)
        if self.policy.allows(header):
            await self.app(scope, receive, send)
            return
        await _json_error(send, 421, f"this server does not answer to the host {header!r}; a name people use to "
                                     "reach it goes in the server's allowed_hosts")


class BearerAuth(_HttpGuard):
    """The token, as `Authorization: Bearer` (API clients) or as the browser's sign-in cookie (the page,
    `/docs`; see `nova.server.browser_login` for why a cookie and how it is guarded). A page a person
    opens without either answers with the sign-in form; everything else answers 401 in JSON."""

    def __init__(self, app: ASGIApp, *, token: str) -> None:
        super().__init__(app)
        self._token = token.encode()
        self._browser = BrowserLogin(token)

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["path"] in PUBLIC_PATHS or scope["method"] == "OPTIONS":
            # OPTIONS: CORS preflights never carry credentials; the CORS layer answers them.
            await self.app(scope, receive, send)
            return
        path, method = scope["path"], scope["method"]
        if path == LOGIN_PATH:
            await self._browser.login(scope, receive, send)
            return
        if self._bearer(scope):
            # A header no other site can make a browser send: nothing more to check.
            await self.app(scope, receive, send)
            return
        if (given := self._browser.link_token(scope)) is not None:
            if self._browser.token_matches(given):
                await self._browser.signed_in(scope, send, "/")
            else:
                await self._browser.form(send, status=401, next_path="/",
                                         message="The link's token is not this server's token.")
            return
        if self._browser.has_cookie(scope):
            if method not in SAFE_METHODS and not same_origin(scope):
                await _json_error(send, 403, "a request that changes something must come from this server's "
                                             "own page (its Origin header names another site, or none)")
                return
            if path == LOGOUT_PATH and method == "POST":
                await self._browser.logout(scope, send)
                return
            await self.app(scope, receive, send)
            return
        if path in PAGE_PATHS and method in SAFE_METHODS:
            await self._browser.form(send, status=401, next_path=path)
            return
        await _json_error(send, 401, "missing or wrong bearer token (see `nova serve --print-token`)",
                          [(b"www-authenticate", b'Bearer realm="nova"')])

    def _bearer(self, scope: Scope) -> bool:
        for name, value in scope["headers"]:
            if name == b"authorization":
                scheme, _, given = value.partition(b" ")
                if scheme.lower() == b"bearer" and secrets.compare_digest(given.strip(), self._token):
                    return True
        return False


class _TooLarge(Exception):
    pass


class BodyLimit(_HttpGuard):
    """413 for a declared Content-Length over the limit, and for a chunked body that grows past it."""

    def __init__(self, app: ASGIApp, *, max_bytes: int) -> None:
        super().__init__(app)
        self.max_bytes = max_bytes

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        for name, value in scope["headers"]:
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    await _json_error(send, 400, "invalid Content-Length")
                    return
                if declared > self.max_bytes:
                    await _json_error(send, 413, f"request body over {self.max_bytes} bytes")
                    return
        seen = 0
        exceeded = False
        started = False

        async def limited_receive() -> Message:
            nonlocal seen, exceeded
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    exceeded = True
                    raise _TooLarge
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal started
            if exceeded:
                # The app may have turned our exception into its own error (FastAPI answers 400 for
                # a body it could not read): the answer is 413, whatever it says.
                if message["type"] == "http.response.start" and not started:
                    started = True
                    await _json_error(send, 413, f"request body over {self.max_bytes} bytes")
                return
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited_receive, guarded_send)
        except _TooLarge:
            if not started:
                await _json_error(send, 413, f"request body over {self.max_bytes} bytes")
