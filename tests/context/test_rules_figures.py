"""`nova rules` and `nova context` give one figure for each instruction file (its manifest segment)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nova.agent.builder import AgentOptions, build_agent
from nova.cli.main import app
from nova.model import Usage
from nova.sessions.session import Session
from nova.settings import load_settings
from nova.testing import ScriptedProvider, reply

runner = CliRunner()


def test_rules_figures_are_the_context_manifest_figures(tmp_path: Path, nova_home: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    work = tmp_path / "work"
    work.mkdir()
    nova_home.mkdir(parents=True, exist_ok=True)
    (nova_home / "NOVA.md").write_text("Answer in English. Prefer small commits.\n")
    (work / "NOVA.md").write_text("Use 4 spaces for indentation.\n@./testing.md\n")
    (work / "testing.md").write_text("Run `pytest -q` before every commit; never skip a failing test.\n" * 20)
    settings = load_settings(home=nova_home)
    # A reply that reports no input figure: the manifest is the estimate, not calibrated to a real count.
    provider = ScriptedProvider([reply("noted", usage=Usage(input_tokens=0, output_tokens=2))])
    with Session.create(nova_home, cwd=work, provider=settings.provider, model=settings.model) as session:
        agent = build_agent(settings, provider, AgentOptions(cwd=work, yes=True), session=session,
                            session_id=session.id, session_dir=session.dir)
        agent.run_turn("hello")
        agent.close()
        sid = session.id
    context = runner.invoke(app, ["context", sid, "--json"])
    assert context.exit_code == 0, context.output
    manifest = {s["id"].removeprefix("rules:"): s["tokens"] for s in json.loads(context.output)["segments"]
                if s["id"].startswith("rules:")}
    monkeypatch.chdir(work)
    rules = runner.invoke(app, ["rules", "--json"])
    assert rules.exit_code == 0, rules.output
    figures = {f["path"]: f["tokens"] for f in json.loads(rules.output)["files"]}
    assert len(figures) == 3 and figures == manifest
    human = runner.invoke(app, ["rules"])
    assert f"total {sum(figures.values()):,} tokens in the context" in human.output
