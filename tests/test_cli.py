"""The `nova` command as a user meets it: the offline demo, config errors, missing credentials."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nova.cli.main import app
from nova.version import __version__

runner = CliRunner()


def nova_command() -> list[str]:
    exe = shutil.which("nova", path=str(Path(sys.executable).parent))
    return [exe] if exe else [sys.executable, "-m", "nova.cli.main"]


def test_demo_runs_offline_as_a_real_process_and_fixes_the_bug(tmp_path: Path, nova_home: Path) -> None:
    proc = subprocess.run(
        [*nova_command(), "demo", "--dir", str(tmp_path / "proj"), "--json"],
        capture_output=True, text=True, timeout=120,
        env={**os.environ, "NOVA_HOME": str(nova_home)},
    )
    assert proc.returncode == 0, proc.stderr
    outcome = json.loads(proc.stdout)
    assert outcome["stop_reason"] == "end_turn"
    assert "All tests pass now" in outcome["text"]
    # The fix really happened on disk, through the real edit_file tool.
    assert "sum(values) / len(values)" in (tmp_path / "proj" / "calc" / "stats.py").read_text()
    assert outcome["context_used"] > 0 and outcome["context_limit"] > 0


def test_demo_prints_a_readable_timeline(tmp_path: Path) -> None:
    result = runner.invoke(app, ["demo", "--dir", str(tmp_path / "p")])
    assert result.exit_code == 0, result.output
    for expected in ("glob", "edit_file", "All tests pass now", "context", "cost", "cache hit rate"):
        assert expected in result.output


def test_version() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0 and __version__ in result.output


def test_config_show_reports_sources(nova_home: Path) -> None:
    nova_home.mkdir(parents=True)
    (nova_home / "config.json").write_text(json.dumps({"compaction": {"snip_max_chars": 3000}}))
    result = runner.invoke(app, ["config", "show", "--json"])
    assert result.exit_code == 0, result.output
    values = {row["key"]: row for row in json.loads(result.output)["values"]}
    assert values["compaction.snip_max_chars"]["value"] == 3000
    assert values["compaction.snip_max_chars"]["source"].endswith("config.json")
    assert values["compaction.summary_keep_tokens"]["source"] == "default"


def test_config_show_at_80_columns_prints_every_key_whole(nova_home: Path) -> None:
    """A pipe is 80 columns: the key column cut "compaction.summary_reserve_tokens" to "…_toke…", and a key
    is what `nova config set` takes."""
    result = runner.invoke(app, ["config", "show"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    keys = [line.split("│")[1].strip() for line in result.output.splitlines() if line.startswith("│")]
    data = runner.invoke(app, ["config", "show", "--json"])
    expected = [row["key"] for row in json.loads(data.output)["values"]]
    assert [key for key in expected if key not in keys] == [], result.output
    assert all(len(line) <= 80 for line in result.output.splitlines() if line.startswith("│"))


def test_bad_config_is_one_clear_line_without_traceback(nova_home: Path) -> None:
    nova_home.mkdir(parents=True)
    (nova_home / "config.json").write_text(json.dumps({"compaction": {"snip_max_chars": "many"}}))
    proc = subprocess.run([*nova_command(), "config", "show"], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "NOVA_HOME": str(nova_home)})
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert "snip_max_chars" in proc.stderr and '"many"' in proc.stderr and "integer" in proc.stderr


def test_dead_keys_warn_on_stderr(nova_home: Path) -> None:
    nova_home.mkdir(parents=True)
    (nova_home / "config.json").write_text(json.dumps({"compaction": {"token_ratio": 4}}))
    result = runner.invoke(app, ["config", "show"])
    assert result.exit_code == 0
    assert "token_ratio" in result.output and "no effect" in result.output


def test_run_without_credentials_names_the_variable(tmp_path: Path) -> None:
    result = runner.invoke(app, ["run", "hello", "--cwd", str(tmp_path)])
    assert result.exit_code == 1
    assert "ANTHROPIC_API_KEY" in result.output
    assert "--base-url" in result.output


def test_run_with_the_demo_provider_explores(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("# hello\n")
    result = runner.invoke(app, ["run", "what is here?", "--provider", "demo", "--cwd", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    outcome = json.loads(result.output)
    assert outcome["stop_reason"] == "end_turn" and "demo model" in outcome["text"]


def test_a_run_is_recorded_and_can_be_resumed(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("# hello\n")
    first = runner.invoke(app, ["run", "look around", "--provider", "demo", "--cwd", str(tmp_path), "--json"])
    assert first.exit_code == 0, first.output
    session_id = json.loads(first.output)["session_id"]
    listed = json.loads(runner.invoke(app, ["sessions", "list", "--json"]).output)
    assert [s["id"] for s in listed] == [session_id]
    messages_before = listed[0]["messages"]

    second = runner.invoke(app, ["resume", "last", "and again", "--provider", "demo", "--json"])
    assert second.exit_code == 0, second.output
    assert json.loads(second.stdout)["session_id"] == session_id  # the folder note is on stderr
    listed = json.loads(runner.invoke(app, ["sessions", "list", "--json"]).output)
    assert listed[0]["messages"] > messages_before


def test_resume_of_an_unknown_session_is_one_clear_error() -> None:
    result = runner.invoke(app, ["resume", "no-such-session", "hi", "--provider", "demo"])
    assert result.exit_code != 0
    assert "no-such-session" in result.output and "Traceback" not in result.output


def test_project_rules_reach_the_model_every_turn(tmp_path: Path, nova_home: Path) -> None:
    from nova.agent.builder import AgentOptions, build_agent
    from nova.settings import load_settings
    from nova.testing import ScriptedProvider, reply

    (tmp_path / "AGENTS.md").write_text("Never run git push.\n@docs/style.md\n")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "style.md").write_text("Use tabs, not spaces.\n")
    provider = ScriptedProvider([reply("ok"), reply("ok again")])
    # provider "demo" in settings: no extraction call takes a scripted reply meant for the turn
    agent = build_agent(load_settings(home=nova_home, overrides={"provider": "demo"}), provider,
                        AgentOptions(cwd=tmp_path))
    agent.run_turn("hello")
    agent.run_turn("again")
    for request in provider.requests:
        assert request.system.startswith("You are Nova")
        assert "Never run git push." in request.system and "Use tabs, not spaces." in request.system


def test_memory_and_rules_are_mounted() -> None:
    assert runner.invoke(app, ["memory", "list", "--json"]).exit_code == 0
    assert json.loads(runner.invoke(app, ["rules", "--json"]).output).keys() == {"files", "skipped", "searched"}


def test_replay_is_mounted_and_replays_a_real_trajectory() -> None:
    from nova.testing import shared_data_dir

    traj = shared_data_dir() / "trajectories" / "swe-agent-demos" / "marshmallow-1867.traj"
    if not traj.is_file():
        pytest.skip(f"shared data absent: {traj} (set NOVA_SHARED_DATA)")
    result = runner.invoke(app, ["replay", str(traj), "--window", "32000", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["invariant_violations"] == 0 and report["peak_context_tokens"] <= 32000


def test_remember_then_recall_reaches_the_model(tmp_path: Path, nova_home: Path) -> None:
    from nova.agent.builder import AgentOptions, build_agent
    from nova.settings import load_settings
    from nova.testing import ScriptedProvider, reply

    remembered = runner.invoke(app, ["run", "/remember Always indent Python with tabs in this project",
                                     "--provider", "demo", "--cwd", str(tmp_path), "--json"])
    assert remembered.exit_code == 0, remembered.output
    listed = json.loads(runner.invoke(app, ["memory", "list", "--json"]).output)
    assert any(m["status"] == "active" for m in listed)

    # A generous grace: this test is about what reaches the model, not about timing under load.
    (nova_home / "config.json").write_text(json.dumps({"memory": {"recall_grace_s": 10}}))
    provider = ScriptedProvider([reply("noted")])
    agent = build_agent(load_settings(home=nova_home, overrides={"provider": "demo"}), provider,
                        AgentOptions(cwd=tmp_path))
    agent.run_turn("how should I indent Python here?")
    agent.close()
    sent = provider.requests[0].messages
    recalled = [m for m in sent if m.origin == "memory"]
    assert len(recalled) == 1 and "tabs" in recalled[0].text
    assert sent[0].text == "how should I indent Python here?"  # the user's words stay their own message


def test_unknown_slash_command_is_a_clear_error(tmp_path: Path) -> None:
    result = runner.invoke(app, ["run", "/frobnicate", "--provider", "demo", "--cwd", str(tmp_path)])
    assert result.exit_code == 2 and "/remember" in result.output


def test_compact_on_request_folds_history_and_emits_events(tmp_path: Path, nova_home: Path) -> None:
    from nova import events as ev
    from nova.agent.builder import AgentOptions, build_agent
    from nova.settings import load_settings
    from nova.testing import ScriptedProvider, call, reply

    (tmp_path / "big.txt").write_text("line of text\n" * 3000)
    nova_home.mkdir(parents=True, exist_ok=True)
    (nova_home / "config.json").write_text(json.dumps({"compaction": {"summarizer": "extractive"}}))
    script = []
    for i in range(6):
        script += [reply(f"step {i}", [call("read_file", path="big.txt", offset=i * 400 + 1, limit=400)]),
                   reply(f"done {i}")]
    provider = ScriptedProvider(script)
    seen: list[ev.Event] = []
    bus = ev.EventBus()
    bus.subscribe(seen.append)
    agent = build_agent(load_settings(home=nova_home, overrides={"provider": "demo"}), provider,
                        AgentOptions(cwd=tmp_path, yes=True), bus=bus)
    for i in range(6):
        agent.run_turn(f"read part {i} of big.txt")
    before = agent.context_tokens()
    assert agent.compact() is True
    assert agent.context_tokens() < before
    assert any(isinstance(e, ev.CompactionStart) and e.reason == "manual" for e in seen)
    # The opening request stays where it was; the summary of what followed comes next.
    assert agent.history[0].text == "read part 0 of big.txt" and agent.history[1].has("summary")


def test_session_start_consolidates_memory_when_the_gates_allow(tmp_path: Path, nova_home: Path) -> None:
    from nova.agent.builder import AgentOptions, build_agent
    from nova.sessions.session import Session
    from nova.settings import load_settings
    from nova.testing import ScriptedProvider

    assert runner.invoke(app, ["memory", "add", "--type", "user", "--name", "editor", "I use vim"]).exit_code == 0
    settings = load_settings(home=nova_home, overrides={"provider": "demo"})
    state = nova_home / "memory" / ".consolidate.json"

    def last_run() -> object:
        return json.loads(state.read_text()).get("last_run") if state.exists() else None

    def start_session() -> None:
        Session.create(nova_home, title="s", cwd=tmp_path).close()
        build_agent(settings, ScriptedProvider([]), AgentOptions(cwd=tmp_path)).close()  # joins the thread

    for _ in range(4):
        start_session()
        assert last_run() is None, "fewer than 5 sessions: the gate holds"
        state.unlink(missing_ok=True)  # forget the scan time, or the 10-minute throttle answers instead
    start_session()
    assert last_run() is not None, "the fifth session starts a consolidation in the background"


def test_task_state_commands_in_headless_runs(tmp_path: Path) -> None:
    first = runner.invoke(app, ["run", "/constraint never merge without approval", "--provider", "demo",
                                "--cwd", str(tmp_path), "--json"])
    assert first.exit_code == 0, first.output
    assert "never merge without approval" in json.loads(first.output)["text"]
    shown = runner.invoke(app, ["context", "last", "--json"])
    assert shown.exit_code == 0, shown.output
    assert any(s["class"] == "pinned" for s in json.loads(shown.output)["segments"])
    bad = runner.invoke(app, ["run", "/goal", "--provider", "demo", "--cwd", str(tmp_path), "--resume", "last"])
    assert bad.exit_code == 1 and "needs a text" in bad.output


def test_context_of_a_session_uses_that_sessions_model_and_matches_its_footer(tmp_path: Path) -> None:
    demo_run = runner.invoke(app, ["demo", "--dir", str(tmp_path / "p"), "--json"])
    assert demo_run.exit_code == 0, demo_run.output
    outcome = json.loads(demo_run.output)
    shown = json.loads(runner.invoke(app, ["context", "last", "--json"]).output)
    assert shown["limit"] == outcome["context_limit"] == 28_160  # nova-demo: 32k window, not the default model's
    assert shown["used"] == outcome["context_used"]


def test_compact_and_context_as_commands_of_a_headless_session(tmp_path: Path) -> None:
    assert runner.invoke(app, ["demo", "--dir", str(tmp_path / "p")]).exit_code == 0
    shown = runner.invoke(app, ["run", "/context", "--provider", "demo", "--resume", "last", "--json"])
    assert shown.exit_code == 0, shown.output
    assert "always-on" in json.loads(shown.stdout)["text"]
    compacted = runner.invoke(app, ["run", "/compact keep the log findings", "--provider", "demo",
                                    "--resume", "last", "--json"])
    assert compacted.exit_code == 0, compacted.output
    text = json.loads(compacted.stdout)["text"]
    assert text.startswith("compacted:") or text == "nothing to compact"


def test_sessions_show_and_export_take_last(tmp_path: Path) -> None:
    assert runner.invoke(app, ["run", "look", "--provider", "demo", "--cwd", str(tmp_path)]).exit_code == 0
    shown = runner.invoke(app, ["sessions", "show", "last"])
    assert shown.exit_code == 0 and "look" in shown.output
    exported = runner.invoke(app, ["sessions", "export", "last", "--format", "md"])
    assert exported.exit_code == 0 and "look" in exported.output


def test_error_text_is_printed_verbatim_not_as_markup(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import sys as _sys

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setitem(_sys.modules, "openai", None)  # as if the extra were not installed
    result = runner.invoke(app, ["run", "hi", "--provider", "openai", "--cwd", str(tmp_path)])
    assert result.exit_code == 1
    assert "pip install 'nova-context-engine[openai]'" in result.output


def test_serve_without_its_extra_names_the_install_line(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import importlib.util as _util

    real = _util.find_spec
    monkeypatch.setattr(_util, "find_spec", lambda name, *a: None if name == "uvicorn" else real(name, *a))
    result = runner.invoke(app, ["serve"])
    assert result.exit_code == 1 and "pip install 'nova-context-engine[server]'" in result.output
