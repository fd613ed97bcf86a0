"""What a project would run that needs the user's trust first: its `.mcp.json` servers and skills with
scripts (nova.tools.policy.trust). `nova trust`, `nova run` and the terminal UI all list it from here;
`start_warnings` is what a surface shows a person before the first turn (no sandbox, untrusted code)."""

from __future__ import annotations

from pathlib import Path

from nova.agent.builder import unconfined_reason
from nova.mcp.setup import configured_servers, project_server_items
from nova.memory.paths import project_root
from nova.settings import Settings
from nova.skills.catalog import load_catalog, skill_trust_item
from nova.tools.policy.trust import TrustItem, TrustStore

__all__ = ["project_items", "start_warnings", "untrusted_items"]


def project_items(settings: Settings, cwd: Path) -> list[TrustItem]:
    """Everything the project in `cwd` would run that needs the user's trust, sorted by kind and name."""
    items = project_server_items(configured_servers(settings, cwd))
    catalog = load_catalog(cwd=cwd, home=settings.home)
    items += [item for item in (skill_trust_item(s) for s in catalog.sorted()) if item is not None]
    return sorted(items, key=lambda i: (i.kind, i.name))


def untrusted_items(settings: Settings, cwd: Path) -> list[TrustItem]:
    return TrustStore(settings.home).untrusted(project_root(cwd), project_items(settings, cwd))


def start_warnings(settings: Settings, cwd: Path) -> list[str]:
    """One sentence each: commands will run without a sandbox, and what of the project's is left out
    until trusted (`nova trust`)."""
    warnings: list[str] = []
    problem = unconfined_reason(settings)
    if problem is not None:
        warnings.append(f"No sandbox: {problem}. Every command that is not read-only needs your approval, "
                        "whatever the allow rules say (install bubblewrap, or set sandbox to off).")
    pending = untrusted_items(settings, cwd)
    if pending:
        names = ", ".join(f"{'MCP server' if i.kind == 'mcp' else 'skill'} {i.name}" for i in pending)
        warnings.append(f"Not trusted for this project, so left out: {names}. Review them, then run `nova trust` "
                        f"in {project_root(cwd)}.")
    return warnings
