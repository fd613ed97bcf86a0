"""`nova skills …`: the skills a session in this directory would see, their versions and their tests.

Mounted lazily by `nova.cli.main` as `nova skills`. Skills are read from `.nova/skills/` and `.claude/skills/`
in the project and `$NOVA_HOME/skills/` (nova.skills.catalog).
"""

# No `from __future__ import annotations`: typer reads the command signatures when the command runs.
import json
import os
import subprocess
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from nova.cli.commands.errors import user_errors
from nova.cli.commands.person import person_only
from nova.cli.commands.typer_classes import NovaCommand, command_group
from nova.errors import SkillError
from nova.present.terminal import terminal_console
from nova.settings import load_settings
from nova.skills.catalog import SkillCatalog, describe_versions, load_catalog, restore, retire
from nova.skills.manifest import Skill
from nova.tools.policy.trust import TrustStore

__all__ = ["app"]

app = command_group("Skills: list, show, test, retire and roll back versions.")
console = terminal_console(highlight=False, soft_wrap=True)
TEST_TIMEOUT_S = 120.0
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]


def _home() -> Path:
    return load_settings(env=dict(os.environ)).home


def _catalog() -> tuple[SkillCatalog, Path]:
    home = _home()
    return load_catalog(cwd=Path.cwd(), home=home), home


@app.command("list", cls=NovaCommand)
def list_command(as_json: JsonOpt = False) -> None:
    """Every skill in use here: name, version, where it comes from, and its one-line description (the
    index line the model always sees). Skills that could not be read are listed after them."""
    with user_errors():
        catalog, _ = _catalog()
        if as_json:
            print(json.dumps({"skills": [s.to_dict() for s in catalog.sorted()], "problems": list(catalog.problems),
                              "shadowed": list(catalog.shadowed)}, indent=2))
            return
        if not catalog.skills:
            console.print("No skills. Put a folder with a SKILL.md in .nova/skills/ (or .claude/skills/) of the "
                          "project, or in $NOVA_HOME/skills/.", markup=False)
        else:
            table = Table(box=None, pad_edge=False)
            table.add_column("name", overflow="fold")  # what `nova skills show NAME` takes, never cut
            for column in ("version", "scope", "description"):
                table.add_column(column)
            for skill in catalog.sorted():
                table.add_row(*map(escape, (skill.name, skill.version or f"({skill.digest})", skill.scope,
                                            skill.index_line()[2:].split(": ", 1)[1])))
            console.print(table)
        for problem in catalog.problems:
            console.print(f"unreadable: {problem}", markup=False)
        for line in catalog.shadowed:
            console.print(f"shadowed: {line}", markup=False)


@app.command("show", cls=NovaCommand)
def show_command(
    name: Annotated[str, typer.Argument(help="The skill's name.")],
    as_json: JsonOpt = False,
) -> None:
    """A skill's manifest (version, triggers, capabilities, tools, permissions, source, review, tests),
    its versions on disk, and its body as the model would load it."""
    with user_errors():
        catalog, home = _catalog()
        versions = describe_versions(catalog, home, name)
        skill = catalog.get(name)
        if skill is None and not versions:
            catalog.require(name)
        if as_json:
            print(json.dumps({"skill": skill.to_dict(body=True) if skill else None, "versions": versions}, indent=2))
            return
        if skill is None:
            console.print(f"{name}: every version is retired (`nova skills restore {name} --version V`)", markup=False)
        else:
            _show(skill)
        console.print("\nversions:", markup=False)
        for v in versions:
            marks = ", ".join(m for m, on in (("in use", v["in_use"]), ("retired", v["retired"])) if on)
            console.print(f"  {v['version']}{f'  ({marks})' if marks else ''}  {v['path']}", markup=False)


def _show(skill: Skill) -> None:
    perms = skill.permissions
    lines = [f"{skill.name} {skill.version or ''}".rstrip() + f"  [{skill.scope}]  {skill.path}",
             f"description: {skill.description}"]
    for label, value in (("triggers", skill.triggers), ("capabilities", skill.capabilities),
                         ("required tools", skill.required_tools)):
        if value:
            lines.append(f"{label}: {', '.join(value)}")
    if perms.declared:
        lines.append("while active, at most: " + "; ".join(_limits(skill)))
    else:
        lines.append("while active: no limits declared (the ordinary permission policy applies)")
    if skill.source:
        lines.append(f"source: {skill.source}")
    if skill.review:
        lines.append("review: " + ", ".join(f"{k}: {v}" for k, v in skill.review.items()))
    for test in skill.tests:
        lines.append(f"test {test.name}: {test.run}")
    console.print("\n".join(lines), markup=False)
    console.print("\n" + skill.body, markup=False)


def _limits(skill: Skill) -> list[str]:
    p = skill.permissions
    out = []
    if p.tools is not None:
        out.append(f"tools {', '.join(sorted(p.tools)) or 'none'}")
    if p.network is not None:
        out.append("network" if p.network else "no network")
    if p.read is not None:
        out.append(f"read {', '.join(p.read) or 'nothing'}")
    if p.write is not None:
        out.append(f"write {', '.join(p.write) or 'nothing'}")
    return out


@app.command("test", cls=NovaCommand)
def test_command(
    name: Annotated[str | None, typer.Argument(help="One skill (default: all).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Check each skill's manifest (its required tools exist) and run the tests it declares, each in the
    skill's folder; a test passes when it exits 0. Exits 1 when anything failed."""
    from nova.tools import default_registry

    with user_errors():
        home = _home()
        # A project's skill that runs code runs its tests only once the user trusted it (`nova trust`).
        catalog = load_catalog(cwd=Path.cwd(), home=home, trust=TrustStore(home))
        if name and name in catalog.untrusted:
            raise SkillError(next(p for p in catalog.problems if p.startswith(f"skill {name!r}")))
        skills = [catalog.require(name)] if name else catalog.sorted()
        skipped = [p for p in catalog.problems if any(p.startswith(f"skill {u!r}") for u in catalog.untrusted)]
        known = {*default_registry().names(), "propose_task_update", "skill", "task"}
        results: list[dict[str, Any]] = []
        for skill in skills:
            missing = sorted(set(skill.required_tools) - known)
            results.append({"skill": skill.name, "test": "manifest", "passed": not missing,
                            "detail": f"unknown required tools: {', '.join(missing)}" if missing else "ok"})
            for test in skill.tests:
                results.append({"skill": skill.name, "test": test.name, **_run(test.run, skill.folder)})
        failed = [r for r in results if not r["passed"]]
        if as_json:
            print(json.dumps({"results": results, "passed": not failed, "skipped": skipped}, indent=2))
        else:
            for problem in skipped:
                console.print(f"SKIP  {problem}", markup=False)
            for r in results:
                console.print(f"{'PASS' if r['passed'] else 'FAIL'}  {r['skill']}: {r['test']}  {r['detail']}",
                              markup=False)
            console.print(f"{len(results) - len(failed)} passed, {len(failed)} failed", markup=False)
        if failed:
            raise typer.Exit(1)


def _run(command: str, folder: Path) -> dict[str, Any]:
    started = time.monotonic()
    try:
        done = subprocess.run(command, shell=True, cwd=folder, capture_output=True, text=True,
                              timeout=TEST_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        return {"passed": False, "detail": f"timed out after {TEST_TIMEOUT_S:.0f}s"}
    tail = (done.stdout + done.stderr).strip().splitlines()[-1:] or [""]
    return {"passed": done.returncode == 0,
            "detail": f"exit {done.returncode} in {time.monotonic() - started:.1f}s {tail[0][:160]}".rstrip()}


@app.command("retire", cls=NovaCommand)
def retire_command(
    name: Annotated[str, typer.Argument(help="The skill's name.")],
    version: Annotated[str | None, typer.Option("--version", help="The version to retire (default: the one in use).")] = None,
) -> None:
    """Retire a version: it is no longer loaded, and the newest version not retired takes its place.
    Recorded in $NOVA_HOME/skill-state.json; the skill's files are not touched."""
    with user_errors():
        person_only("nova skills retire")
        catalog, home = _catalog()
        now = retire(home, catalog, name, version)
        console.print(f"{name}: retired {version or 'the version in use'}; now in use: "
                      f"{(now.version or now.digest) if now else 'none'}", markup=False)


@app.command("rollback", cls=NovaCommand)
def rollback_command(name: Annotated[str, typer.Argument(help="The skill's name.")]) -> None:
    """Roll back to the previous version: retire the one in use (the same as `retire NAME`)."""
    with user_errors():
        person_only("nova skills rollback")
        catalog, home = _catalog()
        if catalog.get(name) is None:
            raise SkillError(f"{name}: no version of it is in use")
        before = catalog.require(name)
        now = retire(home, catalog, name, None)
        if now is None:
            restore(home, catalog, name, before.version or before.digest)
            raise SkillError(f"{name}: {before.version or before.digest} is its only version; nothing to roll back to")
        console.print(f"{name}: rolled back {before.version or before.digest} → {now.version or now.digest}",
                      markup=False)


@app.command("restore", cls=NovaCommand)
def restore_command(
    name: Annotated[str, typer.Argument(help="The skill's name.")],
    version: Annotated[str, typer.Option("--version", help="The retired version to bring back.")],
) -> None:
    """Undo a retirement."""
    with user_errors():
        person_only("nova skills restore")
        catalog, home = _catalog()
        now = restore(home, catalog, name, version)
        console.print(f"{name}: {version} restored; now in use: {(now.version or now.digest) if now else 'none'}",
                      markup=False)
