"""`nova sessions search "…"`: search the project's past sessions (requests, replies, files edited and
read, commands, errors) the way the agent's `session_search` tool does, and show each hit with its
session and turn. The index catches up first, so a session recorded a moment ago is searched too."""

# No `from __future__ import annotations`: typer reads the signature at run time.
import json
from pathlib import Path
from typing import Annotated

import typer

from nova.cli.commands.errors import user_errors
from nova.settings import nova_home

__all__ = ["search_command"]

_KINDS = ("request", "reply", "edit", "read", "command", "error")
ENCODE_BUDGET_S = 30.0
"""Seconds one search may spend encoding a long history into vectors for the first time; the rest is
found by keyword and encoded by the next searches."""


def search_command(
    query: Annotated[str, typer.Argument(help="What to look for: a topic, a file name, a command.")],
    project: Annotated[Path | None, typer.Option(
        "--project", help="The project whose sessions to search: a folder, searched by its git root "
        "(default: the current folder).")] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, max=100, help="How many hits to show.")] = 10,
    kinds: Annotated[list[str] | None, typer.Option(
        "--kind", help=f"Only this kind of record (repeatable): {', '.join(_KINDS)}.")] = None,
    vectors: Annotated[bool, typer.Option(
        "--vectors/--no-vectors", help="Vector recall with the embeddings extra (on when it is installed).")] = True,
    as_json: Annotated[bool, typer.Option(
        "--json", help="Print one JSON object: query, project, vector, index {sessions, records, added, …}, "
        "hits [{evidence, session_id, session_title, turn, kind, text, message_id, at, score, scores, "
        "external, also_in}], stages, ms.")] = False,
) -> None:
    """Search the project's past sessions: what was asked, said, edited, run and failed, by session and
    turn. Only sessions recorded in this project (its git root, or the folder outside a repository) are
    searched."""
    from nova.errors import NovaError
    from nova.memory.retrieval.embed import load_encoder, unavailable_reason
    from nova.memory.retrieval.session_index import project_of
    from nova.memory.retrieval.sessions import SessionSearcher

    with user_errors(exit_code=1, os_errors=True):
        unknown = sorted(set(kinds or ()) - set(_KINDS))
        if unknown:
            raise NovaError(f"--kind {unknown[0]!r} is not a kind of record (one of {', '.join(_KINDS)})")
        where = (project or Path.cwd()).expanduser()
        if project is not None and not where.is_dir():
            # Imported sessions keep the folder they ran in on another machine: searching it is fine.
            typer.echo(f"nova: note: {where} is not a folder here; searching the sessions recorded there", err=True)
        encoder = load_encoder() if vectors else None
        why = unavailable_reason() if vectors and encoder is None else (None if vectors else "turned off (--no-vectors)")
        if why is not None and vectors:
            typer.echo(f"nova: vector recall is off: {why}; searching keywords only", err=True)
        with SessionSearcher(home=nova_home(), encoder=encoder, vector_off_reason=why) as searcher:
            result = searcher.search(query, project=project_of(where), limit=limit, kinds=kinds or (),
                                     encode_budget_s=ENCODE_BUDGET_S)
    if result.index.without_vectors:
        typer.echo(f"nova: note: {result.index.without_vectors} record(s) have no vector yet (found by keyword "
                   "only); the next searches encode them", err=True)
    if as_json:
        typer.echo(json.dumps(result.to_json(), ensure_ascii=False, default=str))
        return
    from rich.console import Console
    from rich.markup import escape

    console = Console(highlight=False, soft_wrap=True)
    index = result.index
    console.print(f"{index.sessions} session(s) of {result.project}: {index.records} records ({index.added} new); "
                  f"vector recall {result.vector}", markup=False, style="dim")
    if not result.hits:
        console.print(f"No past session of this project matches {query!r}.", markup=False)
        return
    for rank, hit in enumerate(result.hits, 1):
        text = " ".join(hit.text.split())
        title = f" ({escape(hit.session_title)})" if hit.session_title else ""
        also = f" [dim]· the same in {len(hit.also)} more[/]" if hit.also else ""
        console.print(f"[bold]{rank}.[/] session {escape(hit.session_id)}{title} · turn {hit.turn} · "
                      f"[cyan]{hit.kind}[/] [dim]{hit.score:.3f}[/]{also}")
        console.print("   " + escape(text if len(text) <= 240 else text[:239] + "…"))
    console.print("Past evidence: what was asked and done then, which may have changed since.", style="dim",
                  markup=False)
