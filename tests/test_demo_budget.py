"""`nova demo`, run as a user runs it: no warning, the bar never over 100 %, and its compaction at least
halves the view, counted the same way as the bar."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

COMPACTING = re.compile(r"compacting \d+ messages, ([\d,]+) tokens")
DONE = re.compile(r"compaction done ([\d,]+) → ([\d,]+) tokens")
BAR = re.compile(r"context [█░]+ ([\d,]+)/([\d,]+) \((\d+)%\)")


def _int(text: str) -> int:
    return int(text.replace(",", ""))


def test_demo_prints_no_warning_and_its_compaction_halves_the_view(tmp_path: Path, nova_home: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", "from nova.cli.main import main; main()", "demo", "--dir", str(tmp_path / "proj")],
        capture_output=True, text=True, timeout=120,
        env={**os.environ, "NOVA_HOME": str(nova_home), "COLUMNS": "200"},
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "nova: WARNING" not in out and "nova: ERROR" not in out, out
    assert "All tests pass now" in out
    done = DONE.findall(out)
    assert len(done) >= 1, out
    for before, after in done:
        assert _int(after) * 2 <= _int(before), out
    # The compaction line and the bar count the same view the same way: the figure the compaction
    # starts from is the one it reports as "before", and the bar after it shows the "after" figure.
    assert [_int(b) for b, _ in done] == [_int(x) for x in COMPACTING.findall(out)]
    bars = BAR.findall(out)
    assert bars and all(int(percent) <= 100 for _, _, percent in bars), out
    after_bar = out.split("compaction done", 1)[1]
    first_bar = BAR.search(after_bar)
    assert first_bar is not None and _int(first_bar.group(1)) == _int(done[0][1])


def test_the_demo_compaction_receipt_charges_no_summary_call(tmp_path: Path, nova_home: Path) -> None:
    """The demo model summarizes with the extractive summarizer, which calls no model: the receipt on the
    compaction line charges no summary call, as the session's calls by purpose (turns only) say."""
    proc = subprocess.run(
        [sys.executable, "-c", "from nova.cli.main import main; main()", "demo", "--dir", str(tmp_path / "proj")],
        capture_output=True, text=True, timeout=120,
        env={**os.environ, "NOVA_HOME": str(nova_home), "COLUMNS": "400"},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    line = next(x for x in proc.stdout.splitlines() if "compaction done" in x)
    assert "no summary call" in line and "summary call " not in line.replace("no summary call", ""), line
    shown = subprocess.run(
        [sys.executable, "-c", "from nova.cli.main import main; main()", "sessions", "show", "last", "--json"],
        capture_output=True, text=True, timeout=60, env={**os.environ, "NOVA_HOME": str(nova_home)},
    )
    assert list(__import__("json").loads(shown.stdout)["calls"]) == ["turn"]
