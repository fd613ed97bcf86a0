"""The web page: one HTML document with its stylesheet and script inlined, from files shipped in the
package (`nova/server/static/`). No build step, no CDN: it works offline from an installed wheel.

Inlining lets the page be the only URL that accepts the token in its query string (a browser cannot add
a header to a link someone clicks); every API call from the page then sends the token as a header. The
inline script and style are pinned by hash in the Content-Security-Policy, so nothing else can run.
"""

from __future__ import annotations

import base64
import hashlib
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources

__all__ = ["Page", "load_page"]

_SCRIPT_SRC = re.compile(r'<script src="([\w.-]+\.js)"></script>')


@dataclass(frozen=True, slots=True)
class Page:
    html: bytes
    csp: str


def _hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


@cache
def load_page() -> Page:
    static = resources.files("nova.server") / "static"
    template = (static / "index.html").read_text(encoding="utf-8")
    style = (static / "app.css").read_text(encoding="utf-8")
    script = (static / "app.js").read_text(encoding="utf-8")
    # `<script src="NAME.js"></script>` in the template is inlined from static/NAME.js, pinned like app.js.
    scripts = [script]

    def inline(match: re.Match[str]) -> str:
        scripts.append((static / match.group(1)).read_text(encoding="utf-8"))
        return f"<script>{scripts[-1]}</script>"

    template = _SCRIPT_SRC.sub(inline, template)
    html = template.replace("/*STYLE*/", style).replace("/*SCRIPT*/", script)
    hashes = " ".join(_hash(s) for s in scripts)
    csp = (f"default-src 'none'; script-src {hashes}; style-src {_hash(style)}; connect-src 'self'; "
           "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
    return Page(html=html.encode("utf-8"), csp=csp)
