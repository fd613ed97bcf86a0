"""The web page in Debian's headless chromium, driven by playwright-core from Node."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from nova.demo import DEMO_PROMPT

from .helpers import Server, require_tool, which

JS_DIR = Path(__file__).resolve().parents[1] / "js"
CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")


def test_page_streams_an_answer_and_shows_the_one_figure(server: Server, tmp_path: Path) -> None:
    node = which("node")
    require_tool("node", node is not None, "install Node.js 18 or newer")
    require_tool("chromium", Path(CHROMIUM).exists(), "apt-get install chromium")
    require_tool("the npm package 'playwright-core'", (JS_DIR / "node_modules" / "playwright-core").is_dir(),
                 f"run `npm ci` in {JS_DIR}")
    assert node is not None
    screenshot = tmp_path / "nova-page.png"
    run = subprocess.run(
        [node, str(JS_DIR / "page_check.mjs"), server.base, server.token, DEMO_PROMPT, "All tests pass now.",
         str(screenshot), str(tmp_path / "chromium-profile")],
        capture_output=True, text=True, timeout=240, cwd=JS_DIR,
    )
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result.get("ok"), result.get("error")
    assert result["consoleErrors"] == []
    assert "token=" not in result["addressBar"]  # taken out of the address bar once read
    assert result["sawCompacting"]
    assert any("All tests pass now." in t for t in result["assistantText"])
    assert result["toolCalls"] == 12 and result["firstToolOpen"]
    # The bar shows the figure the API reports.
    with server.client() as client:
        context = client.get(f"/api/sessions/{result['sessionId']}/context").json()
    assert result["barPercent"] == f"{context['percent']:.1f}%"
    # "What's in context" lists the compiler's manifest: one row per segment and per item left out.
    manifest = context["manifest"]
    assert result["segmentRows"] == len(manifest["segments"]) + len(manifest["dropped"])
    # Offline: the page loaded nothing from anywhere but this server.
    assert all(url.startswith(server.base) for url in result["requests"]), result["requests"]
    assert screenshot.stat().st_size > 10_000
    print(f"screenshot: {screenshot}")
