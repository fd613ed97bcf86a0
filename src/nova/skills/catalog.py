"""Where skills are found, which version of each is in use, and the index the model always sees.

Roots, first match of a name wins:

    <project>/.nova/skills/<name>/SKILL.md      project skills (Nova's place)
    <project>/.claude/skills/<name>/SKILL.md    project skills written for Claude Code, read unchanged
    $NOVA_HOME/skills/<name>/SKILL.md           the user's own skills

Versions: a skill folder's own `SKILL.md` and each `versions/<version>/SKILL.md` beside it. The newest
version not retired is in use; `retire` and `rollback` write `$NOVA_HOME/skill-state.json` (the user's
file: no model tool may write Nova's home), so retiring a bad version never edits the skill itself.

The index (one line per skill, sorted by name) is built once per session and goes into the stable head,
so it stays inside the cached prefix; the bodies load on demand (nova.skills.runtime).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nova.errors import SkillError
from nova.fs.private import write_private_text
from nova.memory.paths import project_root
from nova.skills.manifest import SKILL_FILE, Scope, Skill, read_skill
from nova.tools.policy.trust import TrustItem, TrustStore, folder_digest, trust_hint

__all__ = ["INDEX_TITLE", "SkillCatalog", "SkillState", "load_catalog", "skill_roots", "skill_scripts",
           "skill_trust_item", "version_key"]

INDEX_TITLE = ("# Skills\nLoad a skill with the `skill` tool (name) before a task it covers; its instructions "
               "then apply. Available skills:")
STATE_FILE = "skill-state.json"


def skill_roots(*, cwd: Path, home: Path) -> list[tuple[Path, Scope]]:
    root = project_root(cwd)
    return [(root / ".nova" / "skills", "project"), (root / ".claude" / "skills", "claude"),
            (home / "skills", "user")]


def version_key(version: str) -> tuple[tuple[int, int | str], ...]:
    """Orders `1.10.0` after `1.9.2`; words sort after numbers at the same place."""
    return tuple((0, int(p)) if p.isdigit() else (1, p) for p in re.split(r"[.\-+]", version) if p)


@dataclass(frozen=True)
class SkillState:
    """Retired versions per skill name, from `$NOVA_HOME/skill-state.json`."""

    retired: Mapping[str, frozenset[str]] = field(default_factory=dict)

    @classmethod
    def load(cls, home: Path) -> SkillState:
        path = home / STATE_FILE
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return cls()
        except (OSError, ValueError) as exc:
            raise SkillError(f"{path}: cannot read the skill state ({exc}); fix or delete the file") from None
        retired = data.get("retired", {}) if isinstance(data, dict) else {}
        return cls({str(k): frozenset(str(v) for v in vs) for k, vs in retired.items() if isinstance(vs, list)})

    def is_retired(self, skill: Skill) -> bool:
        return _version_id(skill) in self.retired.get(skill.name, frozenset())

    def with_retired(self, name: str, version: str, *, retired: bool = True) -> SkillState:
        current = set(self.retired.get(name, frozenset()))
        (current.add if retired else current.discard)(version)
        return SkillState({**self.retired, name: frozenset(current)})

    def save(self, home: Path) -> None:
        home.mkdir(parents=True, exist_ok=True)
        data = {"retired": {k: sorted(v) for k, v in sorted(self.retired.items()) if v}}
        write_private_text(home / STATE_FILE, json.dumps(data, indent=2) + "\n")


def _version_id(skill: Skill) -> str:
    return skill.version or skill.digest


@dataclass(frozen=True, kw_only=True)
class SkillCatalog:
    skills: Mapping[str, Skill]
    """The version in use of each skill, by name."""
    versions: Mapping[str, tuple[Skill, ...]] = field(default_factory=dict)
    """Every version found of each skill, newest first."""
    problems: tuple[str, ...] = ()
    """Skills that could not be read, one sentence each (`nova skills list` shows them)."""
    shadowed: tuple[str, ...] = ()
    untrusted: tuple[str, ...] = ()
    """Project skills with scripts left out until the user trusts them (`nova trust`)."""

    def __len__(self) -> int:
        return len(self.skills)

    def get(self, name: str) -> Skill | None:
        return self.skills.get(name)

    def require(self, name: str) -> Skill:
        skill = self.skills.get(name)
        if skill is None:
            known = ", ".join(sorted(self.skills)) or "none"
            raise SkillError(f"no skill named {name!r} (available: {known})")
        return skill

    def sorted(self) -> list[Skill]:
        return [self.skills[n] for n in sorted(self.skills)]

    def index_text(self) -> str:
        """The always-on index: one line per skill, sorted by name (byte-stable while the skills are)."""
        if not self.skills:
            return ""
        return "\n".join([INDEX_TITLE, *(s.index_line() for s in self.sorted())])

    def index_version(self) -> str:
        return ",".join(f"{s.name}@{s.version or s.digest}" for s in self.sorted())


_SCRIPT_SUFFIXES = frozenset({".sh", ".bash", ".zsh", ".py", ".js", ".mjs", ".cjs", ".ts", ".rb", ".pl", ".php",
                              ".lua", ".ps1", ".bat", ".cmd", ".exe", ".so", ".dylib", ".jar"})
MAX_SCRIPT_SCAN = 500


def skill_scripts(folder: Path) -> list[str]:
    """The files in a skill's folder that would run (executable, a script by its suffix, or starting
    with `#!`), relative to it; at most `MAX_SCRIPT_SCAN` files are looked at."""
    found: list[str] = []
    seen = 0
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames.sort()
        for name in sorted(filenames):
            seen += 1
            if seen > MAX_SCRIPT_SCAN:
                return [*found, "…"]
            path = Path(dirpath) / name
            try:
                executable = path.is_file() and os.access(path, os.X_OK)
                with path.open("rb") as handle:
                    shebang = handle.read(2) == b"#!"
            except OSError:
                executable = shebang = False
            if executable or shebang or path.suffix.lower() in _SCRIPT_SUFFIXES or name == "Makefile":
                found.append(path.relative_to(folder).as_posix())
    return found


def skill_trust_item(skill: Skill) -> TrustItem | None:
    """A project skill that carries scripts or test commands, as something the user must trust before a
    session offers it (nova.tools.policy.trust); None for a skill that is only text, or the user's own."""
    if skill.scope == "user":
        return None
    scripts = skill_scripts(skill.folder)
    if not scripts and not skill.tests:
        return None
    runs = "; ".join(part for part in (
        f"scripts: {', '.join(scripts[:8])}{' …' if len(scripts) > 8 else ''}" if scripts else "",
        f"tests: {', '.join(t.run for t in skill.tests[:4])}" if skill.tests else "") if part)
    return TrustItem(kind="skill", name=skill.name, digest=folder_digest(skill.folder), source=skill.folder,
                     runs=runs)


def load_catalog(*, cwd: Path, home: Path, roots: Iterable[tuple[Path, Scope]] | None = None,
                 trust: TrustStore | None = None) -> SkillCatalog:
    """The skills for a session in `cwd`. With `trust`, a project skill that carries scripts and is not
    trusted for this project and content is left out (named in `untrusted` and `problems`)."""
    state = SkillState.load(home)
    skills: dict[str, Skill] = {}
    versions: dict[str, tuple[Skill, ...]] = {}
    problems: list[str] = []
    shadowed: list[str] = []
    for root, scope in roots if roots is not None else skill_roots(cwd=cwd, home=home):
        for folder in _folders(root):
            found: list[Skill] = []
            for file in (folder / SKILL_FILE, *sorted((folder / "versions").glob(f"*/{SKILL_FILE}"))):
                if not file.is_file():
                    continue
                try:
                    found.append(read_skill(file, scope=scope))
                except SkillError as exc:
                    problems.append(str(exc))
            if not found:
                continue
            name = found[0].name
            if name in versions:
                shadowed.append(f"{folder} ({name!r} is already defined by {versions[name][0].folder})")
                continue
            found.sort(key=lambda s: version_key(s.version), reverse=True)
            versions[name] = tuple(found)
            live = [s for s in found if not state.is_retired(s)]
            if live:
                skills[name] = live[0]
    untrusted: list[str] = []
    if trust is not None:
        items = [item for item in (skill_trust_item(s) for s in skills.values()) if item is not None]
        root = project_root(cwd)
        for item in trust.untrusted(root, items):
            del skills[item.name]
            untrusted.append(item.name)
            problems.append(f"skill {item.name!r} ({item.source}) runs code ({item.runs}) and is not trusted for "
                            f"this project; {trust_hint(root)}")
    return SkillCatalog(skills=skills, versions=versions, problems=tuple(problems), shadowed=tuple(shadowed),
                        untrusted=tuple(untrusted))


def _folders(root: Path) -> list[Path]:
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except OSError:
        return []
    return [Path(e.path) for e in entries if e.is_dir() and not e.name.startswith(".")]


def retire(home: Path, catalog: SkillCatalog, name: str, version: str | None = None) -> Skill | None:
    """Retire `version` of `name` (default: the one in use). Returns the version in use afterwards."""
    found = catalog.versions.get(name)
    if not found:
        raise SkillError(f"no skill named {name!r}")
    target = version or (_version_id(catalog.skills[name]) if name in catalog.skills else None)
    if target is None or not any(_version_id(s) == target for s in found):
        have = ", ".join(_version_id(s) for s in found)
        raise SkillError(f"skill {name!r} has no version {target!r} in use or on disk (versions: {have})")
    state = SkillState.load(home).with_retired(name, target)
    state.save(home)
    return next((s for s in found if not state.is_retired(s)), None)


def restore(home: Path, catalog: SkillCatalog, name: str, version: str) -> Skill | None:
    found = catalog.versions.get(name)
    if not found or not any(_version_id(s) == version for s in found):
        raise SkillError(f"skill {name!r} has no version {version!r} on disk")
    state = SkillState.load(home).with_retired(name, version, retired=False)
    state.save(home)
    return next((s for s in found if not state.is_retired(s)), None)


def describe_versions(catalog: SkillCatalog, home: Path, name: str) -> list[dict[str, Any]]:
    state = SkillState.load(home)
    current = catalog.skills.get(name)
    return [{"version": _version_id(s), "path": str(s.path), "retired": state.is_retired(s),
             "in_use": current is not None and s.path == current.path} for s in catalog.versions.get(name, ())]
