"""The web page in Debian's headless chromium, driven by playwright-core from Node, against a real
server on loopback: sign in with the form, one turn of the demo, what the page then shows, /docs."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from nova.agent.demo import DEMO_PROMPT
from nova.messages import Message
from nova.sessions.session import Session

from .helpers import JS_DIR, require_browser, running_server

# Slow tier: the page in headless Chromium.
pytestmark = pytest.mark.slow


def test_the_page_from_sign_in_to_docs(nova_home: Path, project: Path, tmp_path: Path) -> None:
    node = require_browser()
    # A rule refuses `grep`: the demo's search of the log is denied, and the page must say so.
    nova_home.mkdir(parents=True, exist_ok=True)
    (nova_home / "config.json").write_text(json.dumps({"permissions": {"deny": ["grep"]}}), encoding="utf-8")
    # A session from the terminal with exactly one message, for the sidebar's count.
    with Session.create(nova_home, title="asked once from the terminal", cwd=project) as earlier:
        earlier.record_message(Message.user("asked once from the terminal"))
        earlier.flush()
    screenshot = tmp_path / "nova-page.png"
    with running_server(nova_home, project) as server:
        run = subprocess.run(
            [node, str(JS_DIR / "page_check.mjs"), server.base, server.token, DEMO_PROMPT, "All tests pass now.",
             str(screenshot), str(tmp_path / "chromium-profile")],
            capture_output=True, text=True, timeout=240, cwd=JS_DIR,
        )
        assert run.returncode == 0, run.stderr
        result = json.loads(run.stdout.strip().splitlines()[-1])
        assert result.get("ok"), result.get("error")
        with server.client() as client:
            context = client.get(f"/api/sessions/{result['sessionId']}/context").json()
    assert result["consoleErrors"] == []
    # Without the token: a form asks for it (never raw JSON); once signed in the address has no token.
    assert result["loginStatus"] == 401 and result["loginForm"] and not result["loginIsJson"]
    assert result["addressBar"] == f"{server.base}/"
    # The sidebar counts in words that agree with the number, and long titles end in an ellipsis.
    assert result["sidebar"]["counts"] == ["1 message"] and not result["sidebar"]["overflows"]
    assert result["sessionTitle"] == DEMO_PROMPT[:80]  # named after the first message, as `nova run` names it
    assert result["titleEllipsis"] and not result["sidebarOverflowsAfter"]
    # The turn streamed, compacted, and its calls are listed; the refused one is marked denied.
    assert result["sawCompacting"]
    assert any("All tests pass now." in t for t in result["assistantText"])
    assert result["toolCalls"] == 12 and result["firstToolOpen"]
    assert len(result["deniedCalls"]) == 1 and "grep" in result["deniedCalls"][0]
    assert "denied" in result["deniedCalls"][0].lower()
    assert result["deniedAfterReopen"] == 1  # read back from the record, still marked
    # The bar, the model and the cost show the figures the API reports (the ones `nova run` prints).
    assert result["barPercent"] == f"{context['percent']:.1f}%"
    assert result["model"] == "demo/nova-demo"
    # The cost line names the calls behind it by purpose (the demo model: the turn's steps and the
    # compaction summary is extractive, so turn calls only).
    turn_calls = context["calls"]["turn"]["calls"]
    assert set(context["calls"]) == {"turn"} and turn_calls >= 12
    assert result["cost"] == f"${context['cost_usd']:.4f} · calls {turn_calls} turn"
    assert result["cache"] == f"cache {round(100 * context['cache_hit_rate'])}%"
    # "What's in context": the picture of the window above the table, summing to the manifest's figure.
    manifest = context["manifest"]
    picture = result["picture"]
    assert picture["figure"] == manifest["picture"]["figure"] == manifest["window"]
    assert picture["sum"] == picture["figure"] and picture["used"] == manifest["used"] == context["used"]
    assert picture["kinds"][0] == "system" and picture["kinds"][-1] == "free"
    assert {"tools", "history", "observations"} <= set(picture["kinds"])
    assert abs(picture["widthShare"] - 1) < 0.01 and picture["aboveTable"]
    assert f"{manifest['used']:,}" in picture["caption"] and f"{manifest['window']:,}" in picture["caption"]
    first = manifest["segments"][0]
    hover = picture["titles"][0]  # hovering a slice names the segment, its tokens and why it is there
    assert first["id"] in hover and f"{first['tokens']:,} tokens" in hover and first["reason"] in hover
    assert any(item.startswith("free ") for item in picture["legend"])
    # The table lists the manifest, one row per segment and per item left out, and fits 1280 px.
    assert result["segmentRows"] == len(manifest["segments"]) + len(manifest["dropped"])
    fit = result["tableFit"]
    assert fit["viewScrollWidth"] <= fit["viewClientWidth"], fit
    assert fit["tableRight"] <= fit["innerWidth"] and fit["pageScrollWidth"] <= 1280, fit
    # /docs opens in the same browser, signed in by the cookie.
    assert result["docsStatus"] == 200 and "Nova" in result["docsTitle"] and result["docsSpecStatus"] == 200
    # Offline: the page loaded nothing from anywhere but this server.
    assert all(url.startswith(server.base) for url in result["requests"]), result["requests"]
    assert screenshot.stat().st_size > 10_000
    print(f"screenshot: {screenshot}")
