"""The web page: one HTML document with its stylesheets and scripts inlined, from files shipped in the
package (`nova/server/static/`). No build step, no CDN: it works offline from an installed wheel.

`index.html` names its parts the ordinary way, `<link rel="stylesheet" href="app.css">` and
`<script src="app.js"></script>`; each is replaced by the file's text, and each inlined script and style
is pinned by its hash in the Content-Security-Policy, so nothing else can run. A feature of the page
lives in its own script file: one more `<script src>` line in `index.html`, nothing here.

The page needs the token like every route; a browser signs in with a form and then carries a cookie
(`nova.server.browser_login`), so the page's script never holds the token.
"""

from __future__ import annotations

import base64
import hashlib
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources

__all__ = ["Page", "load_page"]

_SCRIPT = re.compile(r'<script src="(?:/static/)?([A-Za-z0-9_.-]+\.js)"></script>')
_STYLE = re.compile(r'<link rel="stylesheet" href="(?:/static/)?([A-Za-z0-9_.-]+\.css)">')


@dataclass(frozen=True, slots=True)
class Page:
    html: bytes
    csp: str


def _hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


@cache
def load_page() -> Page:
    static = resources.files("nova.server") / "static"
    scripts: list[str] = []
    styles: list[str] = []

    def inline(found: re.Match[str], tag: str, kept: list[str]) -> str:
        text = (static / found.group(1)).read_text(encoding="utf-8")
        kept.append(text)
        # A function, not a replacement string: the file's text is taken as is (no backslash escapes).
        return f"<{tag}>{text}</{tag}>"

    html = (static / "index.html").read_text(encoding="utf-8")
    html = _STYLE.sub(lambda m: inline(m, "style", styles), html)
    html = _SCRIPT.sub(lambda m: inline(m, "script", scripts), html)
    csp = (f"default-src 'none'; script-src {' '.join(map(_hash, scripts))}; "
           f"style-src {' '.join(map(_hash, styles))}; connect-src 'self'; "
           "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
    return Page(html=html.encode("utf-8"), csp=csp)
