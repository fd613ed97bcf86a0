"""The page loader: every script and stylesheet `index.html` names is inlined and pinned by hash in the
Content-Security-Policy, so a feature's own script file needs one `<script src>` line and nothing else."""

from __future__ import annotations

import base64
import hashlib
import re
from importlib import resources

from nova.server.page import load_page


def _hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def test_every_named_script_and_stylesheet_is_inlined_and_pinned() -> None:
    template = (resources.files("nova.server") / "static" / "index.html").read_text(encoding="utf-8")
    named = re.findall(r'<script src="([^"]+)"></script>', template)
    sheets = re.findall(r'<link rel="stylesheet" href="([^"]+)">', template)
    assert "app.js" in named and len(named) >= 3 and "app.css" in sheets
    page = load_page()
    html = page.html.decode("utf-8")
    assert "<script src" not in html and 'rel="stylesheet"' not in html  # nothing is fetched
    scripts = re.findall(r"<script>(.*?)</script>", html, flags=re.S)
    styles = re.findall(r"<style>(.*?)</style>", html, flags=re.S)
    assert len(scripts) == len(named) and len(styles) == len(sheets)
    directives = dict(part.strip().split(" ", 1) for part in page.csp.split(";"))
    assert directives["script-src"].split() == [_hash(s) for s in scripts]
    assert directives["style-src"].split() == [_hash(s) for s in styles]
    static = resources.files("nova.server") / "static"
    assert scripts == [(static / name).read_text(encoding="utf-8") for name in named]  # in order, as written
    assert styles == [(static / name).read_text(encoding="utf-8") for name in sheets]
    assert "'unsafe-inline'" not in page.csp and directives["default-src"] == "'none'"
