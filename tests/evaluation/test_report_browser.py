"""The report pages opened in headless Chromium (tests/js/report_check.mjs) by file:// URL with the network
blocked: no request leaves, no error, every plot drawn, each plot's screenshot the size stated here (not its
pixels), a hover that names the call, and the page readable at 1280 px."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from tests.evaluation.test_report import write_eval_report, write_replay_report
from tests.server.helpers import JS_DIR, require_browser

# Slow tier: the report pages in headless Chromium.
pytestmark = pytest.mark.slow

# Width and height in CSS pixels of each plot's element screenshot at a 1280-px viewport (device scale 1):
# the page's 1160-px column, and the height each figure is drawn at (the cost figure with its cache-hit panel;
# without a simulated cache it is 380 high).
REFERENCE = {"context": (1160, 380), "composition": (1160, 380), "cost": (1160, 460),
             "policy-context": (1160, 380), "policy-cost": (1160, 380)}
TOLERANCE = 4


def _check(page: Path, shots: Path) -> dict[str, Any]:
    node = require_browser()
    run = subprocess.run([node, str(JS_DIR / "report_check.mjs"), str(page), str(shots)], capture_output=True,
                         text=True, timeout=180, cwd=JS_DIR)
    assert run.returncode == 0, run.stderr
    result: dict[str, Any] = json.loads(run.stdout.strip().splitlines()[-1])
    return result


def _judge(result: dict[str, Any], figures: list[str], shots: Path) -> None:
    assert result["blocked"] == [], "the page asked the network for something"
    assert result["consoleErrors"] == [] and result["pageErrors"] == []
    assert [p["figure"] for p in result["plots"]] == figures
    for plot in result["plots"]:
        name = plot["figure"]
        assert plot["svg"] >= 1 and plot["traces"] >= 1, name
        assert plot["drawnPaths"] >= 1, f"{name}: no trace drawn with data"
        assert plot["box"]["width"] > 0 and plot["box"]["height"] > 0, name
        width, height = REFERENCE[name]
        shot = plot["shot"]
        assert abs(shot["width"] - width) <= TOLERANCE and abs(shot["height"] - height) <= TOLERANCE, (name, shot)
        assert (shots / shot["file"]).stat().st_size > 5_000, name  # a drawn chart, not a blank box
    # Hovering the first plot names the call and its figures.
    assert result["hoverText"] and result["hoverText"][0].startswith("call "), result["hoverText"]
    assert any("tokens" in text for text in result["hoverText"]), result["hoverText"]
    readable = result["readable"]
    assert readable["scrollWidth"] <= 1280, "the page scrolls sideways at 1280 px"
    assert readable["bodyFont"] >= 12 and readable["textFont"] >= 12
    assert readable["ticks"] > 0 and readable["tickFont"] >= 11
    assert readable["legends"] > 0 and readable["legendFont"] >= 11


def test_replay_report_in_chromium(tmp_path: Path) -> None:
    require_browser()
    page = write_replay_report(tmp_path)
    result = _check(page, tmp_path / "shots")
    _judge(result, ["context", "composition", "cost"], tmp_path / "shots")
    assert result["readable"]["details"] >= 2  # the compactions' kept/dropped lists


def test_eval_report_with_two_policies_in_chromium(tmp_path: Path) -> None:
    require_browser()
    page = write_eval_report(tmp_path)
    result = _check(page, tmp_path / "shots")
    _judge(result, ["policy-context", "policy-cost", *["context", "composition", "cost"] * 2], tmp_path / "shots")
