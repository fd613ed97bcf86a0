"""Trust before code runs: what a project asks Nova to start, and which of it the user approved.

Opening a project must not run its code. A project can ask Nova to start programs in two ways: MCP
servers in its `.mcp.json` (started when a session begins) and skills that carry scripts or test
commands (`.nova/skills/`, `.claude/skills/`: the skill tells the model to run them, `nova skills test`
runs them). Each such item is approved once per project and per content: the approval records the
item's digest, and any change to the entry or the skill's files makes it new again, as Claude Code asks
again for a changed project-scoped server. Servers and skills in the user's own config and
`$NOVA_HOME/skills` are the user's and need no approval. Nova has no other hooks that run project code.

Approvals live in `$NOVA_HOME/trust.json`, which no sandboxed command can see and no model tool may
write, so the model cannot approve its own server. `nova trust` lists and approves (a person only:
nova.tools.policy.controls); a session skips what is not trusted and says how to trust it, in one line.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from nova.fs.private import private_dir, replace_private_file
from nova.fs.special_files import read_regular_text

__all__ = ["TRUST_FILE", "TrustItem", "TrustStore", "content_digest", "folder_digest", "trust_hint"]

TRUST_FILE = "trust.json"
MAX_TRUST_BYTES = 4 * 1024 * 1024
MAX_DIGEST_FILES = 2000
MAX_DIGEST_BYTES = 64 * 1024 * 1024
Status = Literal["trusted", "new", "changed"]


@dataclass(frozen=True, slots=True, kw_only=True)
class TrustItem:
    """One thing a project would run."""

    kind: Literal["mcp", "skill"]
    name: str
    digest: str
    source: Path
    """Where it is defined: the `.mcp.json`, or the skill's folder."""
    runs: str
    """What it runs, for the person approving it (`npx -y @acme/server`, `scripts: run.sh`)."""

    @property
    def key(self) -> str:
        return f"{self.kind}:{self.name}"


def content_digest(value: Any) -> str:
    """The digest of a JSON value (an MCP server's entry), independent of key order."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def folder_digest(folder: Path) -> str:
    """The digest of every file under `folder` (relative paths, modes and bytes; symlinks by target), so
    a changed script makes the skill new again. Past `MAX_DIGEST_FILES` files or `MAX_DIGEST_BYTES`
    bytes the rest is counted by name and size only."""
    digest = hashlib.sha256()
    total = 0
    entries: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=False):
        dirnames.sort()
        entries.extend(Path(dirpath) / name for name in sorted(filenames))
        if len(entries) > MAX_DIGEST_FILES:
            break
    for path in sorted(entries):
        relative = path.relative_to(folder).as_posix()
        digest.update(relative.encode("utf-8", "surrogatepass") + b"\0")
        try:
            if path.is_symlink():
                digest.update(b"link:" + os.fsencode(os.readlink(path)))
                continue
            stat = path.stat()
            digest.update(f"{stat.st_mode & 0o111:o}:{stat.st_size}".encode())
            if total + stat.st_size <= MAX_DIGEST_BYTES and path.is_file():
                digest.update(path.read_bytes())
                total += stat.st_size
        except OSError:
            digest.update(b"unreadable")
    return digest.hexdigest()


def trust_hint(root: Path) -> str:
    return f"review it, then run `nova trust` in {root}"


class TrustStore:
    """The approvals in `<home>/trust.json`: project root → item key → digest."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.path = home / TRUST_FILE

    def _load(self) -> dict[str, dict[str, str]]:
        text = read_regular_text(self.path, max_bytes=MAX_TRUST_BYTES) if self.path.exists() else None
        if not text:
            return {}
        try:
            data = json.loads(text)
        except (ValueError, RecursionError):
            return {}  # a damaged file trusts nothing
        projects = data.get("projects") if isinstance(data, Mapping) else None
        if not isinstance(projects, Mapping):
            return {}
        return {str(root): {str(k): str(v) for k, v in items.items()}
                for root, items in projects.items() if isinstance(items, Mapping)}

    def _save(self, projects: Mapping[str, Mapping[str, str]]) -> None:
        private_dir(self.home)
        document = {"projects": {root: dict(sorted(items.items())) for root, items in sorted(projects.items())
                                 if items}}
        replace_private_file(self.path, json.dumps(document, indent=2) + "\n")

    @staticmethod
    def _root(root: Path) -> str:
        return os.path.realpath(root)

    def status(self, root: Path, item: TrustItem) -> Status:
        known = self._load().get(self._root(root), {}).get(item.key)
        if known is None:
            return "new"
        return "trusted" if known == item.digest else "changed"

    def untrusted(self, root: Path, items: Iterable[TrustItem]) -> list[TrustItem]:
        approved = self._load().get(self._root(root), {})
        return [item for item in items if approved.get(item.key) != item.digest]

    def trust(self, root: Path, items: Sequence[TrustItem]) -> None:
        projects = self._load()
        entry = projects.setdefault(self._root(root), {})
        for item in items:
            entry[item.key] = item.digest
        self._save(projects)

    def revoke(self, root: Path) -> int:
        """Forget every approval for `root`; how many there were."""
        projects = self._load()
        removed = projects.pop(self._root(root), {})
        self._save(projects)
        return len(removed)
