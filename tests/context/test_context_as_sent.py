"""`nova context ID` is what the session's model saw: the MCP tools it was sent, and, for a session resumed
on another provider (an imported one included), the window of the model it really used. Real sessions on
disk, a real MCP server (tests/mcp/fixture_server.py) as a subprocess, the real agent assembly; the model
is a `nova.testing` fake that keeps the requests it was sent."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nova.agent.builder import AgentOptions, build_agent, record_fixed_prompt
from nova.cli.commands.context import compile_session, measure_session
from nova.cli.commands.run import run_task
from nova.messages import Message
from nova.model import Usage
from nova.providers.pricing import context_window_for
from nova.sessions.export import import_session, iter_jsonl
from nova.sessions.sent import SENT_NAME, read_sent
from nova.sessions.session import Session
from nova.settings import load_settings
from nova.testing import FunctionProvider, reply

from .test_cli_context import _app

SERVER = Path(__file__).parents[1] / "mcp" / "fixture_server.py"
runner = CliRunner()


def _session_with_mcp(nova_home: Path, project: Path) -> tuple[str, list[str]]:
    """A session whose agent had the fixture MCP server's tools; the tool names of its last request."""
    pytest.importorskip("mcp", reason="the `mcp` extra is not installed")
    nova_home.mkdir(parents=True, exist_ok=True)
    (nova_home / "config.json").write_text(json.dumps({
        "sandbox": "off", "mcp": {"on_demand": "never"},
        "mcpServers": {"fx": {"command": sys.executable, "args": [str(SERVER), "stdio"]}}}))
    settings = load_settings(home=nova_home, overrides={"provider": "anthropic", "model": "claude-sonnet-4-5"})
    model = FunctionProvider(lambda request: reply("hello", usage=Usage(input_tokens=3_000, output_tokens=5)))
    with Session.create(nova_home, cwd=project, provider="anthropic", model=settings.model) as session:
        agent = build_agent(settings, model, AgentOptions(cwd=project, yes=True), session=session,
                            session_id=session.id, session_dir=session.dir)
        try:
            record_fixed_prompt(session, agent)
            agent.run_turn("hi")
        finally:
            agent.close()
        turn = next(r for r in model.requests if "purpose" not in r.metadata)  # not memory extraction
        return session.id, [t.name for t in turn.tools]


def test_the_mcp_tools_the_model_was_sent_are_in_the_context(nova_home: Path, tmp_path: Path) -> None:
    sid, sent = _session_with_mcp(nova_home, tmp_path)
    mcp = [name for name in sent if name.startswith("mcp")]
    assert mcp, f"the fixture server's tools were not sent: {sent}"
    measured = measure_session(sid, home=nova_home)
    assert measured.basis == "last request"
    assert [t.name for t in measured.compiled.view.tools] == sent
    shown = json.loads(runner.invoke(_app(), ["context", sid, "--json"]).output)
    tools = next(s for s in shown["segments"] if s["id"] == "tools")
    assert all(name in tools["source"] for name in mcp) and "mcp__fx__echo" in mcp
    assert shown["measured"]["tools"] == len(sent)
    # Without the file (a session recorded before it existed) the catalog recorded at the start still
    # has the MCP tools: today's settings would not (no server is started to describe a session).
    (nova_home / "sessions" / sid / SENT_NAME).unlink()
    fallback = measure_session(sid, home=nova_home)
    assert fallback.basis == "recorded tools" and [t.name for t in fallback.compiled.view.tools] == sent


def _imported(nova_home: Path, tmp_path: Path) -> str:
    """A session another agent recorded on claude-sonnet-4-5 (200k window), imported into Nova."""
    with Session.create(nova_home, title="elsewhere", cwd=tmp_path, provider="anthropic",
                        model="claude-sonnet-4-5") as original:
        original.record_message(Message.user("what is in notes.txt?"))
        original.record_message(Message.assistant("It holds the number 42."))
        original.flush()
    export = tmp_path / "export.jsonl"
    with Session.open(nova_home, original.id, readonly=True) as reading:
        export.write_bytes(b"".join(iter_jsonl(reading)))
    sid, _ = import_session(export, nova_home)
    return sid


def test_an_imported_session_resumed_on_another_model_is_measured_against_that_models_window(
        nova_home: Path, tmp_path: Path) -> None:
    sid = _imported(nova_home, tmp_path)
    meta = Session.open(nova_home, sid, readonly=True)
    assert meta.meta.provider.startswith("import:") and meta.meta.model == "claude-sonnet-4-5"
    meta.close()
    before = measure_session(sid, home=nova_home)
    assert before.compiled.manifest.window == context_window_for("claude-sonnet-4-5") == 200_000
    settings = load_settings(home=nova_home, overrides={"provider": "openai", "model": "gpt-4o"})
    model = FunctionProvider(lambda request: reply("Still 42.", usage=Usage(input_tokens=2_000, output_tokens=4)))
    outcome = run_task(settings, model, AgentOptions(cwd=tmp_path, yes=True), "and now?", quiet=True, resume_id=sid)
    assert outcome["session_id"] == sid and outcome["stop_reason"] == "end_turn"
    # The imported session keeps naming the agent it came from; the model it ran on is gpt-4o.
    assert Session.open(nova_home, sid, readonly=True).meta.provider.startswith("import:")
    sent = read_sent(nova_home / "sessions" / sid)
    assert sent is not None and (sent.provider, sent.model) == ("openai", "gpt-4o")
    after = measure_session(sid, home=nova_home)
    assert after.compiled.manifest.window == context_window_for("gpt-4o") == 128_000
    assert after.compiled.manifest.limit == sent.threshold == outcome["context_limit"]
    shown = json.loads(runner.invoke(_app(), ["context", sid, "--json"]).output)
    assert shown["window"] == 128_000 and shown["measured"]["model"] == "gpt-4o"
    text = runner.invoke(_app(), ["context", sid]).output
    assert "measured against the last request sent: openai/gpt-4o, window 128,000" in text
    # compile_session (the TUI's `/context` path) measures the same way.
    assert compile_session(sid, home=nova_home)[1].manifest.window == 128_000


def test_a_damaged_last_request_file_is_named_and_the_figure_recomputed(nova_home: Path, tmp_path: Path) -> None:
    sid = _imported(nova_home, tmp_path)
    (nova_home / "sessions" / sid / SENT_NAME).write_text("{not json")
    result = runner.invoke(_app(), ["context", sid, "--json"])
    assert result.exit_code == 0, result.output
    assert SENT_NAME in result.stderr and "corrupt" in result.stderr
    assert json.loads(result.stdout)["measured"]["basis"] in ("recorded tools", "recomputed")


def test_the_last_request_file_round_trips_and_a_newer_one_is_refused(tmp_path: Path) -> None:
    from nova.errors import StorageError
    from nova.model import ToolSpec
    from nova.sessions.sent import SentRequest, write_sent

    sent = SentRequest(provider="compatible", model="llama3.1", window=32_768, threshold=20_000, system="be brief",
                       tools=(ToolSpec("mcp__fx__echo", "Echo", {"type": "object"}),), sent_tokens=1_234,
                       reported_input_tokens=1_300, at=1.5)
    write_sent(tmp_path, sent)
    assert read_sent(tmp_path) == sent
    assert read_sent(tmp_path / "nowhere") is None
    (tmp_path / SENT_NAME).write_text(json.dumps({**sent.to_dict(), "v": 99}))
    with pytest.raises(StorageError, match="newer Nova"):
        read_sent(tmp_path)
