"""`nova replay --report`: one self-contained HTML file with the two plots, checked in headless Chromium."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nova.cli import app
from nova.evaluation.report import Line, svg_chart


def _session(tmp_path: Path) -> Path:
    import json

    steps = []
    for i in range(30):
        steps += [{"role": "assistant", "content": f"THOUGHT: step {i}.\n\n```bash\ncat f{i}.py\n```"},
                  {"role": "user", "content": "<returncode>0</returncode>\n<output>\n" + f"line {i} " * 250
                   + "\n</output>"}]
    path = tmp_path / "run.traj.json"
    path.write_text(json.dumps({"info": {}, "trajectory_format": "mini-swe-agent-1", "messages": [
        {"role": "system", "content": "You are a coding agent."}, {"role": "user", "content": "Fix f3.py."}, *steps]}))
    return path


def test_a_chart_draws_one_point_per_call_and_marks_compactions() -> None:
    svg = svg_chart("t", [Line("a", [1.0, 5.0, 3.0], "#000"), Line("b", [2.0] * 3, "#111", dashed=True)], marks=[1])
    series = re.findall(r'points="([^"]*)"', svg)
    assert [len(p.split()) for p in series] == [3, 3]
    assert svg.count('class="compaction"') == 1 and "stroke-dasharray" in svg


def test_replay_report_is_one_offline_page_with_both_plots(tmp_path: Path, nova_home: Path) -> None:
    out = tmp_path / "out.html"
    result = CliRunner().invoke(app, ["replay", str(_session(tmp_path)), "--window", "8000", "--provider-cache",
                                      "anthropic", "--price", "claude-sonnet-4-5", "--report", str(out)])
    assert result.exit_code == 0, result.output
    page = out.read_text()
    # Nothing to fetch: no script, no external resource.
    assert "<script" not in page and "http" not in page and "<link" not in page
    assert page.count("<svg") == 2
    series = re.findall(r'<polyline data-series="([^"]*)"[^>]*points="([^"]*)"', page)
    assert [name for name, _ in series][:1] == ["context (tokens)"]
    assert all(len(points.split()) == 30 for _, points in series)  # one point per recorded call
    assert page.count('class="compaction"') >= 2  # 8k forces compactions, marked on both plots
    assert "Cumulative cost of the agent" in page
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("no headless Chromium to render the page")
    shot = tmp_path / "shot.png"
    subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1280,1000",
                    f"--screenshot={shot}", out.as_uri()], capture_output=True, timeout=60, check=True)
    assert shot.stat().st_size > 20_000  # a rendered page with plots, not a blank one (~2 kB)
