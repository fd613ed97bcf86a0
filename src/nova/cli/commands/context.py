"""`nova context [SESSION] [--why TEXT] [--json]`: what is in a session's context and why (CTX-2).

Mounted lazily by `nova.cli.main` as `nova context`. The session's working history is
compiled exactly as the next model call would compile it (same head, tools, pinned task state), and the
manifest is printed: one row per segment (class, tokens, share of the view, source, reason), totals
against the threshold and the window, and what was left out and why. `--why TEXT` lists the segments
holding TEXT with the reason each is there. `render_context` is the `/context` text of the TUI.

`--json` prints `{"used", "limit", "percent", "segments": [{"id", "class", "source", "tokens",
"reason"}], "dropped": [...]}`; `used` is the token ledger's figure (TOK-3) and the segments' tokens
sum to it.
"""

# No `from __future__ import annotations`: typer reads the command signatures each time the command
# runs, and string annotations would be evaluated again each time.
import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from nova.cli.commands.errors import user_errors
from nova.context.compiler import Compiled
from nova.context.receipt import CompactionReceipt, receipt_line
from nova.context.report import context_json, render_why
from nova.errors import NovaError
from nova.model import usage_of
from nova.present.terminal import terminal_console
from nova.present.text import terminal_safe

__all__ = ["compile_session", "context_command", "session_receipts"]


def session_receipts(session_id: str, *, home: Path | None = None) -> list[dict[str, Any]]:
    """The receipt of every compaction the session recorded (its boundary records), oldest first."""
    from nova.sessions.schema import BoundaryRecord
    from nova.sessions.session import Session
    from nova.settings import load_settings

    home = home or load_settings(env=dict(os.environ)).home
    session = Session.open(home, session_id, readonly=True)
    try:
        return [dict(r.receipt) for r in session.transcript.iter_records()
                if isinstance(r, BoundaryRecord) and r.receipt is not None]
    finally:
        session.close()


def compile_session(session_id: str | None, *, home: Path | None = None) -> tuple[str, Compiled]:
    """(session id, compiled view) of a recorded session ("last" or None: the most recent one)."""
    from nova.agent.builder import SYSTEM_CONTRACT, agent_tools, protected_paths
    from nova.agent.context_runtime import ContextRuntime, build_context_sources
    from nova.context.budget import budget_for
    from nova.context.state import TaskStateStore
    from nova.integrations._engine import FRAMEWORKS, compile_recorded
    from nova.sessions.session import Session, list_sessions
    from nova.settings import PROVIDERS, load_settings
    from nova.tokens import TokenLedger, counter_for_model

    settings = load_settings(home=home, env=dict(os.environ)) if home is None else load_settings(home=home)
    home = settings.home
    if not session_id or session_id == "last":
        metas, _ = list_sessions(home)
        if not metas:
            raise NovaError(f"no recorded sessions in {home / 'sessions'}")
        session_id = metas[0].id
    session = Session.open(home, session_id, readonly=True)
    try:
        meta = session.meta
        if meta.provider in FRAMEWORKS:
            # A run inside another framework: its instructions, tools and window are in the transcript.
            return session_id, compile_recorded(session, config=settings.compaction)
        # The session's own model decides the window and threshold, not today's default model.
        settings = replace(settings, model=meta.model or settings.model,
                           provider=meta.provider if meta.provider in PROVIDERS else settings.provider)
        history = session.load_history()
        cwd = Path(session.meta.cwd or ".")
        sources = build_context_sources(settings=settings, cwd=cwd, contract=SYSTEM_CONTRACT)
        ledger = TokenLedger(counter_for_model(settings.model))
        for message in history:  # TOK-2: the anchor is the latest assistant message with a real figure
            usage = usage_of(message) if message.role == "assistant" else None
            if usage is not None:
                ledger.record(message.id, usage)
        ledger.resume(history)  # what each call grew beyond the estimate, as the live session had learned it
        state = TaskStateStore(session)
        runtime = ContextRuntime(cwd=cwd, sources=sources, state=state, ledger=ledger,
                                 budget=budget_for(settings), observe_requests=False)
        # The tools exactly as `build_agent` gives them (a sandboxed `bash` reads differently).
        tools = agent_tools(settings, cwd, sources=sources, state=state,
                            protected=protected_paths(settings, cwd, sources))
        compiled = runtime.compile(history, system=sources.system, tools=tools.specs())
    finally:
        session.close()
    return session_id, compiled


def context_command(
    session: Annotated[str | None, typer.Argument(help="Session id or `last` (default: the most recent).")] = None,
    why: Annotated[str | None, typer.Option("--why", help="Which segments hold this text, and why.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """What is in a session's context: every segment with its class, tokens, source and reason."""
    with user_errors(exit_code=1):
        session_id, compiled = compile_session(session)
        receipts = session_receipts(session_id)
    out = terminal_console(highlight=False, soft_wrap=True)
    if why is not None:
        if as_json:
            matches = [{"id": s.id, "class": s.cls, "source": s.source, "tokens": s.tokens, "reason": s.reason}
                       for s in compiled.why(why)]
            typer.echo(terminal_safe(json.dumps({"query": why, "matches": matches}, ensure_ascii=False), json=True))
        else:
            out.print(render_why(compiled, why), markup=False)
        return
    if as_json:
        data = {**context_json(compiled), "receipts": receipts}
        typer.echo(terminal_safe(json.dumps(data, ensure_ascii=False), json=True))
        return
    m = compiled.manifest
    table = Table(title=f"context: {m.used:,} / {m.limit:,} tokens ({m.percent:.1f}%), window {m.window:,}")
    for column in ("segment", "class", "tokens", "share", "source", "reason"):
        table.add_column(column, justify="right" if column in ("tokens", "share") else "left")
    for s in m.segments:
        share = s.tokens * 100.0 / m.used if m.used else 0.0
        table.add_row(escape(s.id), escape(s.cls), f"{s.tokens:,}", f"{share:.1f}%", escape(s.source), escape(s.reason))
    out.print(table)
    for d in m.dropped:
        out.print(f"left out: {d.id} ({d.source}): {d.reason}", markup=False)
    for number, receipt in enumerate(receipts, 1):
        out.print(f"compaction {number}: {receipt_line(CompactionReceipt.from_json(receipt))}", markup=False)
