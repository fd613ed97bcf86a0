"""`nova config show` validates exactly as `nova run` does: one check (`check_config`) for both, so a
config `run` refuses is never shown as fine. Each bad config below was printed by `config show` without
complaint before, then refused by `run`; now both refuse it with the same message naming the key, and
`run` refuses before it records a session."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from nova.cli.main import app

runner = CliRunner()

DEMO = {"provider": "demo", "model": "nova-demo"}
BAD_CONFIGS: dict[str, tuple[dict[str, Any], str]] = {
    "memory-negative": ({**DEMO, "memory": {"recall_limit": -1}}, "'recall_limit'"),
    "memory-status": ({**DEMO, "memory": {"model_status": "always"}}, "'model_status'"),
    "memory-bool": ({**DEMO, "memory": {"enabled": "yes"}}, "'enabled'"),
    "memory-number": ({**DEMO, "memory": {"recall_timeout_s": "soon"}}, "'recall_timeout_s'"),
    "instructions-depth": ({**DEMO, "instructions": {"max_import_depth": "deep"}}, "'max_import_depth'"),
    "instructions-files": ({**DEMO, "instructions": {"project_files": "NOVA.md"}}, "'project_files'"),
    "instructions-negative": ({**DEMO, "instructions": {"token_budget": -5}}, "'token_budget'"),
    "server-body": ({**DEMO, "server": {"max_body_bytes": 0}}, "'max_body_bytes'"),
    "server-origins": ({**DEMO, "server": {"cors_origins": "*"}}, "'cors_origins'"),
    "policy-file": ({**DEMO, "policy": {"file": 5}}, "'file'"),
    "compatible-without-url": ({"provider": "compatible"}, "base_url"),
    "sandbox-not-bool": ({**DEMO, "sandbox": "yes"}, "'sandbox'"),
    # Permission rules were parsed only when `run` built its policy; `config show` printed them as fine.
    "deny-unclosed": ({**DEMO, "permissions": {"deny": ["bash("]}}, "'bash('"),
    "allow-empty-rule": ({**DEMO, "permissions": {"allow": [""]}}, "permissions.allow"),
    "ask-empty-pattern": ({**DEMO, "permissions": {"ask": ["bash()"]}}, "'bash()'"),
    "deny-two-words": ({**DEMO, "permissions": {"deny": ["bash rm -rf"]}}, "'bash rm -rf'"),
    # The config's MCP servers and the client's knobs were read only when a session started its servers.
    "mcp-server-without-command": ({**DEMO, "mcpServers": {"x": {"command": ""}}}, "mcpServers.x"),
    "mcp-timeout": ({**DEMO, "mcp": {"tool_timeout_s": -1}}, "mcp.tool_timeout_s"),
    # The store URL was read only when a session opened the store.
    "store-not-postgres": ({**DEMO, "store": {"url": "mysql://db/nova"}}, "[store] url"),
    "base-url-without-scheme": ({**DEMO, "base_url": "localhost:11434/v1"}, "'base_url'"),
}


def _error_line(output: str) -> str:
    lines = [line for line in output.splitlines() if line.startswith("nova: error:")]
    assert len(lines) == 1, output
    return lines[0]


@pytest.mark.parametrize("case", sorted(BAD_CONFIGS))
def test_config_show_refuses_what_run_refuses_with_the_same_message(
    case: str, nova_home: Path, tmp_path: Path
) -> None:
    config, key = BAD_CONFIGS[case]
    nova_home.mkdir(parents=True, exist_ok=True)
    (nova_home / "config.json").write_text(json.dumps(config))
    shown = runner.invoke(app, ["config", "show", "--json"])
    ran = runner.invoke(app, ["run", "hello", "--cwd", str(tmp_path), "--yes"])
    assert shown.exit_code == 1, shown.output
    assert ran.exit_code == 1, ran.output
    assert _error_line(shown.output) == _error_line(ran.output)
    assert key in _error_line(shown.output)
    if case != "compatible-without-url":
        assert str(nova_home / "config.json") in _error_line(shown.output)
    sessions = nova_home / "sessions"
    assert not sessions.exists() or not any(sessions.iterdir())


def test_a_good_config_passes_both(nova_home: Path, tmp_path: Path) -> None:
    nova_home.mkdir(parents=True, exist_ok=True)
    (nova_home / "config.json").write_text(json.dumps({
        **DEMO, "memory": {"recall_limit": 3}, "instructions": {"project_files": ["NOVA.md"]},
        "server": {"max_body_bytes": 1000}, "policy": {"file": str(tmp_path / "policy.md")},
        "sandbox_network": True,
    }))
    shown = runner.invoke(app, ["config", "show", "--json"])
    assert shown.exit_code == 0, shown.output
    values = {row["key"]: row["value"] for row in json.loads(shown.output)["values"]}
    assert values["sandbox"] == "auto" and values["sandbox_network"] is True
    ran = runner.invoke(app, ["run", "what is here?", "--cwd", str(tmp_path), "--json"])
    assert ran.exit_code == 0, ran.output
