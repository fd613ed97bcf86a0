"""`nova context SESSION --json` and `--why` on a real recorded session (CTX-2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from nova.agent.builder import AgentOptions, build_agent
from nova.cli.commands.context import compile_session, context_command
from nova.errors import ConfigError
from nova.sessions.session import Session
from nova.settings import load_settings
from nova.testing import ScriptedProvider, call, reply
from nova.tools.policy.sandbox import require_bubblewrap

runner = CliRunner()


def _app() -> typer.Typer:
    app = typer.Typer()
    app.command("context")(context_command)
    app.callback()(lambda: None)
    return app


def _recorded_session(nova_home: Path, work: Path) -> str:
    (work / "NOVA.md").write_text("Use 4 spaces for indentation.\n")
    (work / "a.py").write_text("print('hi')\n")
    settings = load_settings(home=nova_home, overrides={"provider": "demo"})
    provider = ScriptedProvider([reply("reading", [call("read_file", path="a.py")]), reply("it prints hi")])
    with Session.create(nova_home, cwd=work, provider="demo", model=settings.model) as session:
        agent = build_agent(settings, provider, AgentOptions(cwd=work, yes=True), session=session,
                            session_id=session.id, session_dir=session.dir)
        agent.run_turn("what does a.py do? Never edit files without asking.")
        agent.close()
        return session.id


def test_context_json_has_the_documented_shape_and_sums_to_used(tmp_path: Path, nova_home: Path) -> None:
    sid = _recorded_session(nova_home, tmp_path)
    result = runner.invoke(_app(), ["context", sid, "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert set(data) == {"used", "limit", "window", "percent", "segments", "dropped", "picture", "receipts",
                         "measured"}
    assert data["measured"]["basis"] == "last request" and data["measured"]["window"] == data["window"]
    assert data["receipts"] == []  # no compaction in this session
    assert data["used"] > 0 and data["limit"] > 0
    assert all(set(s) == {"id", "class", "kind", "source", "tokens", "reason"} for s in data["segments"])
    assert {s["class"] for s in data["segments"]} <= {"always-on", "index", "on-demand", "pinned"}
    assert sum(s["tokens"] for s in data["segments"]) == data["used"]
    # The picture of the window: one part per kind, then what is free, summing to the window.
    parts = {p["kind"]: p["tokens"] for p in data["picture"]["parts"]}
    assert list(parts) == ["system", "tools", "rules", "memory", "history", "summary", "observations", "free"]
    assert sum(parts.values()) == data["picture"]["figure"] == data["window"]
    assert parts["free"] == data["window"] - data["used"]
    by_kind = {s["id"]: s["kind"] for s in data["segments"]}
    assert by_kind["system.contract"] == "system" and by_kind["tools"] == "tools"
    assert all(kind == "rules" for sid, kind in by_kind.items() if sid.startswith("rules:"))
    assert by_kind.get("environment") == "observations"
    assert parts["rules"] == sum(s["tokens"] for s in data["segments"] if s["id"].startswith("rules:")) > 0
    ids = [s["id"] for s in data["segments"]]
    assert ids[0] == "system.contract" and "tools" in ids and any(i.startswith("rules:") for i in ids)
    # The user's imperative rule was queued for confirmation, never stored as a constraint on its own.
    state = json.loads(json.dumps(Session.open(nova_home, sid, readonly=True).get_task_state()))
    assert state["constraints"] == [] and [c["text"] for c in state["pending"]] == [
        "Never edit files without asking"]


def test_context_why_says_which_segment_holds_a_text(tmp_path: Path, nova_home: Path) -> None:
    sid = _recorded_session(nova_home, tmp_path)
    result = runner.invoke(_app(), ["context", sid, "--why", "4 spaces"])
    assert result.exit_code == 0, result.output
    assert "rules:" in result.output and "NOVA.md" in result.output
    table = runner.invoke(_app(), ["context", "last"])
    assert table.exit_code == 0 and "always-on" in table.output and "context:" in table.output


def test_context_of_no_session_is_one_clear_error(nova_home: Path) -> None:
    result = runner.invoke(_app(), ["context"])
    assert result.exit_code == 1


@pytest.mark.parametrize("sandbox", [False, True], ids=["plain", "sandbox"])
def test_context_describes_the_tools_the_model_was_sent(tmp_path: Path, nova_home: Path, sandbox: bool) -> None:
    if sandbox:
        try:
            require_bubblewrap()
        except ConfigError as exc:
            pytest.skip(str(exc))
    nova_home.mkdir(parents=True, exist_ok=True)
    (nova_home / "config.json").write_text(json.dumps({"sandbox": sandbox}))
    settings = load_settings(home=nova_home, overrides={"provider": "demo"})
    with Session.create(nova_home, cwd=tmp_path, provider="demo", model=settings.model) as session:
        agent = build_agent(settings, ScriptedProvider([reply("hello")]), AgentOptions(cwd=tmp_path, yes=True),
                            session=session, session_id=session.id, session_dir=session.dir)
        agent.run_turn("hi")
        agent.close()
        sent = {t.name: t.description for t in agent.tools.specs()}
        sid = session.id
    _, compiled = compile_session(sid, home=nova_home)
    assert {t.name: t.description for t in compiled.view.tools} == sent
    assert ("Commands run in a sandbox" in sent["bash"]) is sandbox
    shown = runner.invoke(_app(), ["context", sid, "--json"])
    assert shown.exit_code == 0, shown.output


def _figures(output: str) -> tuple[int, list[int], int]:
    """The next request's figure, the terms it adds up, and what `nova sessions show` gives, as printed."""
    import re

    line = next(x for x in output.splitlines() if "tokens: the next request" in x)
    used = int(line.split(" tokens:", 1)[0].replace(",", ""))
    terms = [int(t.replace(",", "")) for t in re.findall(r"(?:= |\+ )([\d,]+) ", line)]
    show = next(x for x in output.splitlines() if x.startswith("nova sessions show gives"))
    same = re.search(r"gives ([\d,]+):", show)
    return used, terms, int(same.group(1).replace(",", "")) if same else used


def test_context_says_what_its_figure_adds_up_and_how_sessions_show_differs(nova_home: Path) -> None:
    """An imported Claude Code session: `nova sessions show` gives the recorded last call (its input and
    reply as the provider counted them); `nova context` measures the next request, which adds what Nova
    puts after that call and the per-call allowance the session's own calls taught the ledger. Each says
    which it is, and the terms add up to the figure."""
    from nova.cli.main import app
    from nova.testing import shared_data_dir

    path = shared_data_dir() / "sessions" / "codemie" / "claude-code" / "session-196820da.jsonl"
    if not path.is_file():
        pytest.skip(f"no shared session data at {path} (set NOVA_SHARED_DATA)")
    imported = runner.invoke(app, ["sessions", "import", str(path), "--json"])
    assert imported.exit_code == 0, imported.output
    sid = json.loads(imported.output)["session_id"]
    shown = json.loads(runner.invoke(app, ["sessions", "show", sid, "--json"]).output)
    result = runner.invoke(app, ["context", sid])
    assert result.exit_code == 0, result.output
    used, terms, show_gives = _figures(result.output)
    assert sum(terms) == used and len(terms) == 3  # the last call + what follows it + the allowance
    assert show_gives == shown["context_tokens"] == terms[0] != used
    assert "the last call's input and reply as its provider counted them" in result.output
    assert "the recording agent's own system prompt and tools" in result.output
    data = json.loads(runner.invoke(app, ["context", sid, "--json"]).output)
    assert data["used"] == used and data["measured"]["at_turn_end_tokens"] == shown["context_tokens"]
    assert list(data["measured"]["parts"].values()) == terms


def test_a_live_session_context_is_the_figure_sessions_show_gives(tmp_path: Path, nova_home: Path) -> None:
    from nova.cli.main import app

    sid = _recorded_session(nova_home, tmp_path)
    result = runner.invoke(app, ["context", sid])
    assert result.exit_code == 0, result.output
    used, terms, show_gives = _figures(result.output)
    assert sum(terms) == used == show_gives
    assert "nova sessions show gives the same figure" in result.output


def test_the_reasoning_the_next_request_does_not_carry_is_named(nova_home: Path) -> None:
    """An imported OpenCode session on a reasoning model: its last reply's 64 reasoning tokens are in the
    recorded figure `nova sessions show` gives, not in the next request: the difference is named."""
    from nova.cli.main import app
    from nova.testing import shared_data_dir

    path = shared_data_dir() / "sessions" / "agentlogs" / "opencode" / "all-tools.json"
    if not path.is_file():
        pytest.skip(f"no shared session data at {path} (set NOVA_SHARED_DATA)")
    sid = json.loads(runner.invoke(app, ["sessions", "import", str(path), "--json"]).output)["session_id"]
    shown = json.loads(runner.invoke(app, ["sessions", "show", sid, "--json"]).output)
    result = runner.invoke(app, ["context", sid])
    _, terms, show_gives = _figures(result.output)
    assert show_gives == shown["context_tokens"] > terms[0]
    assert (f"the last call's input and its whole reply, with the {show_gives - terms[0]:,} tokens of reasoning "
            "the next request does not carry") in result.output


def test_after_compact_every_screen_gives_the_compacted_size(tmp_path: Path, nova_home: Path) -> None:
    """`/compact` after a turn: the figure it reports is the one `nova context` and `nova sessions show`
    give. The messages the compaction kept carry usage from calls sent the larger view before it, so they
    cannot anchor the figure, and the sessions list is told the new size."""
    import re

    from nova.agent.demo import DEMO_PROMPT, make_demo_project
    from nova.cli.main import app

    project = make_demo_project(tmp_path / "project")
    ran = runner.invoke(app, ["run", DEMO_PROMPT, "--provider", "demo", "--yes", "--cwd", str(project), "--json"])
    assert ran.exit_code == 0, ran.output
    compacted = runner.invoke(app, ["run", "--resume", "last", "/compact", "--provider", "demo"])
    assert compacted.exit_code == 0, compacted.output
    found = re.search(r"compacted: ([\d,]+) → ([\d,]+) tokens", compacted.output)
    assert found, compacted.output
    before, after = (int(x.replace(",", "")) for x in found.groups())
    assert after < before
    data = json.loads(runner.invoke(app, ["context", "last", "--json"]).output)
    shown = json.loads(runner.invoke(app, ["sessions", "show", "last", "--json"]).output)
    assert data["used"] == after == shown["context_tokens"]
    assert "parts" not in data["measured"]  # estimated in full until a call answers the compacted view


def test_an_imported_summary_is_said_to_be_the_recorded_agents(tmp_path: Path, nova_home: Path) -> None:
    """The reason read Nova's sizing figures from a Claude Code summary, which has none: "the view after it
    was 0 tokens, sized to half the threshold (0 tokens is half)"."""
    from nova.sessions.export import import_sessions

    def record(kind: str, n: int, **extra: object) -> dict[str, object]:
        return {"type": kind, "sessionId": "s1", "uuid": f"u{n}", "timestamp": f"2025-10-10T21:55:{n:02d}Z",
                **extra}

    reply_usage = {"input_tokens": 3, "cache_read_input_tokens": 15000, "output_tokens": 7}
    path = tmp_path / "s1.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in [
        record("user", 1, message={"role": "user", "content": "first request"}),
        record("assistant", 2, message={"role": "assistant", "id": "r1", "model": "claude-sonnet-4-5",
                                        "content": [{"type": "text", "text": "ok"}], "usage": reply_usage}),
        record("system", 3, subtype="compact_boundary", compactMetadata={"trigger": "auto", "preTokens": 15808}),
        record("user", 4, isCompactSummary=True, message={"role": "user", "content": "The user asked for X."}),
        record("user", 5, message={"role": "user", "content": "next request"}),
        record("assistant", 6, message={"role": "assistant", "id": "r2", "model": "claude-sonnet-4-5",
                                        "content": [{"type": "text", "text": "done"}], "usage": reply_usage}),
    ]), encoding="utf-8")
    session_id = import_sessions(path, nova_home).session_id
    result = runner.invoke(_app(), ["context", session_id, "--json"])
    assert result.exit_code == 0, result.output
    reason = next(s["reason"] for s in json.loads(result.stdout)["segments"] if "compaction summary" in s["reason"])
    assert "written by the recorded agent (claude-code)" in reason and "0 tokens" not in reason, reason


def test_at_80_columns_no_source_or_id_is_cut(tmp_path: Path, nova_home: Path) -> None:
    """A pipe is 80 columns: the table cut "session_search" to "session_sear…" and a message id to
    "message:m015…"; a long one now goes on in the next line."""
    sid = _recorded_session(nova_home, tmp_path)
    result = runner.invoke(_app(), ["context", sid], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    rows = [line for line in result.output.splitlines() if line.startswith("│")]
    assert rows and all(len(line) <= 80 for line in rows)
    assert not any("…" in line for line in rows), result.output
    source = "".join(line.split("│")[5].strip() for line in rows)  # the source column, line after line
    assert "session_search" in source and "SYSTEM_CONTRACT" in source, source


def test_at_80_columns_segment_ids_and_classes_stay_whole(tmp_path: Path, nova_home: Path) -> None:
    """The segment column split "system.contract" after "contrac", which read as two names."""
    sid = _recorded_session(nova_home, tmp_path)
    result = runner.invoke(_app(), ["context", sid], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    rows = [line for line in result.output.splitlines() if line.startswith("│")]
    segments = [line.split("│")[1].strip() for line in rows]
    classes = {line.split("│")[2].strip() for line in rows} - {""}
    assert "system.contract" in segments, segments
    assert classes <= {"always-on", "pinned", "index", "on-demand"}, classes
