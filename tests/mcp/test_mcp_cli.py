"""`nova mcp list`, the `mcpServers` config shape (Nova's config and `.mcp.json`) and Nova without the SDK."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import nova
from nova.cli.main import app
from nova.errors import ConfigError
from nova.mcp.config import load_servers

SERVER = Path(__file__).with_name("fixture_server.py")
runner = CliRunner()


@pytest.fixture()
def project(tmp_path: Path, nova_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    nova_home.mkdir(parents=True)
    (nova_home / "config.json").write_text(json.dumps({"mcpServers": {
        "fx": {"command": sys.executable, "args": [str(SERVER), "stdio"]}}}))
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    (root / ".mcp.json").write_text(json.dumps({"mcpServers": {
        "gone": {"command": str(tmp_path / "no-such-server")},
        "fx": {"command": "would-be-overridden"}}}))
    monkeypatch.chdir(root)
    return root


def test_list_json_shows_each_server_its_state_and_its_tools(project: Path) -> None:
    pytest.importorskip("mcp", reason="the `mcp` extra is not installed")
    result = runner.invoke(app, ["mcp", "list", "--json"])
    assert result.exit_code == 0, result.output
    servers = {s["name"]: s for s in json.loads(result.output)["servers"]}
    assert servers["fx"]["state"] == "ready" and servers["fx"]["transport"] == "stdio"
    assert "mcp__fx__echo" in servers["fx"]["tools"]
    # The project's own server waits for the user's trust before it is ever started.
    assert servers["gone"]["state"] == "untrusted" and "nova trust" in servers["gone"]["error"]
    assert runner.invoke(app, ["trust", "--yes"]).exit_code == 0
    result = runner.invoke(app, ["mcp", "list", "--json"])
    servers = {s["name"]: s for s in json.loads(result.output)["servers"]}
    assert servers["gone"]["state"] == "failed" and servers["gone"]["tools"] == [] and servers["gone"]["error"]


def test_list_table_names_the_tools(project: Path) -> None:
    pytest.importorskip("mcp", reason="the `mcp` extra is not installed")
    assert runner.invoke(app, ["trust", "--yes"]).exit_code == 0
    result = runner.invoke(app, ["mcp", "list"])
    assert result.exit_code == 0, result.output
    assert "fx (stdio): ready, 5 tool(s)" in result.output and "  mcp__fx__crash" in result.output
    assert "gone (stdio): failed, 0 tool(s)" in result.output


def test_config_wins_over_mcp_json_and_bad_entries_name_the_file(tmp_path: Path) -> None:
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"a": {"command": "x"}, "b": {"url": "http://h/mcp"}}}))
    servers = load_servers({"a": {"command": "y", "args": ["1"]}}, config_source="cfg", project_root=tmp_path)
    assert [(s.name, s.command or s.url, s.transport) for s in servers] == [("a", "y", "stdio"),
                                                                          ("b", "http://h/mcp", "http")]
    with pytest.raises(ConfigError, match=r"cfg: mcpServers.bad: give exactly one of"):
        load_servers({"bad": {"command": "x", "url": "http://h"}}, config_source="cfg", project_root=None)
    with pytest.raises(ConfigError, match="may not contain '__'"):
        load_servers({"a__b": {"command": "x"}}, config_source="cfg", project_root=None)


def test_without_the_sdk_nova_names_the_extra_to_install(project: Path, nova_home: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(nova.__file__).resolve().parent.parent)}
    # A fresh interpreter in which `import mcp` fails, as on an install without the extra.
    code = ("import sys; sys.modules['mcp'] = None\n"
            "from nova.cli.main import main\n"
            "sys.argv = ['nova', 'mcp', 'list']\n"
            "main()\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=project,
                          env=env)
    assert done.returncode != 0
    assert "pip install 'nova-context-engine[mcp]'" in done.stderr
    # A session goes on without MCP tools (and says why) instead of failing.
    code = ("import sys, logging; sys.modules['mcp'] = None; logging.basicConfig()\n"
            "from pathlib import Path\n"
            "from nova.mcp.setup import catalog_for\n"
            "from nova.settings import load_settings\n"
            "from nova.tokens import counter_for_model\n"
            "import os\n"
            "s = load_settings(env=dict(os.environ))\n"
            "print(catalog_for(s, Path.cwd(), window=200000, counter=counter_for_model('gpt-4o')))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=project,
                          env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "None" and "nova-context-engine[mcp]" in done.stderr
