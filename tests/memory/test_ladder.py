"""MEM-8: the promotion ladder needs its evidence at every rung, names what is missing, and only a
standard a person reviewed may become a rule. Real files, real test commands (subprocesses), the CLI."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nova.cli.commands.memory import app as memory_app
from nova.memory.config import MemoryConfig
from nova.memory.governance import Proposal, remember
from nova.memory.ladder import Ladder, PromotionRefused
from nova.memory.provenance import ProvenanceLog
from nova.memory.store import MemoryStore

PASSES = f"{shlex.quote(sys.executable)} -c 'raise SystemExit(0)'"
FAILS = f"{shlex.quote(sys.executable)} -c 'raise SystemExit(3)'"


@pytest.fixture()
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    home, project = tmp_path / "home", tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    home.mkdir()
    monkeypatch.setenv("NOVA_HOME", str(home))
    monkeypatch.chdir(project)
    return {"home": home, "project": project}


def model_note(world: dict[str, Path]) -> MemoryStore:
    store = MemoryStore.for_workspace(home=world["home"], cwd=world["project"])
    remember(store, Proposal(name="retry-flaky", description="flaky network tests", type="feedback",
                             body="Network tests in tests/net are flaky; rerun them once before debugging.",
                             author="model", origin="assistant", session="ses_1"), config=MemoryConfig())
    return store


def promote(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(memory_app, ["promote", *args])
    return result.exit_code, result.output


def test_every_rung_needs_its_evidence_and_the_refusal_names_what_is_missing(world: dict[str, Path]) -> None:
    store = model_note(world)
    ladder = Ladder(store.home_dir)
    assert ladder.standing(store.get("retry-flaky")).rung == "episode"

    code, out = promote("retry-flaky", "--to", "lesson")
    assert code == 1 and "seen in 1 session(s), needs 2" in out
    # Skipping a rung does not skip its evidence: all that is missing is named, lowest first.
    code, out = promote("retry-flaky", "--to", "standard", "--yes")
    assert code == 1
    for missing in ("lesson: seen in 1 session(s)", "skill: a test that passed", "standard: evidence from 2 sessions",
                    "standard: a person's approval"):
        assert missing in out

    # Recalled in a second session: a lesson by evidence alone.
    ProvenanceLog.for_memory_dir(store.home_dir).append(session="ses_2", kind="view", message_id="m9",
                                                        memories=["retry-flaky"])
    standing = ladder.standing(store.get("retry-flaky"))
    assert standing.rung == "lesson" and standing.sessions == ("ses_1", "ses_2")
    assert standing.missing == ("skill: a test that passed (`--test CMD` runs it and records its exit code)",)

    code, out = promote("retry-flaky", "--to", "skill")
    assert code == 1 and "a test that passed" in out
    code, out = promote("retry-flaky", "--to", "skill", "--test", FAILS)
    assert code == 1 and "failed (exit 3)" in out
    code, out = promote("retry-flaky", "--to", "skill", "--test", PASSES)
    assert code == 0 and "'retry-flaky' is now a skill" in out

    # A standard needs a person's approval of the text (it is still the model's candidate).
    code, out = promote("retry-flaky", "--to", "standard", "--yes")
    assert code == 1 and "a person's approval of its current text" in out
    with pytest.raises(PromotionRefused, match="a person must promote it"):
        ladder.promote(store.get("retry-flaky"), "standard", by="nova")
    assert CliRunner().invoke(memory_app, ["approve", "retry-flaky"]).exit_code == 0
    code, out = promote("retry-flaky", "--to", "standard", "--yes", "--add-to-rules")
    assert code == 0 and "now a standard" in out
    rules = (world["project"] / "NOVA.md").read_text()
    assert "## Standards" in rules and "rerun them once before debugging" in rules

    shown = json.loads(CliRunner().invoke(memory_app, ["show", "retry-flaky", "--json"]).output)
    assert shown["ladder"]["rung"] == "standard" and shown["ladder"]["may_become_rule"] is True
    assert shown["ladder"]["evidence"]["test"]["exit_code"] == 0
    assert shown["scope"] == "user" and shown["source"]["session"] == "ses_1"
    listed = json.loads(CliRunner().invoke(memory_app, ["list", "--json"]).output)
    assert listed[0]["ladder"]["rung"] == "standard" and "evidence" in listed[0]


def test_one_trajectory_never_becomes_a_rule(world: dict[str, Path]) -> None:
    # The user's own note is approved at once (a lesson), and its test passes: still one session.
    assert CliRunner().invoke(memory_app, ["add", "--type", "project", "--name", "fmt",
                                           "Format with ruff format before committing."]).exit_code == 0
    code, out = promote("fmt", "--to", "skill", "--test", PASSES)
    assert code == 0
    code, out = promote("fmt", "--to", "standard", "--yes")
    assert code == 1 and "one trajectory never becomes a rule" in out
    code, out = promote("fmt", "--to", "skill", "--add-to-rules")
    assert code == 1 and "only a standard may become a rule" in out
    assert not (world["project"] / "NOVA.md").exists()


def test_an_edit_voids_the_evidence_bound_to_the_old_text(world: dict[str, Path]) -> None:
    store = model_note(world)
    ProvenanceLog.for_memory_dir(store.home_dir).append(session="ses_2", kind="view", message_id="m9",
                                                        memories=["retry-flaky"])
    assert promote("retry-flaky", "--to", "skill", "--test", PASSES)[0] == 0
    remember(store, Proposal(name="retry-flaky", description="flaky network tests", type="feedback",
                             body="Also rerun tests/dns.", author="user"), config=MemoryConfig())
    standing = Ladder(store.home_dir).standing(store.get("retry-flaky"))
    assert standing.rung == "lesson"
    assert "its evidence no longer holds" in standing.notes[0]
    assert "passed for earlier text" in standing.missing[0]
