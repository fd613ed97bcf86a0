"""The web page: one HTML document with its stylesheet and script inlined, from files shipped in the
package (`nova/server/static/`). No build step, no CDN: it works offline from an installed wheel.

Inlining lets the page be the only URL that accepts the token in its query string (a browser cannot add
a header to a link someone clicks); every API call from the page then sends the token as a header. The
inline script and style are pinned by hash in the Content-Security-Policy, so nothing else can run.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from functools import cache
from importlib import resources
from importlib.resources.abc import Traversable

__all__ = ["Page", "load_page"]


@dataclass(frozen=True, slots=True)
class Page:
    html: bytes
    csp: str


def _hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def _bundle(static: Traversable, main: str) -> str:
    """`main` after the other files of its kind (`approvals.js` …), sorted by name: one inline script
    (one stylesheet), so one hash pins it. The others only define functions `main` calls."""
    suffix = main[main.rindex("."):]
    others = sorted((f for f in static.iterdir() if f.name.endswith(suffix) and f.name != main), key=lambda f: f.name)
    return "\n".join(f.read_text(encoding="utf-8") for f in (*others, static / main))


@cache
def load_page() -> Page:
    static = resources.files("nova.server") / "static"
    template = (static / "index.html").read_text(encoding="utf-8")
    style = _bundle(static, "app.css")
    script = _bundle(static, "app.js")
    html = template.replace("/*STYLE*/", style).replace("/*SCRIPT*/", script)
    csp = (f"default-src 'none'; script-src {_hash(script)}; style-src {_hash(style)}; connect-src 'self'; "
           "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
    return Page(html=html.encode("utf-8"), csp=csp)
