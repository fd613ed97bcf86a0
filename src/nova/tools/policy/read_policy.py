"""What the reading tools may show: one path policy for `read_file`, `grep` and `glob`.

Three things decide whether a path may be read, in this order:

1. **Rules.** Path rules written for any reading tool apply to all three: `read_file(.env)` in `deny`
   also keeps `grep` and `glob` away from `.env`, and `grep(docs/*)` in `allow` lets `read_file` read
   there too. Deny and ask rules also cover `edit_file`, which shows the text around its change; allow
   rules never spread to it (permission to read is no permission to write). A bare `TOOL` rule is about
   that tool only.
2. **Place.** A path outside the workspace (the working directory, the project root and the session's
   own folder; symlinks resolved) needs approval.
3. **Name.** A secret-looking path (`~/.ssh/*`, `.env`, `*.pem`, `id_rsa*`, credentials files; the list
   is `nova.fs.secret_paths`) needs approval.

Approval is what it is for any tool: an allow rule naming the path (or a bare `read_file` rule), the
user's yes, `--allow TOOL` or `--yes`. Without one, a headless run is refused.

A directory search cannot stop to ask about every file it meets, so it screens them (`FileScreen`):

- a file a deny rule matches is left out entirely, path and contents, and only counted;
- `grep` leaves out the contents of a file that would need approval (secret-looking below the searched
  folder, matched by an ask rule, or a symlink that leads out of the searched folder and the workspace)
  and names it in a note, so the model can ask for it with `read_file`; a pattern allow rule that
  matches the file lets it through;
- `glob` shows names, not contents, so only denied files are hidden from it.

Apart from the rules, both searches leave out Nova's own lock and state files (`.nova/memory/.memory.lock`,
review records, journals): the walk itself skips them (`nova.fs.internal_paths`), so no search lists them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from nova.fs.secret_paths import secret_path_kind

__all__ = [
    "READ_TOOLS",
    "FileScreen",
    "RuleHit",
    "Skip",
    "SkipTally",
    "read_concern",
    "rule_tool_names",
]

READ_TOOLS = ("read_file", "grep", "glob")
"""Tools that show what is in files or folders; their path rules are shared."""
_CONTENT_WRITERS = ("edit_file",)
"""Tools that change files and show part of them back: read deny and ask rules cover them too."""


def rule_tool_names(tool_name: str, *, allow: bool) -> tuple[str, ...]:
    """The tool names whose path rules also govern a call of `tool_name`: all reading tools for a
    reading tool; for `edit_file` its own and, for deny and ask rules only, the reading tools'."""
    if tool_name in READ_TOOLS:
        return READ_TOOLS
    if tool_name in _CONTENT_WRITERS and not allow:
        return (tool_name, *READ_TOOLS)
    return (tool_name,)


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _resolved_roots(roots: Iterable[Path]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(os.path.realpath(r) for r in roots))


def read_concern(tool_name: str, raw: str, *, cwd: Path, roots: Iterable[Path] = ()) -> str | None:
    """Why reading `raw` (relative to `cwd`) with a reading tool needs approval, or None when it does
    not: it looks secret, or it lies outside `cwd` and `roots` once symlinks are resolved."""
    if tool_name not in READ_TOOLS:
        return None
    given = Path(raw).expanduser()
    lexical = os.path.normpath(given if given.is_absolute() else cwd / given)
    real = os.path.realpath(lexical)
    kind = secret_path_kind(lexical) or secret_path_kind(real)
    if kind is not None:
        return f"{raw} looks like it holds secrets: {kind}"
    allowed = _resolved_roots([cwd, *roots])
    if not any(_under(real, root) for root in allowed):
        return f"{raw} is outside the workspace ({allowed[0]})"
    return None


@dataclass(frozen=True, slots=True)
class RuleHit:
    """The first path rule that matched a file met in a directory search."""

    kind: Literal["deny", "ask", "allow"]
    rule: str


RuleLookup = Callable[[Path], RuleHit | None]


@dataclass(frozen=True, slots=True)
class Skip:
    path: Path
    kind: Literal["denied", "approval"]
    """`denied`: never shown, not even by name. `approval`: named, so the model can ask for it."""
    reason: str


@dataclass(frozen=True, kw_only=True)
class FileScreen:
    """Screens each file a directory search meets. Built by `PermissionPolicy.file_screen` with the
    session's rules; `FileScreen.default(cwd)` (no rules) is what a tool uses when run on its own."""

    roots: tuple[Path, ...]
    """The workspace: what a symlink may lead into without approval."""
    lookup: RuleLookup | None = None
    """The path rules for the tool, or None when there are none to match (the common, fast case)."""

    @classmethod
    def default(cls, cwd: Path) -> FileScreen:
        return cls(roots=(cwd,))

    def check(self, path: Path, *, search_root: Path, contents: bool) -> Skip | None:
        """Why `path`, found under `search_root`, must be left out, or None. `contents` is False for a
        search that shows only names (glob)."""
        hit = self.lookup(path) if self.lookup is not None else None
        if hit is not None and hit.kind == "deny":
            return Skip(path, "denied", f"the deny rule `{hit.rule}`")
        if not contents or (hit is not None and hit.kind == "allow"):
            return None
        if hit is not None:
            return Skip(path, "approval", f"the ask rule `{hit.rule}`")
        # Folders above the searched one were approved (or inside the workspace) when the search was;
        # below it, every folder and the name count.
        try:
            below = path.relative_to(search_root)
        except ValueError:
            below = Path(path.name)
        kind = secret_path_kind(below)
        if kind is not None:
            return Skip(path, "approval", f"looks like it holds secrets: {kind}")
        if os.path.islink(path):
            real = os.path.realpath(path)
            kind = secret_path_kind(real)
            if kind is not None:
                return Skip(path, "approval", f"a symlink to {real}, which looks like it holds secrets: {kind}")
            inside = _resolved_roots([search_root, *self.roots])
            if not any(_under(real, root) for root in inside):
                return Skip(path, "approval", f"a symlink to {real}, outside the workspace")
        return None


@dataclass
class SkipTally:
    """What a search left out, for the note that says so."""

    denied: int = 0
    needs_approval: list[str] = field(default_factory=list)

    def add(self, skip: Skip, shown: str) -> None:
        if skip.kind == "denied":
            self.denied += 1
        else:
            self.needs_approval.append(shown)

    def notes(self, *, max_named: int = 5) -> list[str]:
        notes: list[str] = []
        if self.denied:
            notes.append(f"[{self.denied} file(s) skipped: a deny rule forbids reading them]")
        if self.needs_approval:
            named = ", ".join(self.needs_approval[:max_named])
            more = f" and {len(self.needs_approval) - max_named} more" if len(self.needs_approval) > max_named else ""
            notes.append(
                f"[{len(self.needs_approval)} file(s) not searched because reading them needs the user's approval "
                f"(secret-looking, an ask rule, or a link out of the workspace): {named}{more}. Read one with "
                "read_file to ask for it.]"
            )
        return notes
