"""A first run that leads somewhere: bare `nova` without the terminal UI's extra, the missing-key advice,
`--provider` before any command, `nova config show`'s provider table and `nova config set`, and a resume
that keeps the session's provider. Most run `nova` as a real process, as a user meets it."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nova.cli.main import app

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[1]


def nova(*args: str, home: Path, cwd: Path | None = None, env: dict[str, str] | None = None,
         timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "nova.cli.main", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=cwd, env={**os.environ, "NOVA_HOME": str(home), **(env or {})})


def _in_a_terminal(args: list[str], env: dict[str, str], timeout: float = 60) -> tuple[int, str, str]:
    """Run `python -m nova.cli.main ARGS` with stdin and stdout on a real pseudo-terminal (stderr piped):
    (exit code, what the terminal showed, stderr)."""
    controller, terminal = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "nova.cli.main", *args], stdin=terminal, stdout=terminal,
                            stderr=subprocess.PIPE, env=env, close_fds=True)
    os.close(terminal)
    shown = bytearray()
    try:
        while True:
            ready, _, _ = select.select([controller], [], [], timeout)
            if not ready:
                proc.kill()
                raise AssertionError(f"nova printed nothing for {timeout}s: {shown.decode(errors='replace')}")
            try:
                chunk = os.read(controller, 4096)
            except OSError:  # EIO: the process closed the terminal
                break
            if not chunk:
                break
            shown += chunk
        code = proc.wait(timeout=timeout)
        assert proc.stderr is not None
        return code, shown.decode(errors="replace"), proc.stderr.read().decode(errors="replace")
    finally:
        os.close(controller)
        if proc.stderr is not None:
            proc.stderr.close()


def test_the_tui_install_line_names_the_real_package_and_extra() -> None:
    from nova.cli.commands.first_run import TUI_INSTALL_LINE

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert "tui" in project["optional-dependencies"]
    assert f"pip install '{project['name']}[tui]'" == TUI_INSTALL_LINE


def test_bare_nova_in_a_terminal_without_textual_names_the_install_line(tmp_path: Path, nova_home: Path) -> None:
    # A package named `textual` that fails to import as an absent one does: the interpreter meets exactly
    # what a machine without the extra gives it.
    shim = tmp_path / "shim" / "textual"
    shim.mkdir(parents=True)
    (shim / "__init__.py").write_text('raise ModuleNotFoundError("No module named \'textual\'", name="textual")\n')
    env = {**os.environ, "NOVA_HOME": str(nova_home),
           "PYTHONPATH": os.pathsep.join([str(shim.parent), *sys.path])}
    code, shown, errors = _in_a_terminal([], env)
    assert code == 1, (shown, errors)
    assert "Traceback" not in errors and "Traceback" not in shown
    assert "pip install 'nova-context-engine[tui]'" in errors
    assert "nova demo" in errors
    assert "Commands" in shown  # the help is still there


def test_bare_nova_piped_prints_the_help() -> None:
    result = runner.invoke(app, [])
    assert result.exit_code == 0
    assert "nova --provider demo" in " ".join(result.output.split()) and "Commands" in result.output


def test_missing_key_names_the_variable_the_demo_and_config_set(tmp_path: Path, nova_home: Path) -> None:
    proc = nova("run", "hello", "--cwd", str(tmp_path), home=nova_home)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert "ANTHROPIC_API_KEY" in proc.stderr
    assert "nova --provider demo" in proc.stderr
    assert "nova config set provider" in proc.stderr


def test_provider_before_the_command_applies_to_run(tmp_path: Path, nova_home: Path) -> None:
    (tmp_path / "README.md").write_text("# hello\n")
    proc = nova("--provider", "demo", "run", "what is here?", "--cwd", str(tmp_path), "--json", home=nova_home)
    assert proc.returncode == 0, proc.stderr
    outcome = json.loads(proc.stdout)
    assert outcome["stop_reason"] == "end_turn" and "demo model" in outcome["text"]
    meta = json.loads((nova_home / "sessions" / outcome["session_id"] / "meta.json").read_text())
    assert (meta["provider"], meta["model"]) == ("demo", "nova-demo")


def test_the_commands_own_option_wins_over_the_global_one(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("# hello\n")
    result = runner.invoke(app, ["--provider", "anthropic", "run", "hi", "--provider", "demo",
                                 "--cwd", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    # …and the global one reaches commands that have no option of their own.
    shown = json.loads(runner.invoke(app, ["--provider", "demo", "--model", "m1", "config", "show", "--json"]).output)
    values = {row["key"]: row for row in shown["values"]}
    assert (values["provider"]["value"], values["provider"]["source"]) == ("demo", "flag")
    assert (values["model"]["value"], values["model"]["source"]) == ("m1", "flag")


def test_config_show_says_which_keys_are_set_and_never_shows_one(nova_home: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "sk-Qv7xZUNIQUEKEYTEXT9041"
    without = json.loads(runner.invoke(app, ["config", "show", "--json"]).output)["providers"]
    rows = {row["provider"]: row for row in without}
    assert rows["anthropic"]["current"] and not rows["anthropic"]["key_set"]
    assert rows["anthropic"]["how_to_set"].startswith("export ANTHROPIC_API_KEY=")
    assert rows["openai"]["key_variable"] == "OPENAI_API_KEY" and not rows["openai"]["key_set"]
    assert rows["demo"]["key_variable"] is None and "nova --provider demo" in rows["demo"]["how_to_set"]

    monkeypatch.setenv("OPENAI_API_KEY", secret)
    as_json = runner.invoke(app, ["config", "show", "--json"]).output
    table = runner.invoke(app, ["config", "show"], env={"COLUMNS": "200"}).output
    rows = {row["provider"]: row for row in json.loads(as_json)["providers"]}
    assert rows["openai"]["key_set"] and rows["openai-responses"]["key_set"]
    assert not rows["openai"]["how_to_set"].startswith("export")
    assert "OPENAI_API_KEY set" in table and "ANTHROPIC_API_KEY not set" in table
    assert "export ANTHROPIC_API_KEY=..." in table
    for shown in (as_json, table):
        assert secret not in shown and secret[:5] not in shown and secret[-6:] not in shown


def test_config_show_reports_home_from_the_environment(nova_home: Path) -> None:
    values = {row["key"]: row for row in json.loads(runner.invoke(app, ["config", "show", "--json"]).output)["values"]}
    assert values["home"]["value"] == str(nova_home)
    assert values["home"]["source"] == "env:NOVA_HOME"
    assert values["model"]["source"] == "default for anthropic"


def test_config_set_then_every_command_uses_it(tmp_path: Path, nova_home: Path) -> None:
    set_it = runner.invoke(app, ["config", "set", "provider", "demo"])
    assert set_it.exit_code == 0, set_it.output
    assert json.loads((nova_home / "config.json").read_text()) == {"provider": "demo"}
    assert (nova_home / "config.json").stat().st_mode & 0o777 == 0o600
    assert runner.invoke(app, ["config", "set", "compaction.summary_keep_tokens", "30000"]).exit_code == 0
    (tmp_path / "README.md").write_text("# hello\n")
    result = runner.invoke(app, ["run", "what is here?", "--cwd", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    assert runner.invoke(app, ["config", "unset", "provider"]).exit_code == 0
    assert json.loads((nova_home / "config.json").read_text()) == {"compaction": {"summary_keep_tokens": 30000}}


@pytest.mark.parametrize(("key", "value", "says"), [
    ("api_key", "sk-ant-abc123", "never kept in the config file"),
    ("anthropic_api_key", "sk-ant-abc123", "never kept in the config file"),
    ("api_key_env", "sk-ant-abc123", "not a variable name"),
    ("context_window", "big", "expected an integer"),
    ("provider", "gemini", "one of anthropic"),
    ("nonsense", "1", "unknown key 'nonsense'"),
])
def test_config_set_refuses_keys_and_bad_values_and_writes_nothing(nova_home: Path, key: str, value: str,
                                                                   says: str) -> None:
    result = runner.invoke(app, ["config", "set", key, value])
    assert result.exit_code == 1
    assert says in result.output
    assert value not in result.output or key not in ("api_key", "anthropic_api_key", "api_key_env")
    assert not (nova_home / "config.json").exists()


def test_resume_keeps_the_sessions_provider_and_needs_no_repair(tmp_path: Path, nova_home: Path) -> None:
    (tmp_path / "README.md").write_text("# hello\n")
    first = nova("--provider", "demo", "run", "look around", "--json", home=nova_home, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    # A new process, no --provider: the demo session goes on with the demo model, and the ids its first
    # process gave tool calls do not come back (nothing to rename).
    again = nova("resume", "last", "and again", "--json", home=nova_home, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert "repaired" not in again.stderr and "renamed" not in again.stderr
    assert json.loads(again.stdout)["session_id"] == json.loads(first.stdout)["session_id"]


def test_demo_tool_call_ids_are_not_reused_by_the_next_process(tmp_path: Path, nova_home: Path) -> None:
    (tmp_path / "README.md").write_text("# hello\n")
    runs = [nova("run", prompt, "--provider", "demo", *resume, "--json", home=nova_home, cwd=tmp_path)
            for prompt, resume in (("look", ()), ("again", ("--resume", "last")))]
    assert all(run.returncode == 0 for run in runs), [run.stderr for run in runs]
    assert "renamed" not in runs[1].stderr
    session_id = json.loads(runs[0].stdout)["session_id"]
    records = [json.loads(line) for line in
               (nova_home / "sessions" / session_id / "transcript.jsonl").read_text().splitlines()]
    ids = [part["id"] for record in records if record.get("type") == "message"
           for part in record["message"]["parts"] if part.get("kind") == "tool_use"]
    assert len(ids) == 4 and len(set(ids)) == 4


def test_resume_flags_override_the_record_and_are_remembered(tmp_path: Path, nova_home: Path) -> None:
    (tmp_path / "README.md").write_text("# hello\n")
    first = runner.invoke(app, ["run", "look", "--provider", "demo", "--cwd", str(tmp_path), "--json"])
    session_id = json.loads(first.output)["session_id"]
    meta_path = nova_home / "sessions" / session_id / "meta.json"
    assert json.loads(meta_path.read_text())["base_url"] == ""

    other_provider = runner.invoke(app, ["resume", "last", "hi", "--provider", "anthropic"])
    assert other_provider.exit_code == 1 and "ANTHROPIC_API_KEY" in other_provider.output
    renamed = runner.invoke(app, ["resume", "last", "hi", "--model", "demo-2", "--json"])
    assert renamed.exit_code == 0, renamed.output
    meta = json.loads(meta_path.read_text())
    assert (meta["provider"], meta["model"]) == ("demo", "demo-2")
    # The switch is in the transcript too, so a meta.json rebuilt from it still knows.
    meta_path.unlink()
    rebuilt = runner.invoke(app, ["resume", "last", "once more", "--json"])
    assert rebuilt.exit_code == 0, rebuilt.output
    assert (json.loads(meta_path.read_text())["provider"], json.loads(meta_path.read_text())["model"]) == (
        "demo", "demo-2")


def test_environment_does_not_override_the_sessions_provider(tmp_path: Path, nova_home: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "README.md").write_text("# hello\n")
    runner.invoke(app, ["run", "look", "--provider", "demo", "--cwd", str(tmp_path)])
    monkeypatch.setenv("NOVA_PROVIDER", "anthropic")  # the default for new sessions, not for this one
    result = runner.invoke(app, ["resume", "last", "hi", "--json"])
    assert result.exit_code == 0, result.output


def test_the_demo_ends_with_next_steps_that_work(tmp_path: Path) -> None:
    result = runner.invoke(app, ["demo", "--dir", str(tmp_path / "p")])
    assert result.exit_code == 0, result.output
    steps = result.output.split("Next:\n", 1)[1].splitlines()
    commands = [line.strip().split("  ")[0] for line in steps if line.strip()]
    assert any(command.startswith("export ANTHROPIC_API_KEY=") for command in commands)
    assert "nova --provider demo" in commands
    for command in commands:
        if command.startswith(("nova sessions show", "nova context")):
            followed = runner.invoke(app, command.split()[1:])
            assert followed.exit_code == 0, (command, followed.output)
    resumed = runner.invoke(app, ["resume", "last", "what did you change?"])  # no key, no --provider
    assert resumed.exit_code == 0, resumed.output


def test_the_sessions_list_shows_the_context_the_run_ended_with(tmp_path: Path, nova_home: Path) -> None:
    (tmp_path / "README.md").write_text("# hello\n")
    run = nova("--provider", "demo", "run", "look around", "--json", home=nova_home, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    ended = json.loads(run.stdout)
    listed = nova("sessions", "list", "--json", home=nova_home, cwd=tmp_path)
    (row,) = json.loads(listed.stdout)
    # One figure: the run's footer and the list agree on the context's size.
    assert row["id"] == ended["session_id"] and row["context_tokens"] == ended["context_used"] > 0
