"""Signing in from a browser: the token typed once into a form, then kept in a cookie.

A browser cannot add an `Authorization` header to a link, nor to the pages it opens by itself (`/docs`),
so for a browser the token works through a cookie: `POST /login` with the token from the form sets it,
and so does opening the link `nova serve` prints (`/?token=…`), which then redirects to `/` so the token
leaves the address bar and the history at once. API clients keep sending the header.

Why a cookie, and how it is kept safe:

- HttpOnly: no script can read it, not even one injected into the page. The page's own calls carry it
  without the page ever holding the token. (The alternative, the token in sessionStorage sent as a
  header, leaves it readable by any script that runs in the page, and does not reach `/docs`.)
- SameSite=Strict: the browser sends it with no request another site starts: no form post, no link,
  no image, no fetch.
- SameSite counts sites, not origins: another server on this machine (`http://127.0.0.1:3000`) is the
  same site as this one. So a request that only the cookie authenticates and that can change something
  (any method but GET and HEAD) must also carry an `Origin` header naming this server. Browsers send one
  with every such request and a page cannot forge it; a request without one is refused.
- It holds a value derived from the token (an HMAC), not the token: it signs in a browser and nothing
  else (it is no bearer token), and it stops working when the token does.
- Its name carries the port: cookies do not tell ports apart, so two servers on one machine keep theirs.
- `Secure` when the request came over HTTPS (a TLS proxy in front); plain HTTP on loopback cannot use it.
- No lifetime: it ends with the browser session. `POST /logout` ends it sooner.
"""

from __future__ import annotations

import hashlib
import hmac
import html
import secrets
from base64 import b64encode
from functools import cache
from importlib import resources
from urllib.parse import parse_qs, urlsplit

from starlette.types import Receive, Scope, Send

__all__ = ["LOGIN_PATH", "LOGOUT_PATH", "PAGE_PATHS", "SAFE_METHODS", "BrowserLogin", "same_origin"]

LOGIN_PATH = "/login"
LOGOUT_PATH = "/logout"
PAGE_PATHS = frozenset({"/", "/docs", "/redoc"})
"""Pages a person opens in a browser: without a credential they answer with the sign-in form, and
they are the only places the form sends the browser back to (no open redirect)."""
SAFE_METHODS = frozenset({"GET", "HEAD"})
MAX_FORM_BYTES = 4096
_COOKIE_PURPOSE = b"nova browser sign-in v1"


def same_origin(scope: Scope) -> bool:
    """Whether the request's `Origin` names the server it was sent to (its Host header, which the host
    check has already matched against this server's names). No Origin, or `null`, is not the same."""
    headers = dict(scope["headers"])
    origin = headers.get(b"origin", b"").decode("latin-1").strip().lower()
    host = headers.get(b"host", b"").decode("latin-1").strip().lower()
    if not origin or origin == "null" or not host:
        return False
    parts = urlsplit(origin)
    return parts.scheme in ("http", "https") and parts.netloc == host and not parts.path


def _header(scope: Scope, name: bytes) -> str:
    return next((v.decode("latin-1") for k, v in scope["headers"] if k == name), "")


def _cookies(scope: Scope) -> dict[str, str]:
    found: dict[str, str] = {}
    for name, value in scope["headers"]:
        if name == b"cookie":
            for pair in value.decode("latin-1").split(";"):
                key, sep, val = pair.strip().partition("=")
                if sep:
                    found.setdefault(key, val)
    return found


def _style_hash(style: str) -> str:
    return "'sha256-" + b64encode(hashlib.sha256(style.encode()).digest()).decode() + "'"


@cache
def _form_template() -> tuple[str, str]:
    """(the sign-in page with its stylesheet inlined, its Content-Security-Policy)."""
    static = resources.files("nova.server") / "static"
    template = (static / "login.html").read_text(encoding="utf-8")
    style = (static / "login.css").read_text(encoding="utf-8")
    csp = (f"default-src 'none'; style-src {_style_hash(style)}; img-src data:; form-action 'self'; "
           "base-uri 'none'; frame-ancestors 'none'")
    return template.replace("/*STYLE*/", style), csp


class BrowserLogin:
    """The cookie's name and value for one server, the sign-in form, and `POST /login` / `/logout`."""

    def __init__(self, token: str) -> None:
        self._token = token.encode()
        self._value = hmac.new(self._token, _COOKIE_PURPOSE, hashlib.sha256).hexdigest()

    # -- the cookie ---------------------------------------------------------------------------------
    @staticmethod
    def cookie_name(scope: Scope) -> str:
        server = scope.get("server")
        port = server[1] if server and server[1] else 0
        return f"nova_{port}"

    def has_cookie(self, scope: Scope) -> bool:
        given = _cookies(scope).get(self.cookie_name(scope), "")
        return secrets.compare_digest(given.encode("latin-1"), self._value.encode())

    def _set_cookie(self, scope: Scope, value: str, *, clear: bool = False) -> tuple[bytes, bytes]:
        attributes = "; Path=/; HttpOnly; SameSite=Strict"
        if scope.get("scheme") == "https":
            attributes += "; Secure"
        if clear:
            attributes += "; Max-Age=0"
        return b"set-cookie", f"{self.cookie_name(scope)}={value}{attributes}".encode("latin-1")

    def token_matches(self, given: str) -> bool:
        return secrets.compare_digest(given.strip().encode("utf-8", "replace"), self._token)

    def link_token(self, scope: Scope) -> str | None:
        """The `token` of `GET /?token=…` (the link `nova serve` prints), or None."""
        if scope["path"] != "/" or scope["method"] not in SAFE_METHODS:
            return None
        given = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("token")
        return given[0] if given else None

    # -- answers ------------------------------------------------------------------------------------
    async def signed_in(self, scope: Scope, send: Send, target: str) -> None:
        """303 to `target` with the cookie set."""
        await send({"type": "http.response.start", "status": 303,
                    "headers": [(b"location", target.encode()), self._set_cookie(scope, self._value),
                                (b"cache-control", b"no-store"), (b"referrer-policy", b"no-referrer"),
                                (b"content-length", b"0")]})
        await send({"type": "http.response.body", "body": b""})

    async def form(self, send: Send, *, status: int, next_path: str, message: str = "") -> None:
        """The sign-in page: never JSON, whatever page the browser asked for."""
        template, csp = _form_template()
        body = (template.replace("{{NEXT}}", html.escape(next_path, quote=True))
                .replace("{{MESSAGE}}", html.escape(message, quote=False))
                .replace("{{MESSAGE_HIDDEN}}", "" if message else "hidden")).encode("utf-8")
        headers = [(b"content-type", b"text/html; charset=utf-8"), (b"content-length", str(len(body)).encode()),
                   (b"content-security-policy", csp.encode()), (b"cache-control", b"no-store"),
                   # Not `no-referrer`: with it the browser sends `Origin: null` with the form's post,
                   # which the origin check below refuses. The page's address never holds the token.
                   (b"referrer-policy", b"same-origin"), (b"x-content-type-options", b"nosniff")]
        if status == 401:
            headers.append((b"www-authenticate", b'Bearer realm="nova"'))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    async def login(self, scope: Scope, receive: Receive, send: Send) -> None:
        """`GET /login`: the form. `POST /login` (a form with `token` and `next`): the cookie, or the
        form again saying the token was wrong."""
        if scope["method"] in SAFE_METHODS:
            await self.form(send, status=200, next_path="/")
            return
        if scope["method"] != "POST":
            await _plain(send, 405, "use POST to sign in", [(b"allow", b"GET, HEAD, POST")])
            return
        if _header(scope, b"origin") and not same_origin(scope):
            await _plain(send, 403, "a sign-in from another site is refused")
            return
        body = await _read_form(receive)
        if body is None:
            await _plain(send, 413, f"a sign-in form is at most {MAX_FORM_BYTES} bytes")
            return
        try:
            fields = parse_qs(body.decode("utf-8"), max_num_fields=8)
        except (UnicodeDecodeError, ValueError):
            fields = {}
        next_path = _page_or_home(fields.get("next", ["/"])[0])
        if self.token_matches(fields.get("token", [""])[0]):
            await self.signed_in(scope, send, next_path)
            return
        await self.form(send, status=401, next_path=next_path,
                        message="That is not this server's token. `nova serve --print-token` prints it.")

    async def logout(self, scope: Scope, send: Send) -> None:
        await send({"type": "http.response.start", "status": 204,
                    "headers": [self._set_cookie(scope, "", clear=True), (b"cache-control", b"no-store")]})
        await send({"type": "http.response.body", "body": b""})


def _page_or_home(path: str) -> str:
    return path if path in PAGE_PATHS else "/"


async def _read_form(receive: Receive) -> bytes | None:
    """The body, or None when it is longer than a sign-in form can be."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b""
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_FORM_BYTES:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


async def _plain(send: Send, status: int, text: str, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    body = text.encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                            (b"content-length", str(len(body)).encode()), *(headers or [])]})
    await send({"type": "http.response.body", "body": body})
