"""The page's progress.js in Node (no npm packages): the wait line with its time, the retry notice, and
both ending when the answer starts or the turn stops."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from nova.server.page import load_page

from .helpers import require_tool, which

JS_DIR = Path(__file__).resolve().parents[1] / "js"
STATIC = Path(__file__).resolve().parents[2] / "src" / "nova" / "server" / "static"


def test_progress_shows_the_wait_and_each_retry() -> None:
    node = which("node")
    require_tool("node", node is not None, "install Node.js 18 or newer")
    assert node is not None
    run = subprocess.run([node, str(JS_DIR / "progress_check.mjs"), str(STATIC / "progress.js")],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    seen = json.loads(run.stdout)
    [waiting] = seen["waiting"]
    assert waiting.startswith("notice waiting: ") and waiting.endswith(" waiting for the model · 3.3 s")
    assert seen["afterRetry"] == ["notice retry: retrying in 2.0 s (attempt 2 of 4): 529 overloaded"]
    assert seen["secondWait"][1].endswith("waiting for the model · 0.4 s")
    assert seen["answered"] == seen["afterRetry"] and seen["timersLeft"] == 0
    assert seen["afterStop"] == seen["afterRetry"]  # a stopped turn leaves no spinner behind


def test_the_page_inlines_progress_js_and_pins_it() -> None:
    page = load_page()
    html = page.html.decode()
    assert "const novaProgress" in html and '<script src="progress.js">' not in html
    assert html.index("const novaProgress") < html.index("novaProgress.chunk(chunk, node); //")
    assert page.csp.count("'sha256-") == html.count("<script>") + html.count("<style>")  # each one pinned
