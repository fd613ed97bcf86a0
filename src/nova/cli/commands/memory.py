"""`nova memory …` and `nova rules`: the human side of the memory stores.

Mounted lazily by `nova.cli.main` as `nova memory` (the typer `app`) and `nova rules` (`rules_command`).
Environment variables (NOVA_HOME, EDITOR) are read here, at the edge.
"""

# No `from __future__ import annotations`: typer reads the command signatures each time the command
# runs, and string annotations would be evaluated again each time.
import json
import os
import shlex
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from nova.cli.commands.errors import user_errors
from nova.cli.commands.global_options import global_overrides
from nova.cli.commands.memory_search import search_command
from nova.cli.commands.person import person_only
from nova.cli.commands.typer_classes import NovaCommand, command_group
from nova.errors import NovaError
from nova.memory.config import MemoryConfig, parse_memory_config
from nova.memory.consolidate import Consolidator
from nova.memory.governance import Proposal, remember
from nova.memory.instructions import instruction_search_places, load_rules, parse_instructions_config
from nova.memory.ladder import Ladder, PromotionRefused, rule_line
from nova.memory.paths import project_root
from nova.memory.provenance import reinstate, revoke
from nova.memory.secrets import describe_findings, find_secrets
from nova.memory.store import (
    Memory,
    MemoryStore,
    atomic_write_text,
    memory_from_text,
    memory_to_text,
    parse_time,
)
from nova.memory.trash import Trash
from nova.present.terminal import terminal_console
from nova.present.text import terminal_safe
from nova.settings import Settings, load_settings

__all__ = ["app", "rules_command"]

app = command_group("Long-term memory: list, inspect, search, add, edit, approve, forget, promote, consolidate, "
                    "undo.")
console = terminal_console(highlight=False)
err_console = terminal_console(stderr=True, highlight=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class _Context:
    settings: Settings
    config: MemoryConfig
    store: MemoryStore


def _context() -> _Context:
    settings = load_settings(env=dict(os.environ), overrides=global_overrides())
    config = parse_memory_config(settings.section("memory"), source=f"{settings.config_file} [memory]")
    store = MemoryStore.for_workspace(home=settings.home, cwd=Path.cwd(), index_max_lines=config.index_max_lines,
                                      index_max_bytes=config.index_max_bytes)
    return _Context(settings=settings, config=config, store=store)


@app.command("list", cls=NovaCommand)
def list_command(
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON list of objects.")] = False,
) -> None:
    """List every memory in the user and project directories. The status is Nova's, from its review
    records, not what a file claims: a candidate needs your review before it is recalled."""
    with user_errors():
        ctx = _context()
        memories = sorted(ctx.store.memories(), key=lambda m: (m.type, m.name))
    if as_json:
        ladder = Ladder(ctx.store.home_dir)
        rows = [{"name": m.name, "type": m.type, "path": str(m.path), "status": m.status,
                 "description": m.description, "author": m.author, "updated": m.updated.isoformat(),
                 "review": m.review_note or None, **governance_fields(m, ladder)}
                for m in memories]
        typer.echo(terminal_safe(json.dumps(rows, ensure_ascii=False, indent=2), json=True))
        return
    if not memories:
        console.print("No memories. Add one with `nova memory add --type user --name NAME TEXT`.", markup=False)
        return
    table = Table()
    # A name is what `nova memory show/approve/forget` take and a path is where the file is: on a narrow
    # terminal they go on in the next line, never cut to "prefers-pytest-ov…".
    for column in ("name", "type", "status", "description", "path"):
        table.add_column(column, overflow="fold")
    for m in memories:
        table.add_row(*map(escape, (m.name, m.type, m.status, m.description, str(m.path))))
    console.print(table)
    waiting = [m for m in memories if m.status == "candidate"]
    for m in waiting:
        console.print(f"needs review: {m.name!r}: {m.review_note or 'awaiting review'}", markup=False,
                      soft_wrap=True)
    if waiting:
        console.print(f"{len(waiting)} candidate(s) are not recalled until approved: `nova memory show NAME`, "
                      "then `nova memory approve NAME` (or `--all-listed` for every one above).", markup=False,
                      soft_wrap=True)


@app.command("show", cls=NovaCommand)
def show_command(
    name: str,
    as_json: Annotated[bool, typer.Option("--json", help="Print the memory with its governance fields and "
                                                         "its rung on the promotion ladder.")] = False,
) -> None:
    """Print one memory file (and, on stderr, why it needs review when it does)."""
    with user_errors():
        ctx = _context()
        memory = ctx.store.get(name)
        assert memory.path is not None
        if as_json:
            row = {"name": memory.name, "type": memory.type, "path": str(memory.path), "status": memory.status,
                   "description": memory.description, "body": memory.body, "author": memory.author,
                   "created": memory.created.isoformat(), "updated": memory.updated.isoformat(),
                   "review": memory.review_note or None, **governance_fields(memory, Ladder(ctx.store.home_dir))}
            typer.echo(terminal_safe(json.dumps(row, ensure_ascii=False, indent=2), json=True))
            return
        text = memory.path.read_text(encoding="utf-8")
        # The file as it is for a pipe; made visible for a person (a memory is text a model may have written).
        typer.echo(terminal_safe(text) if sys.stdout.isatty() else text, nl=False)
        standing = Ladder(ctx.store.home_dir).standing(memory)
        err_console.print(f"nova: ladder: {standing.rung}" + (f"; next {standing.next} needs: "
                          f"{'; '.join(standing.missing)}" if standing.next else ""), markup=False, soft_wrap=True)
    if memory.status == "candidate":
        err_console.print(f"nova: {memory.name!r} is a candidate, not recalled: "
                          f"{memory.review_note or 'awaiting review'}", markup=False, soft_wrap=True)


@app.command("add", cls=NovaCommand)
def add_command(
    text: Annotated[str, typer.Argument(help="The memory itself.")],
    memory_type: Annotated[str, typer.Option("--type", help="user, feedback, project or reference.")],
    name: Annotated[str, typer.Option("--name", help="A short name; the file is named after it.")],
    description: Annotated[str, typer.Option("--description", help="One line; default: the text's first line.")] = "",
    expires: Annotated[str, typer.Option("--expires", help="ISO date or time after which it is not recalled.")] = "",
) -> None:
    """Add a memory (you are the author, so it is active at once). A refused write exits 1."""
    with user_errors():
        person_only("nova memory add")
        ctx = _context()
        expiry = parse_time(expires) if expires else None
        if expires and expiry is None:
            err_console.print(f"nova: refused: --expires {expires!r} is not an ISO date or time", markup=False)
            raise typer.Exit(1)
        first_line = text.strip().splitlines()[0][:120] if text.strip() else ""
        proposal = Proposal(name=name, description=description or first_line, type=memory_type, body=text,
                            author="user", origin="cli", expires=expiry)
        outcome = remember(ctx.store, proposal, config=ctx.config)
    if outcome.refused or outcome.memory is None:
        err_console.print(f"nova: refused: {outcome.refused}", markup=False, soft_wrap=True)
        raise typer.Exit(1)
    verb = "updated" if outcome.merged else "added"
    console.print(f"{verb} {outcome.memory.type} memory {outcome.memory.name!r} ({outcome.memory.status}): "
                  f"{outcome.memory.path}", markup=False)
    for note in outcome.notes:
        console.print(f"  {note}", markup=False, soft_wrap=True)


@app.command("edit", cls=NovaCommand)
def edit_command(name: str) -> None:
    """Open a memory in $EDITOR; an edit that breaks the frontmatter or adds a secret is rolled back.
    Your edit keeps the memory's review state (change `status:` in the editor to change it)."""
    with user_errors():
        person_only("nova memory edit")
        ctx = _context()
        memory = ctx.store.get(name)
        assert memory.path is not None
        before = memory.path.read_text(encoding="utf-8")
        editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
        subprocess.run([*shlex.split(editor), str(memory.path)], check=False)
        after = memory.path.read_text(encoding="utf-8")
        problem = None
        edited = None
        try:
            edited = memory_from_text(after, path=memory.path)
        except NovaError as exc:
            problem = str(exc)
        findings = find_secrets(after) if problem is None else []
        if findings:
            problem = f"the edit adds a secret ({describe_findings(findings)}); secrets are never stored in memory"
        if problem or edited is None:
            memory.path.write_text(before, encoding="utf-8")
            err_console.print(f"nova: refused: {problem}; the file was restored", markup=False)
            raise typer.Exit(1)
        # The user's own edit is reviewed text; its status is the one it had unless the user changed it.
        claimed_before = memory_from_text(before, path=memory.path).status
        status = edited.status if edited.status != claimed_before else memory.status
        if after != before:
            # An edit is an update: stamped so, the edited text is the newest, which is the one a
            # consolidation keeps (and MEMORY.md lists first).
            edited = replace(edited, updated=ctx.store.clock())
            atomic_write_text(memory.path, memory_to_text(edited))
        ctx.store.reviews.record(replace(edited, status=status), by="user", note=memory.review_note)
        ctx.store.rebuild_index(memory.path.parent)


@app.command("forget", cls=NovaCommand)
def forget_command(
    name: str,
    purge: Annotated[bool, typer.Option("--purge", help="Delete the file instead of revoking it.")] = False,
) -> None:
    """Revoke a memory: it is never recalled again, the model cannot re-create it, and summaries or
    task state that quoted it are rebuilt without its text in their next view."""
    with user_errors():
        person_only("nova memory forget")
        store = _context().store
        report = revoke(store, name)
        if purge:
            store.delete(name)
    for line in report.describe():
        console.print(line, markup=False, soft_wrap=True)
    if purge:
        console.print(f"deleted the file of {report.name!r} (its text stays in Nova's revocation record, so "
                      "it is still redacted from views)", markup=False, soft_wrap=True)


@app.command("approve", cls=NovaCommand)
def approve_command(
    names: Annotated[list[str] | None, typer.Argument(help="Memories to approve.")] = None,
    all_listed: Annotated[bool, typer.Option("--all-listed", help="Approve every candidate `nova memory list` "
                                                                  "shows as needing review.")] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask before approving --all-listed.")] = False,
) -> None:
    """Approve memories: exactly their current content becomes active and can be recalled. A later
    change to a file outside Nova makes it a candidate again."""
    with user_errors():
        person_only("nova memory approve")
        store = _context().store
        if all_listed:
            chosen = [m.name for m in sorted(store.memories(), key=lambda m: (m.type, m.name))
                      if m.status == "candidate"]
            if not chosen:
                console.print("nothing needs review", markup=False)
                return
            for name in chosen:
                console.print(f"  {name}", markup=False)
            if not yes and not typer.confirm(f"Approve these {len(chosen)} memories as they are now?", default=False):
                raise typer.Exit(1)
        else:
            chosen = list(names or [])
            if not chosen:
                err_console.print("nova: name a memory to approve, or pass --all-listed", markup=False)
                raise typer.Exit(2)
        for name in chosen:
            memory = store.set_status(name, "active")
            reinstate(store, memory.name)
            console.print(f"approved {memory.name!r}", markup=False)


@app.command("promote", cls=NovaCommand)
def promote_command(
    name: str,
    to: Annotated[str, typer.Option("--to", help="lesson, skill or standard.")],
    test: Annotated[str, typer.Option("--test", help="A command to run (no shell) as the skill's test; its "
                                                     "exit code is recorded.")] = "",
    add_to_rules: Annotated[bool, typer.Option("--add-to-rules", help="With --to standard: append it to the "
                                                                      "project's NOVA.md as a rule.")] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask before promoting to standard.")] = False,
) -> None:
    """Promote a memory up the ladder: episode note -> lesson (seen in 2 sessions, or approved) -> skill
    (a test passed) -> standard (a person reviewed it; only a standard may become a rule). Refused,
    exit 1, naming what is missing, when any rung up to the target lacks its evidence."""
    with user_errors():
        person_only("nova memory promote")
        ctx = _context()
        memory = ctx.store.get(name)
        ladder = Ladder(ctx.store.home_dir)
        if to == "standard" and not yes:
            console.print(memory.body, markup=False, soft_wrap=True)
            if not typer.confirm(f"Make {memory.name!r} a reviewed standard (it may then become a rule)?",
                                 default=False):
                raise typer.Exit(1)
        try:
            standing = ladder.promote(memory, to, by="user", test=test, cwd=Path.cwd())  # type: ignore[arg-type]
        except PromotionRefused as exc:
            err_console.print(f"nova: refused: {exc}", markup=False, soft_wrap=True)
            raise typer.Exit(1) from None
        console.print(f"{memory.name!r} is now a {standing.rung}", markup=False)
        if add_to_rules:
            if standing.rung != "standard":
                err_console.print("nova: refused: only a standard may become a rule", markup=False)
                raise typer.Exit(1)
            target = project_root(Path.cwd()) / "NOVA.md"
            existing = target.read_text(encoding="utf-8") if target.is_file() else ""
            line = rule_line(memory)
            if line not in existing:
                heading = "" if "## Standards" in existing else "\n## Standards\n\n"
                atomic_write_text(target, existing.rstrip("\n") + ("\n" if existing else "") + heading + line + "\n")
            console.print(f"added to the rules in {target}", markup=False)


app.command("search", cls=NovaCommand)(search_command)


@app.command("consolidate", cls=NovaCommand)
def consolidate_command(
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Merge duplicate memories and delete expired ones now (skips the time gates, not the lock)."""
    with user_errors():
        person_only("nova memory consolidate")
        ctx = _context()
        report = Consolidator.for_home(store=ctx.store, home=ctx.settings.home, config=ctx.config).run()
    if as_json:
        typer.echo(json.dumps({"ran": report.ran, "reason": report.reason, "merged": report.merged,
                               "deleted": report.deleted, "held": report.held, "skipped": report.skipped},
                              ensure_ascii=False))
    else:
        console.print(f"{report.reason}: {len(report.merged)} merged, {len(report.deleted)} deleted, "
                      f"{len(report.held)} left for review", markup=False)
        for line in report.describe():
            console.print(f"  {line}", markup=False, soft_wrap=True)
    if not report.ran:
        raise typer.Exit(1)


@app.command("undo", cls=NovaCommand)
def undo_command(
    operation: Annotated[str, typer.Argument(help="The id `nova memory consolidate` printed; default: the "
                                                  "latest.")] = "",
    list_only: Annotated[bool, typer.Option("--list", help="List what can be undone (30 days).")] = False,
) -> None:
    """Undo a consolidation merge or deletion (kept 30 days). Files changed since are never overwritten."""
    with user_errors():
        person_only("nova memory undo")
        ctx = _context()
        trash = Trash(ctx.store.home_dir)
        if list_only:
            ops = trash.operations()
            if not ops:
                console.print("nothing to undo: the consolidation trash is empty", markup=False)
            for op in ops:
                console.print(op.describe(), markup=False, soft_wrap=True)
            return
        report = trash.undo(ctx.store, operation or None)
    for line in report.describe():
        console.print(line, markup=False, soft_wrap=True)


def governance_fields(memory: Memory, ladder: Ladder) -> dict[str, object]:
    """What MEM-7 and MEM-8 keep for a memory, as JSON: provenance, scope, validity, evidence, rung."""
    return {"scope": memory.scope, "expires": memory.expires.isoformat() if memory.expires else None,
            "source": {"session": memory.source.session, "messages": list(memory.source.messages),
                       "tool_calls": list(memory.source.tool_calls), "origin": memory.source.origin},
            "external": memory.external, "reason": memory.reason, "evidence": list(memory.evidence),
            "ladder": ladder.standing(memory).to_dict()}


def rules_command(
    as_json: Annotated[bool, typer.Option("--json", help="Print the chain as JSON.")] = False,
) -> None:
    """Show the resolved instruction chain: each file, who imported it, its tokens, and what was skipped."""
    from nova.agent.builder import SYSTEM_CONTRACT
    from nova.agent.rules_tokens import rules_tokens

    with user_errors():
        settings = load_settings(env=dict(os.environ), overrides=global_overrides())
        config = parse_instructions_config(settings.section("instructions"),
                                           source=f"{settings.config_file} [instructions]")
        rules = load_rules(cwd=Path.cwd(), home=settings.home, config=config)
        places = instruction_search_places(cwd=Path.cwd(), home=settings.home, config=config)
        # Each file's tokens as `nova context` counts its segment (the model's counter, with its heading).
        counted = rules_tokens(settings=settings, cwd=Path.cwd(), contract=SYSTEM_CONTRACT)
    files = [replace(f, tokens=counted.get(f.path, f.tokens)) for f in rules.files]
    if as_json:
        report = {**replace(rules, files=tuple(files)).report(), "searched": [str(path) for path, _ in places]}
        typer.echo(terminal_safe(json.dumps(report, ensure_ascii=False, indent=2), json=True))
        return
    if not rules.files and not rules.skipped:
        _say_where_rules_go(places, config_file=settings.config_file)
        return
    table = Table()
    for column in ("file", "imported by"):
        table.add_column(column, overflow="fold")  # a path cut short names no file
    table.add_column("tokens", justify="right")
    for f in files:
        table.add_row(escape(str(f.path)), escape(str(f.imported_by or "-")), str(f.tokens))
    console.print(table)
    console.print(f"total {sum(f.tokens for f in files):,} tokens in the context, as `nova context` counts them "
                  f"({settings.model}); against the instruction budget the files' text alone counts "
                  f"{rules.tokens:,} of {rules.token_budget:,}", markup=False, soft_wrap=True)
    for f in files:
        if f.redacted:
            console.print(f"redacted in {f.path}: {', '.join(f.redacted)} (replaced before the model sees it)",
                          markup=False, soft_wrap=True)
    for s in rules.skipped:
        console.print(f"skipped {s.path}: {s.reason}", markup=False, soft_wrap=True)


_PLACE_NOTES = {"user": "your rules for every project", "project": "from the git root down to here",
                "local": "this folder only; keep it out of version control"}


def _say_where_rules_go(places: "Sequence[tuple[Path, str]]", *, config_file: Path) -> None:
    """No instruction file anywhere: name every file looked for (one line per folder) and how to add one."""
    folders: dict[tuple[Path, str], list[str]] = {}
    for path, kind in places:
        folders.setdefault((path.parent, kind), []).append(path.name)
    console.print("No instruction files found. Nova looked for:", markup=False)
    for (folder, kind), names in folders.items():
        shown = names[0] if len(names) == 1 else "{" + ", ".join(names) + "}"
        console.print(f"  {folder / shown}  ({_PLACE_NOTES.get(kind, kind)})", markup=False, soft_wrap=True)
    console.print("Add one to give the agent standing rules, e.g.\n"
                  "  printf '# Rules\\n- Run the tests with pytest before saying done.\\n' > NOVA.md\n"
                  f"Other file names go in `instructions.project_files` in {config_file}.",
                  markup=False, soft_wrap=True)
