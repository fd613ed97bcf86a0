"""A skill on disk: a folder holding `SKILL.md`, YAML frontmatter then the instructions (the body).

The frontmatter is the one Claude Code and other agents write, so a skill from that ecosystem loads
unchanged:

    ---
    name: pdf-forms                      required; lowercase letters, digits and dashes
    description: Fill PDF forms ...      required; one line in the skill index
    allowed-tools: Read, Grep, Bash      optional (Claude Code); limits the tools while the skill is active
    license: ...                         optional; kept, never interpreted
    ---

Nova reads its own optional manifest fields beside them (unknown keys are kept in `extra`):

    version: 1.2.0                       what `nova skills retire/rollback` name
    triggers: [pdf, form]                words that suggest the skill (shown in `nova skills show`)
    capabilities: [read-files]           what the skill says it does, for the reviewer
    tools: [read_file, bash]             required tools: `nova skills test` checks they exist; with
                                         `allowed-tools` they are the tools the skill may use
    permissions:
      network: false                     bash commands that reach the network are refused
      files: {read: ["docs/**"], write: ["out/**"]}   paths (globs, project-relative) it may touch
    source: https://example.org/skills   where it came from
    review: {by: alice, date: 2026-01-05, notes: ...}
    tests: [{name: lint, run: "python check.py"}]   commands `nova skills test` runs in the folder

Older versions a skill keeps live beside it as `versions/<version>/SKILL.md`; the newest version that
is not retired is the one in use.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from nova.errors import FileRefused, MemoryStoreError, SkillError
from nova.fs.safe_read import read_bytes
from nova.memory.safe_yaml import load_frontmatter

__all__ = ["SKILL_FILE", "Skill", "SkillPermissions", "SkillTest", "parse_skill", "read_skill"]

SKILL_FILE = "SKILL.md"
MAX_SKILL_BYTES = 512 * 1024
_NAME = re.compile(r"[a-z0-9][a-z0-9_.:-]{0,63}")

Scope = Literal["project", "claude", "user"]

# Claude Code's tool names as `allowed-tools` writes them, and Nova's tool for each.
CLAUDE_TOOL_NAMES = {"read": "read_file", "write": "write_file", "edit": "edit_file", "multiedit": "edit_file",
                     "bash": "bash", "grep": "grep", "glob": "glob", "ls": "glob", "task": "task",
                     "skill": "skill"}


@dataclass(frozen=True, kw_only=True)
class SkillPermissions:
    """The most a skill may use while it is active. None means "not declared": no limit of that kind."""

    tools: frozenset[str] | None = None
    network: bool | None = None
    read: tuple[str, ...] | None = None
    write: tuple[str, ...] | None = None

    @property
    def declared(self) -> bool:
        return any(v is not None for v in (self.tools, self.network, self.read, self.write))

    def to_dict(self) -> dict[str, Any]:
        return {"tools": sorted(self.tools) if self.tools is not None else None, "network": self.network,
                "read": list(self.read) if self.read is not None else None,
                "write": list(self.write) if self.write is not None else None}


@dataclass(frozen=True, kw_only=True)
class SkillTest:
    name: str
    run: str
    """A shell command run in the skill's folder; it passes when it exits 0."""


@dataclass(frozen=True, kw_only=True)
class Skill:
    name: str
    description: str
    body: str = field(repr=False)
    path: Path
    """The SKILL.md file."""
    scope: Scope = "project"
    version: str = ""
    triggers: tuple[str, ...] = ()
    capabilities: tuple[str, ...] = ()
    required_tools: tuple[str, ...] = ()
    permissions: SkillPermissions = field(default_factory=SkillPermissions)
    source: str = ""
    review: Mapping[str, Any] = field(default_factory=dict)
    tests: tuple[SkillTest, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)
    digest: str = ""
    """sha256 (12 hex digits) of the file: the index and the manifest name a skill's exact bytes."""

    @property
    def folder(self) -> Path:
        return self.path.parent

    @property
    def label(self) -> str:
        return f"{self.name}@{self.version or self.digest}"

    def index_line(self) -> str:
        return f"- {self.name}: {_one_line(self.description)}"

    def to_dict(self, *, body: bool = False) -> dict[str, Any]:
        data: dict[str, Any] = {
            "name": self.name, "description": self.description, "version": self.version, "scope": self.scope,
            "path": str(self.path), "digest": self.digest, "triggers": list(self.triggers),
            "capabilities": list(self.capabilities), "required_tools": list(self.required_tools),
            "permissions": self.permissions.to_dict(), "source": self.source,
            "review": {str(k): str(v) for k, v in self.review.items()},
            "tests": [{"name": t.name, "run": t.run} for t in self.tests],
        }
        if body:
            data["body"] = self.body
        return data


def read_skill(path: Path, *, scope: Scope = "project") -> Skill:
    """The skill in `path` (a SKILL.md file or the folder holding one). `SkillError` says what is wrong."""
    file = path / SKILL_FILE if path.is_dir() else path
    try:
        size = file.stat().st_size
        if size > MAX_SKILL_BYTES:
            raise SkillError(f"{file}: {size} bytes, over the {MAX_SKILL_BYTES}-byte limit for a skill")
        # A regular file only, read to the limit: a SKILL.md a repository links to a FIFO or a device
        # must not hang or fill the catalog.
        raw = read_bytes(file, limit=MAX_SKILL_BYTES, what="a skill")
    except OSError as exc:
        raise SkillError(f"{file}: cannot read the skill ({exc.strerror or exc})") from None
    except FileRefused as exc:
        raise SkillError(str(exc)) from None
    return parse_skill(raw.decode("utf-8", "replace"), path=file, scope=scope,
                       digest=hashlib.sha256(raw).hexdigest()[:12])


def parse_skill(text: str, *, path: Path, scope: Scope = "project", digest: str = "") -> Skill:
    where = str(path)
    front, body = _split(text, where)
    try:
        data = load_frontmatter(front, where=where)
    except MemoryStoreError as exc:
        raise SkillError(str(exc)) from None
    if not isinstance(data, dict):
        raise SkillError(f"{where}: the frontmatter must be a mapping with `name` and `description`")
    name = _text(data.get("name"), "name", where)
    description = _text(data.get("description"), "description", where)
    if not name or not _NAME.fullmatch(name):
        raise SkillError(f"{where}: `name` {name!r} must be lowercase letters, digits and dashes (at most 64)")
    if not description:
        raise SkillError(f"{where}: `description` is required (the one line the model reads in the index)")
    required = _names(data.get("tools"), "tools", where)
    allowed = _claude_tools(data.get("allowed-tools"), where)
    perms = data.get("permissions") or {}
    if not isinstance(perms, dict):
        raise SkillError(f"{where}: `permissions` must be a mapping (network, files, tools)")
    files = perms.get("files") or {}
    if not isinstance(files, dict):
        raise SkillError(f"{where}: `permissions.files` must be a mapping with `read` and/or `write` globs")
    tools = _names(perms.get("tools"), "permissions.tools", where) if "tools" in perms else None
    declared_tools: frozenset[str] | None = None
    if tools is not None:
        declared_tools = frozenset(tools)
    elif allowed is not None or required:
        declared_tools = frozenset((*(allowed or ()), *required))
    network = perms.get("network")
    if network is not None and not isinstance(network, bool):
        raise SkillError(f"{where}: `permissions.network` must be true or false, not {network!r}")
    permissions = SkillPermissions(
        tools=declared_tools, network=network,
        read=_globs(files, "read", where), write=_globs(files, "write", where))
    review = data.get("review") or {}
    if not isinstance(review, dict):
        review = {"notes": str(review)}
    known = {"name", "description", "version", "triggers", "capabilities", "tools", "allowed-tools",
             "permissions", "source", "review", "tests"}
    return Skill(
        name=name, description=description, body=body.strip("\n"), path=path, scope=scope,
        version=str(data.get("version") or ""), triggers=_names(data.get("triggers"), "triggers", where),
        capabilities=_names(data.get("capabilities"), "capabilities", where), required_tools=required,
        permissions=permissions, source=str(data.get("source") or ""), review=review,
        tests=_tests(data.get("tests"), where), extra={k: v for k, v in data.items() if k not in known},
        digest=digest or hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:12])


def _split(text: str, where: str) -> tuple[str, str]:
    text = text.removeprefix("\ufeff")
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        raise SkillError(f"{where}: a SKILL.md starts with `---` frontmatter (name, description)")
    for index in range(1, len(lines)):
        if lines[index].strip() == "---":
            return "".join(lines[1:index]), "".join(lines[index + 1:])
    raise SkillError(f"{where}: the frontmatter has no closing `---`")


def _text(value: Any, key: str, where: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str | int | float):
        raise SkillError(f"{where}: `{key}` must be text")
    return str(value).strip()


def _names(value: Any, key: str, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return tuple(v.strip() for v in value.split(",") if v.strip())
    if isinstance(value, list) and all(isinstance(v, str | int | float) for v in value):
        return tuple(str(v).strip() for v in value if str(v).strip())
    raise SkillError(f"{where}: `{key}` must be a list of names (or one comma-separated line)")


def _claude_tools(value: Any, where: str) -> tuple[str, ...] | None:
    """`allowed-tools` as Claude Code writes it (`Read, Grep, Bash(git:*)`), in Nova's tool names. A
    pattern in parentheses narrows a tool in Claude Code; here the tool as a whole is what is declared."""
    if value is None:
        return None
    out = []
    for raw in _names(value, "allowed-tools", where):
        bare = raw.split("(", 1)[0].strip()
        out.append(CLAUDE_TOOL_NAMES.get(bare.lower(), bare))
    return tuple(out)


def _globs(files: Mapping[str, Any], key: str, where: str) -> tuple[str, ...] | None:
    return _names(files[key], f"permissions.files.{key}", where) if key in files else None


def _tests(value: Any, where: str) -> tuple[SkillTest, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise SkillError(f"{where}: `tests` must be a list of commands or of {{name, run}} mappings")
    out = []
    for index, item in enumerate(value, 1):
        if isinstance(item, str):
            out.append(SkillTest(name=f"test {index}", run=item))
        elif isinstance(item, dict) and isinstance(item.get("run"), str):
            out.append(SkillTest(name=str(item.get("name") or f"test {index}"), run=item["run"]))
        else:
            raise SkillError(f"{where}: test {index} needs a `run` command")
    return tuple(out)


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= 200 else line[:199] + "…"
