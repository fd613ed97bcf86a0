"""`nova resume` with the session or the request left out: at a terminal, a numbered list of this
project's recent sessions (nova.sessions.recent, the rows the TUI's `/resume` shows) and then a line for
the next request; in a script, a usage error that says how to name a session.

    Resume which session of /home/me/project?
      1. 20260301-101500-ab12cd · Fix the failing test · 12 messages · 2 h ago
      2. …
    Number (Enter: 1, q: cancel): 2
    Next request: what did you change?

One argument that names a session (or `last`) is that session, and only the request is asked for; one
that names none is the request, and the session is chosen from the list.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import IO

import typer
from rich.console import Console
from rich.markup import escape
from typer._click.exceptions import UsageError  # typer's own click: what its commands report as usage

from nova.cli.commands.terminal_approval import is_interactive_terminal
from nova.present.text import terminal_safe
from nova.sessions.meta import SessionMeta
from nova.sessions.recent import picker_line, recent_sessions
from nova.sessions.session import list_sessions
from nova.settings import nova_home

__all__ = ["complete_resume"]

_HOW = ('name the session to continue: `nova resume ID "next request"` or `nova resume last "next request"` '
        "(`nova sessions list` shows the IDs)")


def complete_resume(session_id: str | None, prompt: str | None, *, stdin: IO[str] | None = None,
                    console: Console | None = None, cwd: Path | None = None) -> tuple[str, str]:
    """The session and the request to resume with: as given, or asked for at a terminal."""
    if session_id is not None and prompt is not None:
        return session_id, prompt
    where = (cwd or Path.cwd()).resolve()
    metas, _ = list_sessions(nova_home())
    if session_id is not None and session_id != "last" and session_id not in {m.id for m in metas}:
        session_id, prompt = None, session_id  # one argument that is no session: it is the request
    interactive = is_interactive_terminal()
    recent = recent_sessions(metas, where)
    if not interactive:
        if session_id is not None:
            raise UsageError(f'the next request is missing: `nova resume {session_id} "next request"`')
        listed = "".join(f"\n  {terminal_safe(picker_line(m))}" for m in recent)
        raise UsageError(f"{_HOW}." + (f" Recent sessions of {where}:{listed}" if listed else
                                             f" No session was recorded in {where}."))
    out = console or Console(stderr=True, highlight=False)
    reader = stdin or sys.stdin
    if session_id is None:
        session_id = _pick(recent, where, out, reader)
    if prompt is None:
        prompt = _ask(out, reader, "Next request: ")
    return session_id, prompt


def _pick(recent: list[SessionMeta], where: Path, out: Console, reader: IO[str]) -> str:
    if not recent:
        out.print(f"No session was recorded in {escape(str(where))}: start one with `nova run \"…\"` or {_HOW}.")
        raise typer.Exit(1)
    out.print(f"Resume which session of {escape(terminal_safe(str(where)))}?")
    for n, meta in enumerate(recent, start=1):
        out.print(f"  [bold]{n}.[/] {escape(terminal_safe(picker_line(meta)))}", soft_wrap=True)
    while True:
        answer = _ask(out, reader, f"Number (Enter: 1, q: cancel) [1-{len(recent)}]: ").strip().lower()
        if answer in ("q", "quit"):
            _cancelled(out)
        if not answer:
            return recent[0].id
        if answer.isdigit() and 1 <= int(answer) <= len(recent):
            return recent[int(answer) - 1].id
        out.print(f"  [red]{escape(answer)} is not a number from 1 to {len(recent)}[/]")


def _ask(out: Console, reader: IO[str], question: str) -> str:
    out.print(question, end="")
    try:
        line = reader.readline()
    except KeyboardInterrupt:
        line = ""
    if not line:  # end of input or Ctrl-C: nothing chosen
        out.print()
        _cancelled(out)
    return line.rstrip("\n")


def _cancelled(out: Console) -> None:
    out.print("Nothing resumed.")
    raise typer.Exit(1)
