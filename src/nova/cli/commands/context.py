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
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from nova.cli.commands.errors import user_errors
from nova.context.compiler import Compiled
from nova.context.receipt import CompactionReceipt, receipt_line
from nova.context.report import context_json, render_why
from nova.errors import NovaError, StorageError
from nova.model import usage_of
from nova.present.terminal import terminal_console
from nova.present.text import terminal_safe

if TYPE_CHECKING:
    from nova.agent.context_runtime import ContextSources
    from nova.sessions.sent import SentRequest

__all__ = ["MeasuredSession", "compile_session", "context_command", "measure_session", "session_receipts"]

# Below this many columns the segment and class columns are sized to their words (see context_command).
_WIDE_TERMINAL = 120
# The widest segment id kept on one line there ("system.contract"); a longer one is folded.
_SEGMENT_ID_WIDTH = 15


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
    measured = measure_session(session_id, home=home)
    return measured.session_id, measured.compiled


@dataclass(frozen=True, kw_only=True)
class MeasuredSession:
    session_id: str
    compiled: Compiled
    sent: "SentRequest | None"
    """The last request the session's model was sent (`nova.sessions.sent`), when it was recorded."""
    basis: str
    """What the figure is measured against: "last request" (the recorded one), "recorded tools" (the
    catalog the session recorded at its start) or "recomputed" (today's settings for its model)."""
    parts: tuple[int, int, int] | None = None
    """What the figure adds up (`TokenLedger.parts`): the last answered call's input and reply as its
    provider counted them, Nova's estimate of what follows that call, the learned per-call allowance;
    None when no call's figure applies to the view (all of it is estimated)."""
    at_turn_end: int = 0
    """The figure `nova sessions show` and `sessions list` give: the context at the end of the last turn."""
    imported: bool = False
    reasoning: int = 0
    """The reasoning tokens of the last answered call's reply: billed as output, not carried by the next
    request unless its reasoning goes back (`nova.tokens.ledger.reasoning_goes_back`)."""


def measure_session(session_id: str | None, *, home: Path | None = None) -> MeasuredSession:
    """A recorded session compiled as its model saw it: the provider and model, window, threshold, system
    prompt and tools (MCP tools included) of the last request it was sent, over its history as the next
    call would compile it. A session with no recorded request (older, or written by another machine's
    worker) is measured with the tool catalog it recorded at its start, else recomputed from today's
    settings for its own model."""
    from nova.agent.builder import SYSTEM_CONTRACT, agent_tools, protected_paths
    from nova.agent.context_runtime import ContextRuntime, build_context_sources
    from nova.agent.pipeline import recorded_sources
    from nova.context.budget import budget_for
    from nova.context.state import TaskStateStore
    from nova.integrations._engine import FRAMEWORKS, compile_recorded
    from nova.sessions.readers.nova import TOOLS_EVENT, tools_from_event
    from nova.sessions.schema import EventRecord
    from nova.sessions.sent import read_sent
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
            return MeasuredSession(session_id=session_id, sent=None, basis="recorded tools",
                                   compiled=compile_recorded(session, config=settings.compaction))
        try:
            sent = read_sent(session.dir)
        except StorageError as exc:
            _warn(f"{exc}; measuring with today's settings instead")
            sent = None
        if sent is not None:
            # The model really used: a resume may have moved the session to another provider (an imported
            # session keeps naming the agent it came from), and that model's window is the one that counts.
            settings = replace(settings, model=sent.model, context_window=sent.window,
                               provider=sent.provider if sent.provider in PROVIDERS else settings.provider)
        else:
            # The session's own model decides the window and threshold, not today's default model.
            settings = replace(settings, model=meta.model or settings.model,
                               provider=meta.provider if meta.provider in PROVIDERS else settings.provider)
        history = session.load_history()
        # The messages the latest compaction kept were answered before it: their usage measured the view
        # the compaction replaced, so none of them anchors the figure of the view that is now sent.
        boundary = session.last_boundary
        kept = {m.id for m in boundary.head()} if boundary is not None else set()
        cwd = Path(session.meta.cwd or ".")
        sources = build_context_sources(settings=settings, cwd=cwd, contract=SYSTEM_CONTRACT)
        ledger = TokenLedger(counter_for_model(settings.model))
        for message in history:  # TOK-2: the anchor is the latest assistant message with a real figure
            usage = usage_of(message) if message.role == "assistant" and message.id not in kept else None
            if usage is not None:
                ledger.record(message.id, usage)
        ledger.resume(history)  # what each call grew beyond the estimate, as the live session had learned it
        state = TaskStateStore(session)
        budget = budget_for(settings)
        if sent is not None and sent.threshold != budget.threshold:
            budget = replace(budget, threshold=sent.threshold)  # the line the live agent measured against

        def runtime_for(head: "ContextSources") -> ContextRuntime:
            return ContextRuntime(cwd=cwd, sources=head, state=state, ledger=ledger, budget=budget,
                                  observe_requests=False)

        basis = "last request"
        if sent is not None:
            tools = list(sent.tools)  # as sent: the MCP servers' tools included
        else:
            recorded = [r for r in session.transcript.iter_records()
                        if isinstance(r, EventRecord) and r.name == TOOLS_EVENT]
            if recorded:  # the catalog the session's calls were sent, recorded at its start
                tools, basis = list(tools_from_event(recorded[-1].data)), "recorded tools"
            else:
                # The tools exactly as `build_agent` gives them (a sandboxed `bash` reads differently).
                tools = agent_tools(settings, cwd, sources=sources, state=state,
                                    protected=protected_paths(settings, cwd, sources)).specs()
                basis = "recomputed"
        compiled = runtime_for(sources).compile(history, system=sources.system, tools=tools)
        if sent is not None and compiled.view.system != sent.system:
            # The rules or instructions changed on disk since: the model saw the recorded system prompt.
            again = runtime_for(recorded_sources(sent.system)).compile(history, system=sent.system, tools=tools)
            if again.view.system == sent.system:
                compiled = again
        parts = ledger.parts(compiled.view.messages)
        anchored = next((m for m in history if ledger.anchor is not None and m.id == ledger.anchor.message_id), None)
        anchored_usage = usage_of(anchored) if anchored is not None else None
    finally:
        session.close()
    return MeasuredSession(session_id=session_id, compiled=compiled, sent=sent, basis=basis, parts=parts,
                           at_turn_end=meta.last_context_tokens, imported=meta.provider.startswith("import:"),
                           reasoning=anchored_usage.reasoning_tokens if anchored_usage is not None else 0)


def _warn(text: str) -> None:
    terminal_console(stderr=True, highlight=False, soft_wrap=True).print(f"nova: warning: {text}", markup=False)


def context_command(
    session: Annotated[str | None, typer.Argument(help="Session id or `last` (default: the most recent).")] = None,
    why: Annotated[str | None, typer.Option("--why", help="Which segments hold this text, and why.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """What is in a session's context: every segment with its class, tokens, source and reason."""
    with user_errors(exit_code=1):
        measured = measure_session(session)
        session_id, compiled = measured.session_id, measured.compiled
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
        data = {**context_json(compiled), "receipts": receipts, "measured": _measured_json(measured)}
        typer.echo(terminal_safe(json.dumps(data, ensure_ascii=False), json=True))
        return
    m = compiled.manifest
    table = Table(title=f"context: {m.used:,} / {m.limit:,} tokens ({m.percent:.1f}%), window {m.window:,}")
    # On a narrow terminal (a pipe is 80 columns) the short columns get fixed widths that keep their words
    # whole: "system.contract" split after "contrac" reads as two names. (A minimum width makes rich draw
    # one column too wide.) A longer id or tool name is folded onto the next line, never cut to
    # "message:m015…": which message it names is the point of the row.
    fixed: dict[str, int] = {}
    if out.width < _WIDE_TERMINAL:
        fixed = {"segment": min(_SEGMENT_ID_WIDTH, max((len(s.id) for s in m.segments), default=1)),
                 "class": max((len(s.cls) for s in m.segments), default=1)}
    for column in ("segment", "class", "tokens", "share", "source", "reason"):
        table.add_column(column, justify="right" if column in ("tokens", "share") else "left",
                         overflow="ellipsis" if column in ("tokens", "share") else "fold", width=fixed.get(column))
    for s in m.segments:
        share = s.tokens * 100.0 / m.used if m.used else 0.0
        table.add_row(escape(s.id), escape(s.cls), f"{s.tokens:,}", f"{share:.1f}%", escape(s.source), escape(s.reason))
    out.print(table)
    out.print(_measured_line(measured), markup=False)
    for line in _figure_lines(measured):
        out.print(line, markup=False)
    for d in m.dropped:
        out.print(f"left out: {d.id} ({d.source}): {d.reason}", markup=False)
    for number, receipt in enumerate(receipts, 1):
        out.print(f"compaction {number}: {receipt_line(CompactionReceipt.from_json(receipt))}", markup=False)


def _measured_json(measured: MeasuredSession) -> dict[str, Any]:
    """What `used` is measured against (`--json`'s `measured`): the basis, what the figure adds up
    (`parts`, when a call's real figure applies), the figure at the end of the last turn, and the recorded
    last request when there is one (its provider, model, window and threshold, when it was sent, its size
    as Nova measured it then and as the provider reported it)."""
    data: dict[str, Any] = {"basis": measured.basis, "at_turn_end_tokens": measured.at_turn_end}
    if measured.parts is not None:
        reported, added, allowance = measured.parts
        data["parts"] = {"reported": reported, "added": added, "allowance": allowance}
    sent = measured.sent
    if sent is None:
        return data
    return {**data, "provider": sent.provider, "model": sent.model, "window": sent.window,
            "threshold": sent.threshold, "tools": len(sent.tools), "at": sent.at, "sent_tokens": sent.sent_tokens,
            "reported_input_tokens": sent.reported_input_tokens}


def _figure_lines(measured: MeasuredSession) -> list[str]:
    """What the figure is, in words: the next request as Nova measures it, what that adds up, and how it
    relates to the figure `nova sessions show` gives (the end of the last turn)."""
    used = measured.compiled.used
    if measured.parts is None:
        lines = [f"{used:,} tokens: the next request, estimated in full (no call was answered since the view "
                 "was last compacted, or the recording has no usage)"]
    else:
        reported, added, allowance = measured.parts
        terms = [f"{reported:,} the last call's input and reply as its provider counted them"]
        if added:
            terms.append(f"{added:,} Nova's estimate of what follows that call (messages, its notes for the "
                         "next request)")
        if allowance:
            terms.append(f"{allowance:,} allowance for what each call of this session grew beyond Nova's count")
        lines = [f"{used:,} tokens: the next request = " + " + ".join(terms)]
        if measured.imported and measured.basis == "recomputed":
            lines.append("the last call's figure holds the recording agent's own system prompt and tools, which "
                         "the recording lacks; the rows above show Nova's in their place")
    turn_end = measured.at_turn_end
    if turn_end == used:
        lines.append("nova sessions show gives the same figure (the context at the end of the last turn)")
    elif measured.parts is not None and turn_end == measured.parts[0]:
        lines.append(f"nova sessions show gives {turn_end:,}: the last call's figure alone, as recorded")
    elif measured.parts is not None and measured.reasoning and turn_end == measured.parts[0] + measured.reasoning:
        lines.append(f"nova sessions show gives {turn_end:,}: the last call's input and its whole reply, with the "
                     f"{measured.reasoning:,} tokens of reasoning the next request does not carry")
    elif measured.parts is None and any(m.has("summary") for m in measured.compiled.view.messages):
        lines.append(f"nova sessions show gives {turn_end:,}: the last call's figure, from before the compaction "
                     "that followed it")
    elif turn_end:
        lines.append(f"nova sessions show gives {turn_end:,}: the context as measured at the end of the last turn")
    return lines


def _measured_line(measured: MeasuredSession) -> str:
    sent = measured.sent
    if sent is None:
        why = ("the tool catalog the session recorded at its start" if measured.basis == "recorded tools"
               else "today's settings for the session's model (no request was recorded)")
        return f"measured with {why}"
    reported = f", {sent.reported_input_tokens:,} tokens as the provider reported it" \
        if sent.reported_input_tokens else ""
    return (f"measured against the last request sent: {sent.provider}/{sent.model}, window {sent.window:,}, "
            f"{len(sent.tools)} tools{reported}")
