"""`nova demo`'s compaction summary names the failing test command with the exit code the shell really gave
(Nova's bash reports it after the output: a long output puts it far from the start), and carries the
agent's choices rather than its narration."""

from __future__ import annotations

import json
import re
from pathlib import Path

from typer.testing import CliRunner

from nova.cli.main import app

runner = CliRunner()


def test_the_demo_summary_says_the_tests_exited_1(tmp_path: Path, nova_home: Path) -> None:
    result = runner.invoke(app, ["demo", "--dir", str(tmp_path / "project")])
    assert result.exit_code == 0, result.output
    [transcript] = list((nova_home / "sessions").glob("*/transcript.jsonl"))
    records = [json.loads(line) for line in transcript.read_text(encoding="utf-8").splitlines() if line.strip()]
    summaries = [r["summary"] for r in records if r.get("type") == "compact_boundary"]
    assert summaries, "the demo compacts once"
    summary = summaries[0]
    failing = summary.split("## Last failing command", 1)[1].split("\n## ", 1)[0]
    assert re.search(r"`python -m unittest -v 2>&1` exited 1 \(msg ", failing), failing
    assert "exited -1" not in summary
    # "Let me read the implementation." is narration, not a decision.
    assert "Let me read the implementation." not in summary
