"""`nova permissions check`: the decision the rules of the current directory make, and why."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from nova.cli.main import app

runner = CliRunner()


@pytest.fixture()
def project(tmp_path: Path, nova_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    nova_home.mkdir(parents=True)
    (nova_home / "config.json").write_text(json.dumps({"permissions": {
        "deny": ["bash(git push*)", "read_file(.env)"], "allow": ["bash(ls*)", "bash(echo*)"]}}))
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    monkeypatch.chdir(root)
    return root


def check(*args: str) -> dict[str, Any]:
    result = runner.invoke(app, ["permissions", "check", *args, "--json"])
    assert result.exit_code == 0, result.output
    report: dict[str, Any] = json.loads(result.output)
    return report


def test_a_wrapped_push_is_denied_and_each_command_is_explained(project: Path) -> None:
    report = check("bash(timeout 5 git -C . push; ls)")
    assert (report["decision"], report["rule"]) == ("deny", "bash(git push*)")
    push, ls = report["commands"]
    assert push["exact"] == "timeout 5 git -C . push" and push["normalized"] == "git push"
    assert push["decision"] == "denied by `bash(git push*)`"
    assert any("timeout 5" in note for note in push["notes"])
    assert ls["decision"] == "allowed by `bash(ls*)`"


def test_allow_needs_every_command(project: Path) -> None:
    assert check("bash(ls -la && echo ok)")["decision"] == "allow"
    report = check("bash(ls <(touch X))")
    assert report["decision"] == "ask"
    assert [c["decision"] for c in report["commands"]] == ["no rule allows it", "allowed by `bash(ls*)`"]


def test_unresolvable_is_ask_for_the_user_only(project: Path) -> None:
    report = check('bash(eval "$CMD")')
    assert report["decision"] == "ask" and report["user_only"]
    assert "eval" in report["commands"][0]["decision"]


def test_protected_paths_and_path_tools(project: Path, nova_home: Path) -> None:
    report = check(f"bash(echo x > {nova_home}/config.json)")
    assert (report["decision"], report["rule"]) == ("deny", "protected")
    assert str(nova_home / "config.json") in report["reason"]
    assert check("write_file(NOVA.md)")["decision"] == "deny"
    assert check("write_file(src/a.py)")["decision"] == "ask"
    assert check("read_file(.env)")["decision"] == "deny"
    assert check("read_file(src/a.py)")["decision"] == "allow"


def test_plain_output_and_bad_calls(project: Path) -> None:
    result = runner.invoke(app, ["permissions", "check", "bash(sudo git push)"])
    assert result.exit_code == 0, result.output
    assert "decision: deny" in result.output and "runs as: git push" in result.output
    bad = runner.invoke(app, ["permissions", "check", "frob(x)"])
    assert bad.exit_code == 2 and "unknown tool" in bad.output
