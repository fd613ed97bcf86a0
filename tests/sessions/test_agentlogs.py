"""Every real session file in the shared data's `sessions/agentlogs/` (files other agents wrote): what each
holds, counted by hand from the files, must be what Nova imports and replays — responses, tool calls,
tool results, images, the files the session edited — with the source's own counts agreeing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from nova.cli.commands.replay import replay_command
from nova.evaluation.replay import replay_messages
from nova.history.invariants import check_tool_pairing
from nova.history.tool_paths import SHELL_TOOLS, paths_of
from nova.messages import ImagePart
from nova.sessions.importers import read_session_file
from nova.sessions.repair import repair_history
from nova.testing import shared_data_dir

AGENTLOGS = shared_data_dir() / "sessions" / "agentlogs"
pytestmark = pytest.mark.skipif(not AGENTLOGS.is_dir(), reason=f"shared session files absent ({AGENTLOGS}; "
                                                               "set NOVA_SHARED_DATA)")

# file: (format, messages, responses, tool calls, tool results, images, files the edit calls wrote)
EXPECTED: dict[str, tuple[str, int, int, int, int, int, set[str]]] = {
    "claude-code/compact.jsonl": ("claude-code", 9, 1, 0, 0, 0, set()),
    "claude-code/crud.jsonl": ("claude-code", 20, 10, 9, 9, 0,
                               {"/Users/philipp/dev/vibeinsights/fixtures/claudecode/JOKE.md"}),
    "claude-code/images.jsonl": ("claude-code", 6, 3, 2, 2, 1, set()),
    "claude-code/subagent.jsonl": ("claude-code", 4, 2, 1, 1, 0, set()),
    "claude-code/todos.jsonl": ("claude-code", 12, 6, 5, 5, 0, set()),
    # The Cline task ends on an `attempt_completion` the user never answered: 38 calls, 37 results.
    "cline/crud.json": ("anthropic", 42, 21, 38, 37, 0, set()),
    "codex/crud.jsonl": ("codex", 12, 5, 4, 4, 0, {"/Users/philipp/dev/agentlogs/fixtures/JOKE.md"}),
    "codex/images.jsonl": ("codex", 28, 13, 10, 10, 1, {"packages/web/src/routes/_app/app/team/index.tsx"}),
    "opencode/all-tools.json": ("opencode", 28, 14, 13, 13, 0, {"temp-tool-usage.txt"}),
    "opencode/crud.json": ("opencode", 10, 5, 4, 4, 0, {"/Users/philipp/dev/agentlogs/JOKE.md"}),
    "pi/branched.jsonl": ("pi", 9, 4, 2, 2, 0, {"haiku1.txt", "limerick.txt"}),
    "pi/crud.jsonl": ("pi", 10, 5, 4, 4, 0, {"JOKE.md"}),
}


def _files() -> list[Path]:
    return sorted(AGENTLOGS.glob("*/*.json*")) if AGENTLOGS.is_dir() else []


def test_every_shared_session_file_is_covered() -> None:
    assert sorted(f"{p.parent.name}/{p.name}" for p in _files()) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_shared_file_imports_whole(name: str) -> None:
    fmt, count, responses, calls, results, images, written = EXPECTED[name]
    imported = read_session_file(AGENTLOGS / name)
    messages = imported.messages
    assert imported.format == fmt and not imported.skipped
    assert len(messages) == count
    assert sum(m.role == "assistant" for m in messages) == responses
    assert sum(len(m.tool_uses()) for m in messages) == calls
    assert sum(len(m.tool_results()) for m in messages) == results
    assert sum(isinstance(p, ImagePart) and bool(p.data or p.url) for m in messages for p in m.parts) == images
    # The reader's count of the source's own records agrees with what it imported.
    assert imported.meta["source_counts"] == {"responses": responses, "tool_calls": calls, "tool_results": results}
    edits = {p for m in messages for c in m.tool_uses() if c.name.lower() not in SHELL_TOOLS
             for p in paths_of(c).writes}
    assert edits == written
    # Every response that has usage in the source keeps it as its anchor.
    assert any("usage" in m.metadata for m in messages if m.role == "assistant")
    repaired, _ = repair_history(messages)
    assert check_tool_pairing(repaired) == []
    if calls == results:
        assert check_tool_pairing(messages) == []


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_shared_file_replays_at_32k(name: str) -> None:
    _, _, responses, _, _, _, _ = EXPECTED[name]
    imported = read_session_file(AGENTLOGS / name)
    report = replay_messages(imported.messages, system=imported.system, window=32000, policy="nova")
    assert report.calls == responses and report.invariant_violations == 0
    # Files without their fixed prompt start at the real first request's size, not at a few hundred tokens.
    assert report.per_call[0].input_tokens > 2000


def test_replay_report_shows_source_against_imported_for_cline() -> None:
    app = typer.Typer()
    app.command("replay")(replay_command)
    app.callback()(lambda: None)
    result = CliRunner().invoke(app, ["replay", str(AGENTLOGS / "cline" / "crud.json"), "--policy", "naive", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout.strip().splitlines()[-1])
    assert data["import"]["source"] == data["import"]["imported"] == {"responses": 21, "tool_calls": 38,
                                                                      "tool_results": 37}
    assert "1 unanswered tool call(s) marked interrupted" in data["repaired"]


def test_claude_code_subagent_child_is_linked() -> None:
    imported = read_session_file(AGENTLOGS / "claude-code" / "subagent.jsonl")
    task = next(c for m in imported.messages for c in m.tool_uses())
    (child,) = imported.children
    assert task.name == "Task" and child.meta["parent_tool_use_id"] == task.id
    assert [m.role for m in child.messages] == ["user", "assistant"]
    assert child.meta["source_counts"] == {"responses": 1, "tool_calls": 0, "tool_results": 0}


def test_imported_usage_anchors_the_context_figure(nova_home: Path) -> None:
    """The last response's real usage (17,573 cache read + 322 written + 88 out) is the ledger's anchor:
    `nova context` on the imported session reports it, not an estimate of Nova's own prompt, plus the
    per-step growth the ledger learned from the session's recorded usage (what Claude Code sends each
    call without recording it: 75-200 tokens a step in this session)."""
    from nova.cli.commands.context import context_command
    from nova.sessions.export import import_sessions

    result = import_sessions(AGENTLOGS / "claude-code" / "crud.jsonl", nova_home)
    app = typer.Typer()
    app.command("context")(context_command)
    app.callback()(lambda: None)
    shown = CliRunner().invoke(app, ["context", result.session_id, "--json"])
    assert shown.exit_code == 0, shown.output
    learned = json.loads(shown.stdout)["used"] - (17573 + 322 + 88)
    assert 75 <= learned <= 200
