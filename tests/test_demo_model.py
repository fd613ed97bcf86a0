"""The demo model as a user meets it in a conversation: the demo's task asked after another request
(the terminal UI's first question was "what is here?") is worked through from its first step, and its
answer never reports as refused a step that was not asked for."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from nova.agent.demo import DEMO_PROMPT, make_demo_project
from nova.cli.main import app

runner = CliRunner()


def test_the_demo_task_asked_second_is_worked_through(tmp_path: Path, nova_home: Path) -> None:
    project = make_demo_project(tmp_path / "project")
    first = runner.invoke(app, ["run", "what is here?", "--provider", "demo", "--cwd", str(project), "--json"])
    assert first.exit_code == 0, first.output
    second = runner.invoke(app, ["run", "--resume", "last", DEMO_PROMPT, "--provider", "demo", "--cwd", str(project),
                                 "--yes", "--json"])
    assert second.exit_code == 0, second.output
    answer = json.loads(second.output)
    assert answer["steps"] > 1, answer["text"]
    assert answer["text"].startswith("All tests pass now."), answer["text"]
    assert "refused" not in answer["text"]
    assert "return sum(values) / len(values)" in (project / "calc" / "stats.py").read_text(encoding="utf-8")
