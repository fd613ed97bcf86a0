"""`nova sessions …`: list, show, search, export, remove and import recorded sessions.

Mounted lazily by `nova.cli.main` as `nova sessions`. `resume_command(ID)` reopens a session with its
notices printed (`nova run --resume ID` calls `nova.sessions.export.resume` directly).
NOVA_HOME is read here, at the edge. Every failure is one line on stderr and exit status 1; nothing
is modified when the input is bad. Rich and the export/import code load inside the commands that use
them: `nova sessions list --json` needs neither.
"""

# No `from __future__ import annotations`: typer reads the command signatures whenever `nova sessions`
# runs, and string annotations would be evaluated again each time.
import json
import os
import sys
import time
from collections.abc import Mapping
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer

from nova.cli.commands.errors import user_errors
from nova.cli.commands.person import person_only
from nova.cli.commands.sessions_search import search_command
from nova.cli.commands.typer_classes import NovaCommand, command_group
from nova.errors import NovaError
from nova.messages import Message, SummaryPart, TextPart, ToolResultPart, ToolUsePart
from nova.present.text import terminal_safe
from nova.sessions.meta import SessionMeta
from nova.sessions.repair import pending_interrupted_answers
from nova.sessions.schema import BoundaryRecord, EventRecord, MessageRecord
from nova.sessions.session import Session, delete_session, list_sessions
from nova.sessions.transcript import BadLine
from nova.settings import nova_home

if TYPE_CHECKING:
    from collections.abc import Iterable

    from rich.console import Console

    from nova.sessions.export import Resumed

__all__ = ["app", "resume_command"]

app = command_group("Recorded sessions: list, show, search, export, remove, import, doctor.")


def _out() -> "Console":
    from nova.present.terminal import terminal_console

    return terminal_console(highlight=False, soft_wrap=True)


def _err() -> "Console":
    from nova.present.terminal import terminal_console

    return terminal_console(stderr=True, highlight=False, soft_wrap=True)


def _errors() -> AbstractContextManager[None]:
    # Exit 1 for these commands; OSError is here for what slipped past the storage layer.
    return user_errors(exit_code=1, os_errors=True)


def _resolve(session_id: str, home: Path) -> str:
    """`last` names the most recently updated session, as in `nova run --resume last`."""
    if session_id != "last":
        return session_id
    from nova.sessions.export import latest_session_id

    found = latest_session_id(home)
    if found is None:
        raise NovaError(f"there is no recorded session in {home / 'sessions'}")
    return found


StrictOpt = Annotated[
    bool, typer.Option("--strict", help="Refuse a session with any damaged record instead of skipping it.")
]


def _when(ts: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ts)) if ts else "-"


def _list_when(ts: float, now: float) -> str:
    """The `updated` cell of `nova sessions list`: month, day and time this year, else the date with its
    year (an imported session is dated by its recording, which may be of another year)."""
    if not ts:
        return "-"
    same_year = time.localtime(ts).tm_year == time.localtime(now).tm_year
    return time.strftime("%m-%d %H:%M" if same_year else "%Y-%m-%d", time.localtime(ts))


def _summary(meta: SessionMeta) -> dict[str, object]:
    return {
        "id": meta.id,
        "title": meta.title,
        "messages": meta.message_count,
        # null, as the cost is, when the record holds calls without their usage (some imports).
        "context_tokens": meta.last_context_tokens if meta.context_known else None,
        "tokens_billed": meta.total_tokens if meta.tokens_known else None,
        # What the calls with usage were billed, and how many recorded none (then `tokens_billed` is null).
        "tokens_billed_recorded": meta.total_tokens,
        "unmeasured_calls": meta.unmeasured_calls,
        "cost_usd": round(meta.cost_usd, 6) if meta.cost_known else None,
        "provider": meta.provider,
        "model": meta.model,
        "created_at": meta.created_at,
        "updated_at": meta.updated_at,
        "compacted_at": meta.compacted_at,
    }


_READABLE_TITLE = 24
"""Characters of title below which `nova sessions list` leaves out its token columns to make room."""


@app.command("list", cls=NovaCommand)
def list_command(
    as_json: Annotated[bool, typer.Option(
        "--json", help="Print a JSON list instead of a table. Keys: id, title, messages, context_tokens, "
        "tokens_billed (null when a call recorded no usage; then tokens_billed_recorded is what the others were billed "
        "and unmeasured_calls how many recorded none), cost_usd (null when a call's price is unknown), provider, model, "
        "created_at, updated_at, compacted_at (times in Unix seconds).")] = False,
) -> None:
    """Sessions, most recently updated first.

    Two token figures: `context` is the conversation's size at its last model call (what that call read,
    cached or not, plus what it wrote); `tokens billed` adds up every call's input and output over the
    whole session, so it grows with every step and is usually far larger.
    """
    with _errors():
        metas, problems = list_sessions(nova_home())
    for problem in problems:
        _err().print(f"nova: warning: {problem}", markup=False)
    if as_json:
        typer.echo(terminal_safe(json.dumps([_summary(m) for m in metas], ensure_ascii=False), json=True))
        return
    if not metas:
        _out().print("No sessions yet.")
        return
    from rich import box
    from rich.markup import escape
    from rich.table import Table

    out = _out()
    now = time.time()
    rows = [(m.id, escape(m.title), _list_when(m.updated_at, now),
             str(m.message_count),
             f"{m.last_context_tokens:,}" if m.context_known else "unknown",
             _billed_cell(m),
             f"${m.cost_usd:.2f}" if m.cost_known else "unknown") for m in metas]
    heads = ("id", "title", "updated", "msgs", "context", "tokens\nbilled", "cost")
    partial = any(row[5].endswith("+") for row in rows)
    # Every column but the title as wide as its widest cell, so no figure is cut ("$10.…" at 80 columns);
    # the title takes what they leave (two characters between columns). On a narrow terminal the two token
    # figures give way first, so the title stays readable enough to pick a session by (`show` has them).
    shown = list(range(len(heads)))
    widths = [max(len(line) for text in (head, *(row[i] for row in rows)) for line in text.split("\n"))
              for i, head in enumerate(heads)]

    def title_width() -> int:
        return out.width - sum(widths[i] for i in shown if i != 1) - 2 * (len(shown) - 1)

    left_out = []
    for column in (5, 4):
        if title_width() >= _READABLE_TITLE:
            break
        shown.remove(column)
        left_out.append(heads[column].replace("\n", " "))
    # A plain layout so an 80-column terminal shows every column it keeps.
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, padding=(0, 1), collapse_padding=True)
    for i in shown:
        if i == 1:
            table.add_column(heads[i], no_wrap=True, overflow="ellipsis", max_width=max(6, title_width()))
        else:
            table.add_column(heads[i], justify="right" if i > 2 else "left", no_wrap=True, min_width=widths[i])
    for row in rows:
        table.add_row(*(row[i] for i in shown))
    out.print(table)
    legend = []
    if 4 in shown:
        legend.append("context: the conversation's size at the end of its last turn")
    if 5 in shown:
        legend.append("tokens billed: every call's input (cached included) and output, added up"
                      + ("; a + after it: some calls recorded no usage, so at least that" if partial else ""))
    if left_out:
        legend.append(f"{' and '.join(reversed(left_out))} left out to fit {out.width} columns "
                      "(a wider terminal, `nova sessions show ID` or --json has them)")
    out.print(" · ".join(legend), style="dim", markup=False)


def _billed_cell(meta: SessionMeta) -> str:
    if meta.tokens_known:
        return f"{meta.total_tokens:,}"
    return f"{meta.total_tokens:,}+" if meta.total_tokens else "unknown"


def _clip(text: str, full: bool, lines: int = 12) -> str:
    if full:
        return text
    rows = text.splitlines()
    if len(rows) <= lines and len(text) <= 2000:
        return text
    kept = "\n".join(rows[:lines])[:2000]
    return f"{kept}\n… ({len(text) - len(kept)} more characters; --full shows everything)"


def _show_message(console: "Console", message: Message, full: bool, number: int) -> None:
    from rich.markup import escape

    style = {"user": "bold cyan", "assistant": "bold green"}.get(message.role, "bold")
    console.print(f"[dim]#{number}[/] [{style}]{escape(message.role)}[/]  "
                  f"[dim]{escape(message.id)}  {_when(message.created_at)}[/]")
    for part in message.parts:
        if isinstance(part, TextPart):
            if part.text:  # an empty one (an imported reply of thinking only) is said below, not a blank line
                console.print(escape(_clip(part.text, full, 40)))
        elif isinstance(part, SummaryPart):
            console.print(f"[magenta]summary[/] ({len(part.covers)} messages)\n" + escape(_clip(part.text, full, 40)))
        elif isinstance(part, ToolUsePart):
            args = json.dumps(dict(part.input), ensure_ascii=False)
            console.print(f"[yellow]→ {escape(part.name)}[/] " + escape(_clip(args, full, 6)))
        elif isinstance(part, ToolResultPart):
            label = "[red]← error[/]" if part.is_error else "[yellow]←[/]"
            console.print(f"{label} [dim]{len(part.content)} chars[/]\n" + escape(_clip(part.content, full)))
    if message.role == "assistant" and not message.text and not message.tool_uses():
        # An imported response of thinking only: a billed call that left nothing to show.
        console.print("[dim](no text or tool call: the reply held only what is never imported, such as thinking)[/]")
    console.print()


def _cache_break_line(data: Mapping[str, Any]) -> str:
    """One line per recorded cache break: where, why, how much was not read and what that cost."""
    cost = data.get("cost_usd")
    cost_text = f"${cost:.4f}" if isinstance(cost, int | float) else "cost unknown"
    return (f"cache break at {data.get('segment', '?')} ({data.get('cause', '?')}): "
            f"{int(data.get('missed_tokens') or 0):,} tokens not read from the cache, {cost_text}")


def _calls(meta: SessionMeta) -> dict[str, object]:
    """The session's model calls by purpose (`nova.model.CallCount.to_report` each)."""
    return {purpose: count.to_report() for purpose, count in meta.calls.items()}


@app.command("show", cls=NovaCommand)
def show_command(
    session_id: Annotated[str, typer.Argument(help="Session id (see `nova sessions list`), or `last`.")],
    full: Annotated[bool, typer.Option("--full", help="Do not shorten long texts and tool outputs.")] = False,
    strict: StrictOpt = False,
    as_json: Annotated[bool, typer.Option(
        "--json", help="Print the session's figures as one JSON object instead of the conversation: the keys of "
        "`nova sessions list --json`, cwd, `calls` (the model calls by purpose: turn, compaction, memory_extraction, "
        "memory_recall, subagent; each with calls, tokens, usage, cost_usd (null when a call's price is unknown) and "
        "unpriced_calls) and `sub_agents` (id, title, messages, cost_usd).")] = False,
) -> None:
    """The conversation, with compaction boundaries marked and each message numbered as recorded (from 0,
    the numbers a replay's `compact_before` takes), after the session's figures and its model calls by
    purpose. A damaged record is skipped with a warning naming its byte offset (left in place in the log);
    --strict refuses instead."""
    from rich.markup import escape
    from rich.rule import Rule

    from nova.present.figures import calls_line
    from nova.sessions.export import boundary_sizes

    console = _out()
    with _errors():
        session = Session.open(nova_home(), _resolve(session_id, nova_home()), readonly=True, strict=strict)
        bad: list[BadLine] = []
        try:
            _warn(session.notices)
            meta = session.meta
            children = session.store.list_children(meta.id)
            if as_json:
                subs = [{"id": c.id, "title": c.title, "messages": int(c.meta.get("message_count", 0) or 0),
                         "cost_usd": c.meta.get("cost_usd")} for c in children]
                data = {**_summary(meta), "cwd": meta.cwd, "calls": _calls(meta), "sub_agents": subs}
                typer.echo(terminal_safe(json.dumps(data, ensure_ascii=False), json=True))
                return
            total_cost = f"${meta.cost_usd:.4f}" if meta.cost_known else "cost unknown"
            context = (f"context {meta.last_context_tokens:,} tokens at the last turn's end" if meta.context_known
                       else "context not recorded")
            billed = (f"{meta.total_tokens:,} tokens billed" if meta.tokens_known
                      else f"{meta.total_tokens:,} tokens billed by the calls with usage ({meta.unmeasured_calls} "
                           f"recorded none)" if meta.total_tokens else "tokens billed not recorded")
            console.print(f"[bold]{escape(meta.title or meta.id)}[/]  [dim]{meta.id}[/]")
            console.print(
                f"[dim]{escape(meta.provider)}/{escape(meta.model)}  {escape(meta.cwd or 'cwd unknown')}  "
                f"{meta.message_count} messages  {context}  {billed}  {total_cost}[/]"
            )
            if meta.calls:  # every call behind the total, by what it was for
                console.print(f"[dim]calls: {escape(calls_line(meta.calls, tokens_known=meta.tokens_known))}[/]")
            console.print()
            if meta.parent_id:
                console.print(f"[dim]sub-agent of session {escape(meta.parent_id)}[/]\n")
            if children:
                # Sub-agents (the `task` tool): each is its own session; its cost is in the total above.
                console.print(f"[bold]sub-agents ({len(children)})[/]")
                for child in children:
                    cost = float(child.meta.get("cost_usd", 0.0) or 0.0)
                    count = int(child.meta.get("message_count", 0) or 0)
                    console.print(f"  {escape(child.id)}  {escape(child.title[:60])}  [dim]{count} messages  "
                                  f"${cost:.4f}[/]")
                console.print()
            # Messages are numbered as recorded, from 0: the numbers replay's `compact_before` takes.
            number = 0
            last: list[Message] = []
            for record in session.transcript.iter_records(strict=strict, on_bad=bad.append):
                if isinstance(record, MessageRecord):
                    _show_message(console, record.message, full, number)
                    number += 1
                    last = [record.message]
                elif isinstance(record, BoundaryRecord):
                    console.print(
                        Rule(
                            f"compaction ({record.trigger}): {boundary_sizes(record)}, "
                            f"{len(record.covers)} messages folded",
                            style="magenta",
                        )
                    )
                    console.print(escape(_clip(record.summary, full, 40)) + "\n")
                elif isinstance(record, EventRecord) and record.name == "cache_break":
                    console.print(f"[yellow]· {escape(_cache_break_line(record.data))}[/]")
                elif isinstance(record, EventRecord):
                    console.print(f"[dim]· {escape(record.name)}[/]")
            if pending_interrupted_answers(last) is not None:
                # The log ends inside a tool call: say so instead of leaving a call that seems to hang.
                console.print("[yellow]← no result recorded[/] [dim](the call is still running, or the session "
                              "stopped during it; resuming records it as interrupted)[/]\n")
            _warn(line.describe() for line in bad)
            if session.recovered is not None:
                _err().print(f"nova: warning: {session.recovered.describe()}", markup=False)
        finally:
            session.close()


def _warn(lines: "Iterable[str]") -> None:
    for line in lines:
        _err().print(f"nova: warning: {line}", markup=False)


app.command("search", cls=NovaCommand)(search_command)


@app.command("export", cls=NovaCommand)
def export_command(
    session_id: Annotated[str, typer.Argument(help="Session id, or `last`.")],
    fmt: Annotated[Literal["jsonl", "md", "markdown"], typer.Option(
        "--format", "-f", help="jsonl (the raw log, which `nova sessions import` reads back) or markdown (md).")
    ] = "jsonl",
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write here instead of stdout.")] = None,
    strict: StrictOpt = False,
) -> None:
    """Write the session as its raw JSONL log or as Markdown. Damaged records are left out with a
    warning naming their byte offsets; --strict refuses instead."""
    from nova.sessions.export import iter_jsonl, render_markdown

    with _errors():
        session = Session.open(nova_home(), _resolve(session_id, nova_home()), readonly=True, strict=strict)
        bad: list[BadLine] = []
        try:
            _warn(session.notices)
            if fmt == "jsonl":
                chunks = iter_jsonl(session, strict=strict, on_bad=bad.append)
                if output is None:
                    # The exact bytes into a pipe or a file; on a terminal, the same JSON with anything the
                    # terminal would act on escaped (lossless: it decodes to the same records).
                    shown = sys.stdout.isatty()
                    out = sys.stdout.buffer if hasattr(sys.stdout, "buffer") and not shown else None
                    for chunk in chunks:
                        if out is not None:
                            out.write(chunk)
                        else:
                            decoded = chunk.decode("utf-8")
                            sys.stdout.write(terminal_safe(decoded, json=True) if shown else decoded)
                    sys.stdout.flush()
                else:
                    with output.open("wb") as f:
                        for chunk in chunks:
                            f.write(chunk)
            else:
                text = render_markdown(session.meta, session.transcript.iter_records(strict=strict, on_bad=bad.append))
                if output is None:
                    sys.stdout.write(terminal_safe(text) if sys.stdout.isatty() else text)
                else:
                    output.write_text(text, encoding="utf-8")
            _warn(line.describe() for line in bad)
        finally:
            session.close()


@app.command("rm", cls=NovaCommand)
def rm_command(
    session_id: Annotated[str, typer.Argument(help="Session id, or `last`.")],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
) -> None:
    """Delete a session's directory and its stored messages (canonical task state is kept)."""
    home = nova_home()
    with _errors():
        person_only("nova sessions rm")
        session_id = _resolve(session_id, home)
        session = Session.open(home, session_id, readonly=True)  # validates before asking
        title = session.meta.title
        session.close()
        if not yes and not typer.confirm(f"Delete session {session_id} ({title or 'untitled'})?", default=False):
            _err().print("nova: not deleted", markup=False)
            raise typer.Exit(1)
        delete_session(home, session_id)
    _out().print(f"Deleted session {session_id}.", markup=False)


@app.command("import", cls=NovaCommand)
def import_command(
    path: Annotated[Path | None, typer.Argument(help="A recorded session: Claude Code, Codex, Gemini CLI, "
                                                "OpenCode, Cline / Roo Code, pi, Aider, OpenHands, mini-swe-agent, "
                                                "SWE-agent, OpenAI or Anthropic chat, or Nova; or a folder of them "
                                                "(every .jsonl, .json and .traj file and Aider history under it; "
                                                "files that are no session are passed over).")
                    ] = None,
    title: Annotated[str | None, typer.Option("--title", help="Title for the new session.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help='Print {"session_id", "messages"} (and '
                                          '"skipped", "children", "run" when there are any); with --from or '
                                          'a folder, or for a file of several runs (OpenHands output.jsonl), a '
                                          'list.')
                       ] = False,
    strict: Annotated[bool, typer.Option("--strict", help="Refuse the file when a record cannot be read "
                                         "instead of skipping it with a warning.")] = False,
    source: Annotated[str | None, typer.Option("--from", help="Import every session an agent kept for a "
                                               "project: claude-code.")] = None,
    project: Annotated[Path | None, typer.Option("--project", help="With --from: the project directory "
                                                 "(default: the current one).")] = None,
) -> None:
    """Import a recorded session from another agent (or a Nova export) as a new session; with --from,
    every session that agent kept for a project."""
    from nova.errors import NotASessionFile
    from nova.sessions.export import ImportResult, import_sessions

    with _errors():
        paths = _import_paths(path, source, project)
    # Several files (--from, a folder of sessions): each one's failure is said and the others imported.
    many = source is not None or paths != [path]
    # A walk of a folder (or of a project's Claude Code sessions) meets files that are no session at all
    # (a package.json, a Claude Code file of titles only): they are passed over and counted in one line.
    # A file a reader took and could not read is still said.
    results: list[tuple[Path, ImportResult]] = []
    failed = 0
    not_sessions: list[Path] = []
    done: set[Path] = set()
    for one in paths:
        if one in done:
            continue  # a sub-agent's file, already imported as a child of its session
        try:
            with _errors():
                try:
                    results.append((one, import_sessions(one, nova_home(), title=title, strict=strict)))
                except NotASessionFile:
                    if not many:
                        raise
                    not_sessions.append(one)
                    continue
            done.update(results[-1][1].child_sources)
        except typer.Exit:
            if not many:
                raise
            failed += 1  # said on stderr; the other sessions are still imported
    out = _out()
    documents = []
    for one, whole in results:
        for result in whole.runs():
            for line in result.skipped:
                typer.echo(terminal_safe(f"nova: warning: {one.name}: skipped {line}"), err=True)
            data: dict[str, Any] = {"session_id": result.session_id, "messages": result.messages}
            # Added only when there is something to say, so readers of the two-key object keep working.
            if result.skipped:
                data["skipped"] = len(result.skipped)
            if result.children:
                data["children"] = [{"session_id": c, "messages": n, "kind": kind}
                                    for (c, n), kind in zip(result.children, result.child_kinds, strict=True)]
            if result.run:
                data["run"] = result.run
            if many:
                data["source_path"] = str(one)
            documents.append(data)
            if not as_json:
                run = f" ({result.run})" if result.run else ""
                out.print(f"Imported {result.messages} messages from {one}{run} as session {result.session_id}.",
                          markup=False)
                if result.skipped:
                    out.print(f"Skipped {len(result.skipped)} record(s) that could not be read (see warnings).",
                              markup=False)
                for (child_id, count), kind in zip(result.children, result.child_kinds, strict=True):
                    out.print(f"  {kind}: {count} messages as session {child_id}.", markup=False)
                if result.sub_agent_of:
                    out.print(f"  note: this is a sub-agent's own file; the session that ran it "
                              f"({result.sub_agent_of}) was not imported with it, so it is a session of its own.",
                              markup=False, soft_wrap=True)
    if as_json:
        # A list for several files, or when the file held several runs; else the one object.
        typer.echo(json.dumps(documents if many or len(documents) != 1 else documents[0]))
    if not_sessions:
        folder = path if path is not None else Path(os.path.commonpath([p.parent for p in paths]))
        _say_not_sessions(folder, not_sessions, imported=bool(results or failed))
    if failed:
        raise typer.Exit(1)


def _say_not_sessions(folder: Path, files: list[Path], *, imported: bool) -> None:
    """One line for the files of a folder walk that are no session (a few named, relative to the folder);
    an error, exit 1, when the folder held nothing else."""
    names = [str(p.relative_to(folder)) if p.is_relative_to(folder) else str(p) for p in files]
    shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    one = len(files) == 1
    count = "1 file" if one else f"{len(files)} files"
    if imported:
        what = "is not a session" if one else "are not sessions"
        typer.echo(terminal_safe(f"nova: note: skipped {count} that {what} ({shown}); name one to see why"),
                   err=True)
        return
    typer.echo(terminal_safe(f"nova: error: no session in {folder}: its {count} ({shown}) "
                             f"{'is' if one else 'are'} in no session format Nova reads; name one to see why"),
               err=True)
    raise typer.Exit(1)


def _import_paths(path: Path | None, source: str | None, project: Path | None) -> list[Path]:
    if source is None:
        if path is None:
            raise NovaError("name a session file to import, or use --from claude-code [--project DIR]")
        if project is not None:
            raise NovaError("--project goes with --from")
        return _folder_paths(path) or [path]
    if path is not None:
        raise NovaError("give a file or --from, not both")
    if source != "claude-code":
        raise NovaError(f"--from knows claude-code, not {source!r}")
    from nova.sessions.readers.discover import claude_code_sessions

    config_dir = Path(os.environ.get("CLAUDE_CONFIG_DIR") or Path.home() / ".claude")
    where = (project or Path.cwd()).resolve()
    found = claude_code_sessions(config_dir, where)
    if not found:
        raise NovaError(f"no Claude Code sessions for {where} under {config_dir / 'projects'}")
    return found


def _folder_paths(path: Path) -> list[Path]:
    """The session files of a folder that is not itself one session (a Nova session folder, a Cline task
    folder); [] for anything else, which the readers take or refuse as one session."""
    from nova.sessions.readers import task_file
    from nova.sessions.readers.discover import folder_sessions

    if not path.is_dir() or task_file(path) != path or (path / "transcript.jsonl").exists():
        return []
    return folder_sessions(path)


@app.command("doctor", cls=NovaCommand)
def doctor_command(
    session_id: Annotated[str | None, typer.Argument(help="Session id, or `last`.")] = None,
    all_sessions: Annotated[bool, typer.Option("--all", help="Check every session.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON list of reports.")] = False,
) -> None:
    """Check sessions against their transcripts and rebuild what is derived (meta.json, the session
    store): reports damaged records by byte offset, meta.json mismatches and missing store rows, and
    what was done. Exit 1 when something could not be dealt with (a busy session, a missing transcript)."""
    from nova.sessions.doctor import check_session, check_store, session_ids

    home = nova_home()
    with _errors():
        if (session_id is None) == (not all_sessions):
            raise NovaError("name one session (ID or `last`) or pass --all")
        ids = session_ids(home) if all_sessions else [_resolve(session_id or "", home)]
        if not all_sessions:
            from nova.sessions.meta import session_dir

            if not session_dir(home, ids[0]).is_dir():
                raise NovaError(f"no session {ids[0]!r} in {home / 'sessions'}: `nova sessions list` shows the ids")
        store_check = check_store(home)
        try:
            reports = [check_session(home, sid, store_check.store) for sid in ids]
        finally:
            store_check.store.close()
    if as_json:
        typer.echo(json.dumps({"store": {"found": store_check.found, "did": store_check.did},
                               "sessions": [r.to_dict() for r in reports]}, ensure_ascii=False))
    else:
        out = _out()
        for line in store_check.found:
            out.print(f"store: found: {line}", markup=False)
        for line in store_check.did:
            out.print(f"store: did: {line}", markup=False)
        for r in reports:
            if not r.found and not r.did:
                out.print(f"{r.session_id}: ok", markup=False)
                continue
            for line in r.found:
                out.print(f"{r.session_id}: found: {line}", markup=False)
            for line in r.did:
                out.print(f"{r.session_id}: did: {line}", markup=False)
        if not reports:
            out.print("No sessions yet.", markup=False)
    if any(not r.ok for r in reports):
        raise typer.Exit(1)


def resume_command(session_id: str, *, home: Path | None = None, strict: bool = False) -> "Resumed":
    """For `nova resume ID` / `nova run --resume ID`: reopen, rebuild and repair the history, print the
    notices (torn tail quarantined, damaged records skipped, repairs) to stderr. Exits 1 with one clear
    line on bad input."""
    from nova.sessions.export import resume

    with _errors():
        resumed = resume(session_id, home=home or nova_home(), strict=strict)
    for notice in resumed.notices:
        _err().print(f"nova: {notice}", markup=False)
    return resumed
