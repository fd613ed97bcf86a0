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


def test_demo_dir_refuses_a_file_and_a_folder_that_is_not_the_demos(tmp_path: Path, nova_home: Path) -> None:
    """`nova demo --dir` writes README.md, calc/, tests/ and logs/: a folder holding anything else (a
    project of yours) is refused before anything is written, as is a file; a folder that cannot be made
    is one line, not a traceback; an earlier demo's folder is used again."""
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "README.md").write_text("# my project\n")
    (mine / "main.py").write_text("print('mine')\n")
    refused = runner.invoke(app, ["demo", "--dir", str(mine)])
    assert refused.exit_code == 2 and "main.py" in refused.stderr and "Traceback" not in refused.stderr
    assert (mine / "README.md").read_text() == "# my project\n" and not (mine / "calc").exists()
    a_file = tmp_path / "notes.txt"
    a_file.write_text("notes\n")
    assert runner.invoke(app, ["demo", "--dir", str(a_file)]).exit_code == 2
    blocked = runner.invoke(app, ["demo", "--dir", str(a_file / "sub")])
    assert blocked.exit_code == 1 and "Traceback" not in blocked.stderr
    assert len(blocked.stderr.strip().splitlines()) == 1 and "nova: error:" in blocked.stderr
    again = make_demo_project(tmp_path / "earlier")
    assert runner.invoke(app, ["demo", "--dir", str(again), "--json"]).exit_code == 0
