"""EVAL-3 fork test on 5 real trajectories: from the same mid-session checkpoint, the compacted and the
uncompacted view continue over the same next recorded steps; which required facts does each hold?

Required facts at the checkpoint (from the raw record, by deterministic code): the user's messages
verbatim (constraints), the files the run modified (from its final diff) that were named by then, the
last failing command with its first error line, and the open items of canonical task state. The
compacted view is the ContextController's compaction (extractive summarizer, continuity guard) compiled
with the pinned task state. Target: the compacted view holds 100 %.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from nova.context.budget import ContextBudget
from nova.context.compiler import CompileInput, ContextCompiler, SourceText
from nova.context.continuity import ContinuityGuard
from nova.context.controller import CompactionHooks, ContextController, FixedPrompt
from nova.context.state import MemoryStateSource, TaskStateStore, apply_command, render_pinned
from nova.context.summarize import ExtractiveSummarizer, error_lines, failure_code, is_user_message
from nova.evaluation.replay import view_text
from nova.messages import Message, ToolUsePart
from nova.sessions.importers import read_session_file
from nova.sessions.link import SessionLink
from nova.settings import CompactionConfig
from nova.testing import shared_data_dir
from nova.tokens import MemoCounter, TokenLedger, counter_for_model

FOLDER = shared_data_dir() / "trajectories" / "mini-swe-agent-gemini3"
FILES = sorted(FOLDER.glob("*.traj.json"))[:5]
NEXT_STEPS = 8
pytestmark = pytest.mark.skipif(len(FILES) < 5, reason=f"trajectories not found under {FOLDER}")


def required_facts(path: Path, history: list[Message], open_items: tuple[str, ...]) -> dict[str, list[str]]:
    corpus = view_text(history)
    doc = json.loads(path.read_text(encoding="utf-8"))
    submission = (doc.get("info") or {}).get("submission") or ""
    paths = [p for p in dict.fromkeys(re.findall(r"^diff --git a/(\S+)", submission, re.M)) if p in corpus]
    calls = {u.id: u for m in history for u in m.tool_uses()}
    last: list[str] = []
    for m in history:
        for r in m.tool_results():
            if failure_code(r) is not None and r.tool_use_id in calls:
                use: ToolUsePart = calls[r.tool_use_id]
                lines = error_lines(r.content, 1)
                last = [str(use.input.get("command", ""))[:200]] + ([lines[0][:200]] if lines else [])
    return {"user constraints": [m.text for m in history if is_user_message(m)], "modified paths": paths,
            "last error": last, "open items": list(open_items)}


def held(facts: dict[str, list[str]], text: str) -> dict[str, tuple[int, int]]:
    return {kind: (sum(1 for f in items if f in text), len(items)) for kind, items in facts.items()}


def test_fork_from_a_checkpoint_compacted_view_holds_every_required_fact(tmp_path: Path) -> None:
    counter = counter_for_model("gemini-3-pro")
    report: dict[str, Any] = {}
    for path in FILES:
        session = read_session_file(path)
        messages = list(session.messages)
        k = len(messages) // 2
        while k < len(messages) and messages[k].role != "assistant":
            k += 1  # the checkpoint sits right before a recorded model step
        checkpoint = messages[:k]
        store = TaskStateStore(MemoryStateSource())
        task = next(m.text for m in checkpoint if is_user_message(m))
        store.update(lambda s, task=task, name=path.name: apply_command(
            apply_command(s, f"/goal {task.strip().splitlines()[0][:200]}"), f"/open resolve {name}"))
        state = store.load()
        raw: dict[str, Message] = {}
        guard = ContinuityGuard(state=store, inner=ExtractiveSummarizer(counter), raw=raw.get)
        controller = ContextController(config=CompactionConfig(), budget=ContextBudget.derive(CompactionConfig(), 64_000),
                                       ledger=TokenLedger(MemoCounter(counter)), summarizer=guard,
                                       hooks=CompactionHooks(raw=raw), session=SessionLink(dir=tmp_path / path.stem),
                                       prompt=FixedPrompt(system=session.system))
        compacted = controller.compact_now(checkpoint)
        assert compacted != checkpoint and compacted[1].has("summary"), path.name
        facts = required_facts(path, checkpoint, state.open_items)
        compiler = ContextCompiler()
        pinned = SourceText(id="task.state", cls="pinned", source="task state", text=render_pinned(state),
                            reason="pinned")
        rows: dict[str, dict[str, tuple[int, int]]] = {}
        for name, head in (("uncompacted", checkpoint), ("compacted", compacted)):
            worst: dict[str, tuple[int, int]] = {}
            for step in range(1, NEXT_STEPS + 1):  # the same next recorded steps for both views
                history = head + messages[k:k + step]
                view = compiler.compile(CompileInput(head=[], tools=[], history=history, pinned=pinned,
                                                     limit=10**9, counter=counter)).view
                for kind, (got, total) in held(facts, view_text(list(view.messages))).items():
                    if kind not in worst or got < worst[kind][0]:
                        worst[kind] = (got, total)
            rows[name] = worst
        report[path.name] = rows
        for kind, (got, total) in rows["compacted"].items():
            assert got == total, (path.name, kind, got, total)
    for name, rows in report.items():  # the report: held/required per fact kind, per view
        print(name, {view: {k: f"{g}/{t}" for k, (g, t) in kinds.items()} for view, kinds in rows.items()})
    totals = {name: [sum(r[name][k][0] for r in report.values()) / max(1, sum(r[name][k][1] for r in report.values()))
                     for k in ("user constraints", "modified paths", "last error", "open items")]
              for name in ("uncompacted", "compacted")}
    assert totals["compacted"] == [1.0, 1.0, 1.0, 1.0]
