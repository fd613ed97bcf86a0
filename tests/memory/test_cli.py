"""`nova memory …` and `nova rules` through typer's CliRunner; `/memory` and `/remember`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from nova.cli.commands.memory import app, rules_command
from nova.memory.slash import handle_memory_slash
from nova.memory.store import MemoryStore

runner = CliRunner()


@pytest.fixture
def in_project(project: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(project)
    return project


def rules_app() -> typer.Typer:
    wrapper = typer.Typer()
    wrapper.command("rules")(rules_command)

    @wrapper.command("noop")
    def _noop() -> None:  # a second command keeps typer from collapsing the app into `rules`
        pass

    return wrapper


def test_add_list_show_approve_forget(in_project: Path, nova_home: Path) -> None:
    result = runner.invoke(app, ["add", "--type", "feedback", "--name", "small commits",
                                 "Keep commits small and focused."])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["add", "--type", "project", "--name", "db", "PostgreSQL 16 everywhere."])
    assert result.exit_code == 0, result.output
    listed = json.loads(runner.invoke(app, ["list", "--json"]).stdout)
    assert [{k: row[k] for k in ("name", "type", "status")} for row in listed] == [
        {"name": "small commits", "type": "feedback", "status": "active"},
        {"name": "db", "type": "project", "status": "active"},
    ]
    assert listed[0]["path"] == str(nova_home / "memory" / "small-commits.md")
    assert listed[1]["path"] == str(in_project.resolve() / ".nova" / "memory" / "db.md")
    shown = runner.invoke(app, ["show", "db"])
    assert shown.exit_code == 0 and "PostgreSQL 16 everywhere." in shown.stdout and "type: project" in shown.stdout
    assert runner.invoke(app, ["forget", "db"]).exit_code == 0
    assert json.loads(runner.invoke(app, ["list", "--json"]).stdout)[1]["status"] == "revoked"
    assert runner.invoke(app, ["approve", "db"]).exit_code == 0
    assert runner.invoke(app, ["forget", "--purge", "db"]).exit_code == 0
    assert [r["name"] for r in json.loads(runner.invoke(app, ["list", "--json"]).stdout)] == ["small commits"]
    missing = runner.invoke(app, ["show", "nope"])
    assert missing.exit_code == 1 and "no memory named 'nope'" in missing.stderr


def _column(output: str, index: int) -> str:
    """One column of a rich table, its folded lines joined."""
    return "".join(line.split("│")[index].strip() for line in output.splitlines() if line.startswith("│"))


def test_at_80_columns_names_and_paths_are_whole(in_project: Path, nova_home: Path) -> None:
    """A pipe is 80 columns: the table cut a memory's name to "prefers-pytest-ov…", and the name is what
    `nova memory show` takes; `nova rules` cut a nested file's path the same way."""
    name = "prefers-pytest-over-unittest-everywhere"
    assert runner.invoke(app, ["add", "--type", "user", "--name", name, "Plain asserts."]).exit_code == 0
    listed = runner.invoke(app, ["list"], env={"COLUMNS": "80"})
    assert listed.exit_code == 0 and "…" not in listed.stdout, listed.stdout
    assert name in _column(listed.stdout, 1) and str(nova_home / "memory") in _column(listed.stdout, 5)
    nested = in_project / "docs" / "deep" / "nested" / "a-style-guide-with-a-long-name.md"
    nested.parent.mkdir(parents=True)
    nested.write_text("- Four spaces.\n", encoding="utf-8")
    (in_project / "NOVA.md").write_text("# Rules\n@docs/deep/nested/a-style-guide-with-a-long-name.md\n",
                                       encoding="utf-8")
    rules = runner.invoke(rules_app(), ["rules"], env={"COLUMNS": "80"})
    assert rules.exit_code == 0 and "…" not in rules.stdout, rules.stdout
    assert str(nested.resolve()) in _column(rules.stdout, 1), rules.stdout


def test_refused_write_exits_non_zero_with_the_reason(in_project: Path, nova_home: Path) -> None:
    token = "gh" + "p_" + "a1B2c3D4" * 5
    result = runner.invoke(app, ["add", "--type", "user", "--name", "token", f"my token is {token}"])
    assert result.exit_code == 1
    assert "secret (GitHub token)" in result.stderr and token not in result.output + result.stderr
    assert result.stderr.startswith("nova: refused: the description") and result.stderr.count("refused") == 1
    bad_name = runner.invoke(app, ["add", "--type", "user", "--name", "../../etc/passwd", "x"])
    assert bad_name.exit_code == 1 and "path separator" in bad_name.stderr
    bad_type = runner.invoke(app, ["add", "--type", "policy", "--name", "x", "x"])
    assert bad_type.exit_code == 1 and "unknown memory type" in bad_type.stderr
    assert not (nova_home / "memory").exists() or not list((nova_home / "memory").glob("*.md"))


def test_edit_uses_editor_and_rolls_back_a_secret(in_project: Path, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    runner.invoke(app, ["add", "--type", "user", "--name", "tz", "Europe/Berlin"])
    addition = tmp_path / "addition.txt"
    addition.write_text("Works 9-17.\n")
    # An "editor" that appends the contents of `addition` to the file it is given.
    monkeypatch.setenv("EDITOR", f"{sys.executable} -c \"import sys; "
                                 f"open(sys.argv[1], 'a').write(open('{addition}').read())\"")
    assert runner.invoke(app, ["edit", "tz"]).exit_code == 0
    assert "Works 9-17." in runner.invoke(app, ["show", "tz"]).stdout
    addition.write_text("aws key " + "AK" + "IA" + "Z" * 16 + "\n")
    result = runner.invoke(app, ["edit", "tz"])
    assert result.exit_code == 1 and "restored" in result.stderr
    assert "AKIA" not in runner.invoke(app, ["show", "tz"]).stdout


def test_an_edited_candidate_keeps_its_name_and_text_through_a_merge(
        in_project: Path, nova_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two duplicate candidates Nova wrote; the user edits the older one. Consolidation keeps the edited
    memory under its name with the edit and the other's text, and says which was merged into which."""
    from datetime import UTC, datetime, timedelta

    from nova.memory.store import Memory, MemorySource

    store = MemoryStore.for_workspace(home=nova_home, cwd=in_project)
    then = datetime.now(UTC) - timedelta(days=2)
    for name, description, body, age in (("ci", "CI runner", "CI runs .ci/run.", 2),
                                         ("ci-notes", "ci runner", "Integration tests are flaky.", 1)):
        store.write(Memory(name=name, description=description, body=body, type="project", status="candidate",
                           author="model", source=MemorySource(origin="assistant"),
                           created=then, updated=datetime.now(UTC) - timedelta(days=age)))
    edit = tmp_path / "edit.py"
    edit.write_text("import sys\np = sys.argv[1]\ntext = open(p).read()\n"
                    "open(p, 'w').write(text.replace('CI runs .ci/run.', 'CI runs .ci/run in 90 minutes.'))\n")
    monkeypatch.setenv("EDITOR", f"{sys.executable} {edit}")
    assert runner.invoke(app, ["edit", "ci"]).exit_code == 0
    result = runner.invoke(app, ["consolidate"])
    assert result.exit_code == 0, result.output
    assert "kept 'ci' ← merged 'ci-notes'" in result.stdout
    shown = runner.invoke(app, ["show", "ci"])
    assert shown.exit_code == 0, shown.output
    assert "CI runs .ci/run in 90 minutes." in shown.stdout and "Integration tests are flaky." in shown.stdout
    assert [m.name for m in store.memories()] == ["ci"]


def test_consolidate_command(in_project: Path) -> None:
    runner.invoke(app, ["add", "--type", "project", "--name", "a", "--description", "same", "one"])
    runner.invoke(app, ["add", "--type", "project", "--name", "b", "--description", "same", "two"])
    result = runner.invoke(app, ["consolidate", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    # Both are approved: consolidation reports the duplicate and leaves the decision to the user. Which
    # one is held depends on which was updated last (the two adds may fall in different seconds).
    held = [e["name"] for e in report["held"]]
    assert report["ran"] and report["merged"] == [] and held in (["a"], ["b"])
    kept = "a" if held == ["b"] else "b"
    shown = runner.invoke(app, ["consolidate"]).stdout
    assert f"left '{held[0]}' unmerged: it duplicates approved memory '{kept}'" in shown


def test_rules_json(in_project: Path, nova_home: Path) -> None:
    (nova_home / "NOVA.md").parent.mkdir(parents=True, exist_ok=True)
    (nova_home / "NOVA.md").write_text("global")
    (in_project / "NOVA.md").write_text("project @./extra.md @./missing.md")
    (in_project / "extra.md").write_text("extra")
    result = runner.invoke(rules_app(), ["rules", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert set(report) == {"files", "skipped", "searched"}
    assert [set(f) for f in report["files"]] == [{"path", "imported_by", "tokens"}] * 3
    assert report["files"][2]["imported_by"] == str((in_project / "NOVA.md").resolve())
    assert report["skipped"] == [{"path": str((in_project / "missing.md").resolve()),
                                  "reason": f"not found (@./missing.md, imported by {(in_project / 'NOVA.md').resolve()})"}]
    human = runner.invoke(rules_app(), ["rules"])
    assert human.exit_code == 0 and "missing.md" in human.stdout


def test_rules_without_files_names_what_was_searched_and_how_to_add_one(in_project: Path, nova_home: Path) -> None:
    human = runner.invoke(rules_app(), ["rules"])
    assert human.exit_code == 0, human.output
    out = human.stdout
    assert "No instruction files found" in out
    assert str(nova_home / "NOVA.md") in out
    assert f"{in_project.resolve()}/{{NOVA.md, AGENTS.md, CLAUDE.md}}" in out
    assert str(in_project.resolve() / "NOVA.local.md") in out
    assert "> NOVA.md" in out and "instructions.project_files" in out
    report = json.loads(runner.invoke(rules_app(), ["rules", "--json"]).stdout)
    assert report["files"] == [] and str(in_project.resolve() / "AGENTS.md") in report["searched"]


def test_slash_commands(store: MemoryStore) -> None:
    assert handle_memory_slash("hello", store=store) is None
    assert handle_memory_slash("/memory", store=store).text.startswith("No memories")  # type: ignore[union-attr]
    saved = handle_memory_slash("/remember project: tests need a running PostgreSQL", store=store,
                                session_id="s1", message_id="msg_1")
    assert saved is not None and saved.ok and "project memory" in saved.text
    [memory] = store.memories()
    assert memory.type == "project" and memory.author == "user" and memory.status == "active"
    assert memory.source.session == "s1" and memory.source.messages == ("msg_1",)
    listing = handle_memory_slash("/memory", store=store)
    assert listing is not None and memory.name in listing.text
    refused = handle_memory_slash("/remember password=" + "hunter2hunter2", store=store)
    assert refused is not None and not refused.ok and "secret" in refused.text
    assert refused.text.startswith("Not saved: the ") and "refused" not in refused.text
    revoked = handle_memory_slash(f"/memory forget {memory.name}", store=store)
    assert revoked is not None and revoked.ok and store.get(memory.name).status == "revoked"
    assert "never recalled again" in revoked.text  # revoked through provenance, as the CLI does
    from nova.memory.provenance import RevocationRegistry
    assert RevocationRegistry.for_memory_dir(store.home_dir).get(memory.name) is not None
    unknown = handle_memory_slash("/memory show nothing-here", store=store)
    assert unknown is not None and not unknown.ok


def test_consolidate_then_undo_from_the_command_line(in_project: Path, nova_home: Path) -> None:
    from datetime import UTC, datetime, timedelta

    from nova.memory.store import Memory, MemorySource

    store = MemoryStore.for_workspace(home=nova_home, cwd=in_project)
    then = datetime.now(UTC) - timedelta(days=2)
    for name, body, age in (("ci", "CI runs .ci/run.", 2), ("ci-notes", "Integration tests are flaky.", 1)):
        store.write(Memory(name=name, description="ci runner", body=body, type="project", status="candidate",
                           author="model", source=MemorySource(origin="assistant"), created=then,
                           updated=datetime.now(UTC) - timedelta(days=age)))
    shown = runner.invoke(app, ["consolidate"]).stdout
    assert "kept 'ci-notes' ← merged 'ci' ('ci' has the same description)" in shown
    op = json.loads(runner.invoke(app, ["consolidate", "--json"]).stdout)  # nothing left to merge
    assert op["merged"] == [] and op["skipped"] == []
    listed = runner.invoke(app, ["undo", "--list"]).stdout
    assert "merged 'ci' into 'ci-notes' ('ci' has the same description)" in listed
    undone = runner.invoke(app, ["undo"])
    assert undone.exit_code == 0 and "restored" in undone.stdout
    assert sorted(m.name for m in store.memories()) == ["ci", "ci-notes"]
    again = runner.invoke(app, ["undo"])
    assert again.exit_code == 1 and "nothing to undo" in again.output
