"""`nova trust`: what this project asks Nova to run (its `.mcp.json` servers, skills with scripts), and
the user's approval of it, once per project and content (nova.tools.policy.trust).

Mounted lazily by `nova.cli.main` as `nova trust`; `nova run` in a terminal asks the same question
before a session starts (`offer_trust`). Approving is one of Nova's controls: refused when started by a
command the model ran (nova.tools.policy.controls); listing is not.
"""

# No `from __future__ import annotations`: typer reads the command signature when the command runs.
import json
import os
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from nova.agent.project_trust import project_items
from nova.cli.commands.errors import user_errors
from nova.cli.commands.global_options import global_overrides
from nova.errors import NovaError
from nova.memory.paths import project_root
from nova.settings import Settings, load_settings
from nova.tools.policy.controls import require_person
from nova.tools.policy.trust import TrustItem, TrustStore

__all__ = ["offer_trust", "trust_command"]


def _describe(item: TrustItem, status: str) -> str:
    what = "MCP server" if item.kind == "mcp" else "skill"
    return f"[{status}] {what} {item.name}: {item.runs}  ({item.source})"


def offer_trust(settings: Settings, cwd: Path, console: Console) -> None:
    """Before a session in a terminal: list what the project would run that is not trusted yet and ask
    once whether to trust it (the answer is remembered for this content). Saying no starts the session
    without it."""
    store = TrustStore(settings.home)
    root = project_root(cwd)
    pending = store.untrusted(root, project_items(settings, cwd))
    if not pending:
        return
    console.print(f"This project ({root}) would run code Nova has not been told to trust:", markup=False)
    for item in pending:
        console.print("  " + _describe(item, store.status(root, item)), markup=False, soft_wrap=True)
    console.print("Trust and run it, now and in later sessions until it changes? [y/N] ", end="", markup=False)
    try:
        answer = sys.stdin.readline().strip().lower()
    except (OSError, ValueError):
        answer = ""
    if answer in ("y", "yes"):
        require_person("nova trust", settings.home)
        store.trust(root, pending)
        console.print("trusted.", markup=False)
    else:
        console.print("not trusted: the session starts without it (`nova trust` to review later).", markup=False)


def trust_command(
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Trust everything listed without asking.")] = False,
    list_only: Annotated[bool, typer.Option("--list", "-l", help="Only list; change nothing.")] = False,
    revoke: Annotated[bool, typer.Option("--revoke", help="Forget every approval for this project.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the list as JSON.")] = False,
) -> None:
    """List what this project would run (its .mcp.json servers, skills with scripts) and trust it.

    Each item is trusted once per project and content: a changed entry or script is asked about again.
    Until then a session leaves it out and says so. In a terminal Nova asks; elsewhere pass --yes after
    reviewing the list.
    """
    console = Console(highlight=False, soft_wrap=True)
    with user_errors():
        settings = load_settings(env=dict(os.environ), overrides=global_overrides())
        cwd = Path.cwd()
        root = project_root(cwd)
        store = TrustStore(settings.home)
        if revoke:
            require_person("nova trust --revoke", settings.home)
            count = store.revoke(root)
            console.print(f"forgot {count} approval(s) for {root}", markup=False)
            return
        items = project_items(settings, cwd)
        statuses = [(item, store.status(root, item)) for item in items]
        if as_json:
            print(json.dumps({"project": str(root), "items": [
                {"kind": i.kind, "name": i.name, "runs": i.runs, "source": str(i.source), "status": status,
                 "digest": i.digest} for i, status in statuses]}, indent=2))
        elif not items:
            console.print(f"{root} asks to run nothing that needs trust (no .mcp.json servers, no skills with "
                          "scripts).", markup=False)
        else:
            for item, status in statuses:
                console.print(_describe(item, status), markup=False)
        pending = [item for item, status in statuses if status != "trusted"]
        if list_only or not pending:
            return
        require_person("nova trust", settings.home)
        if not yes:
            if not (sys.stdin.isatty() and sys.stdout.isatty()):
                raise NovaError(f"{len(pending)} item(s) not trusted; review the list, then run `nova trust --yes` "
                                "to trust them")
            console.print(f"Trust these {len(pending)} for {root}? [y/N] ", end="", markup=False)
            if sys.stdin.readline().strip().lower() not in ("y", "yes"):
                console.print("nothing trusted.", markup=False)
                return
        store.trust(root, pending)
        if not as_json:
            console.print(f"trusted {len(pending)} item(s) for {root}", markup=False)
