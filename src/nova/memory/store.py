"""Auto-memory files (SPEC MEM-1..3, MEM-7): one Markdown file per memory, routed by type, with an index.

    ---
    name: prefers-small-commits
    description: The user wants atomic commits, one concern per commit
    type: feedback                 # user | feedback -> <home>/memory/ ; project | reference -> <git root>/.nova/memory/
    status: active                 # candidate | active | revoked
    author: user                   # user | model
    created: '2025-01-02T10:00:00Z'
    updated: '2025-01-02T10:00:00Z'
    expires: null                  # optional ISO time; expired memories are never recalled
    source: {session: s_1, messages: [msg_1], origin: user}   # origin: user | assistant | tool | web | cli
    external: false                # text that came from tool output or the web
    reason: why it is worth keeping
    ---
    Split changes by topic before committing.

The frontmatter's `status` and `author` are what the file claims, not what Nova believes: `read()`
judges every memory by the review ledger (`nova.memory.reviews`), so a file Nova did not write or the
user did not approve comes back as a `candidate` with a `review_note` saying why.

The file name is a safe slug of the name; `MEMORY.md` in each directory is regenerated after every write
as a one-line-per-memory directory (never injected: recall reads the memories themselves).
"""

from __future__ import annotations

import contextlib
import logging
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any, cast

import yaml
from filelock import FileLock

from nova.errors import MemoryNotFound, MemoryStoreError, UnsafeMemoryName
from nova.fs.private import private_dir, replace_private_file
from nova.memory.paths import home_memory_dir, project_memory_dir
from nova.memory.recency import write_journal
from nova.memory.record import (
    HOME_TYPES,
    MEMORY_TYPES,
    PROJECT_TYPES,
    STATUSES,
    Author,
    Memory,
    MemorySource,
    Origin,
    Status,
    format_time,
    parse_time,
    slugify,
    utc_now,
)
from nova.memory.reviews import By, ReviewLedger, content_hash
from nova.memory.safe_yaml import MAX_FRONTMATTER_BYTES, load_frontmatter
from nova.memory.secrets import describe_findings, find_secrets

__all__ = [
    "HOME_TYPES",
    "INDEX_NAME",
    "MEMORY_TYPES",
    "PROJECT_TYPES",
    "Memory",
    "MemoryNotFound",
    "MemorySource",
    "MemoryStore",
    "MemoryStoreError",
    "UnsafeMemoryName",
    "atomic_write_text",
    "format_time",
    "memory_from_text",
    "memory_to_text",
    "parse_head",
    "parse_time",
    "render_index",
    "slugify",
    "truncation_warning",
]

INDEX_NAME = "MEMORY.md"
log = logging.getLogger(__name__)
_YAML_DUMPER: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def _metadata(memory: Memory) -> dict[str, Any]:
    # Insertion order is the order a human reads in the file.
    meta: dict[str, Any] = {
        "name": memory.name,
        "description": memory.description,
        "type": memory.type,
        "status": memory.status,
        "author": memory.author,
        "created": format_time(memory.created),
        "updated": format_time(memory.updated),
        "expires": format_time(memory.expires) if memory.expires else None,
        "source": {
            "session": memory.source.session,
            "messages": list(memory.source.messages),
            "origin": memory.source.origin,
        },
        "external": memory.external,
        "reason": memory.reason,
    }
    # Written only when present, so files without them stay as they were.
    if memory.source.tool_calls:
        meta["source"]["tool_calls"] = list(memory.source.tool_calls)
    if memory.evidence:
        meta["evidence"] = list(memory.evidence)
    return meta


def memory_to_text(memory: Memory) -> str:
    # An unbounded width keeps every scalar on one line, which the fast reader needs.
    head = yaml.dump(_metadata(memory), Dumper=_YAML_DUMPER, sort_keys=False, allow_unicode=True,
                     default_flow_style=False, width=2**31 - 1)
    body = memory.body.strip("\n")
    return f"---\n{head}---\n{body}\n"


def memory_from_meta(meta: Mapping[str, Any], body: str, *, path: Path | None = None) -> Memory:
    """Build a `Memory` from parsed frontmatter, tolerating hand-edited files (missing or odd fields)."""
    name = str(meta.get("name") or (path.stem if path else ""))
    mtype = str(meta.get("type") or "")
    if mtype not in MEMORY_TYPES:
        raise MemoryStoreError(f"{path or name}: unknown memory type {mtype!r}")
    status = str(meta.get("status") or "active")
    author = str(meta.get("author") or "user")
    raw_source = meta.get("source")
    source = MemorySource()
    if isinstance(raw_source, Mapping):
        origin = str(raw_source.get("origin") or "user")
        messages = raw_source.get("messages") or ()
        source = MemorySource(
            session=str(raw_source["session"]) if raw_source.get("session") else None,
            messages=tuple(str(m) for m in messages) if isinstance(messages, list | tuple) else (str(messages),),
            origin=cast(Origin, origin if origin in ("user", "assistant", "tool", "web", "cli") else "user"),
            tool_calls=_strings(raw_source.get("tool_calls")),
        )
    created = parse_time(meta.get("created")) or utc_now()
    return Memory(
        name=name,
        description=str(meta.get("description") or ""),
        type=mtype,  # narrowed by the MEMORY_TYPES check above
        body=body.strip("\n"),
        status=status if status in STATUSES else "candidate",  # type: ignore[arg-type]
        author=cast(Author, author if author in ("user", "model") else "model"),
        created=created,
        updated=parse_time(meta.get("updated")) or created,
        expires=parse_time(meta.get("expires")),
        source=source,
        external=bool(meta.get("external", False)),
        reason=str(meta.get("reason") or ""),
        path=path,
        evidence=_strings(meta.get("evidence")),
    )


def _strings(value: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in value) if isinstance(value, list | tuple) else ()


# -- a fast path for the frontmatter this module writes ---------------------------------------------
# YAML parsing is most of a recall scan's cost. The files Nova writes use a tiny subset (plain or quoted
# one-line scalars, one nested mapping, block lists), so that subset is parsed directly; anything else
# (comments, flow style, multi-line or escaped scalars, values YAML would type as numbers, bools or
# dates) makes `_parse_simple_yaml` return None and the real YAML loader decides. Results are the same
# either way: the fast path only accepts text whose YAML meaning is unambiguous.
_PLAIN_SAFE = re.compile(r"^[A-Za-z\u00c0-\uffff][^#]*$")
_YAML_SPECIAL_WORDS = frozenset({"y", "n", "yes", "no", "on", "off", "true", "false", "null", "~"})


_CONSTANTS: dict[str, Any] = {"null": None, "~": None, "": None, "true": True, "false": False}


def _simple_scalar(raw: str) -> tuple[bool, Any]:
    """(ok, value) for one scalar; ok False means "let YAML decide"."""
    first = raw[:1]
    if first == "'":
        inner = raw[1:-1]
        if len(raw) < 2 or raw[-1] != "'" or "'" in inner.replace("''", ""):
            return False, None
        return True, inner.replace("''", "'")
    if raw in _CONSTANTS:
        return True, _CONSTANTS[raw]
    if raw == "[]":
        return True, []
    if first == '"':
        inner = raw[1:-1]
        return (len(raw) >= 2 and raw[-1] == '"' and "\\" not in inner and '"' not in inner), inner
    if (_PLAIN_SAFE.match(raw) is not None and ": " not in raw and raw[-1] not in ": "
            and raw.lower() not in _YAML_SPECIAL_WORDS):
        return True, raw
    return False, None


def _parse_simple_yaml(lines: Sequence[str]) -> dict[str, Any] | None:
    result: dict[str, Any] = {}
    parent: dict[str, Any] | None = None  # the mapping under the last empty top-level `key:`
    parent_key = ""
    list_owner: tuple[dict[str, Any], str] | None = None  # the mapping and key that `- item` lines extend
    list_indent: int | None = None  # the indent of that list's items
    for line in lines:
        text = line.rstrip("\r\n")
        body = text.lstrip(" ")
        if not body:
            continue
        indent = len(text) - len(body)
        if body[:2] == "- " and indent <= 2 and indent != 1:
            if list_owner is None:
                return None
            owner, key = list_owner
            item = body[2:].strip(" \t")
            # Empty items, nested sequences and items at a new indent are YAML's to decide.
            if not item or item[0] == "-" or list_indent not in (None, indent):
                return None
            list_indent = indent
            ok, value = _simple_scalar(item)
            current = owner.get(key)
            if not ok or (current is not None and not isinstance(current, list)):
                return None
            if current is None:
                owner[key] = current = []
            current.append(value)
            continue
        key, sep, rest = body.partition(":")
        if not sep or not key or key[-1] == " " or (rest and rest[0] != " "):
            return None
        rest = rest.strip(" \t")  # YAML trims only spaces and tabs, not every Unicode space
        if indent == 0:
            target = result
            parent = None
            parent_key = key
        elif indent == 2 and parent_key:
            if parent is None:
                if result.get(parent_key) is not None:
                    return None
                parent = result[parent_key] = {}
            target = parent
        else:
            return None
        if not rest:
            target[key] = None  # a nested block or list follows, or it is simply null
            list_owner = (target, key)
            list_indent = None
            continue
        ok, value = _simple_scalar(rest)
        if not ok:
            return None
        target[key] = value
        list_owner = None
        if target is result:
            parent_key = ""
    return result


def parse_head(lines: Sequence[str], *, path: Path | None = None) -> tuple[dict[str, Any], list[str]] | None:
    """Split frontmatter from the body in the first lines of a file. None when the frontmatter does not
    close within `lines` or is not a YAML mapping (the caller skips such files). Frontmatter that is
    hostile or broken (aliases, over the size cap, invalid YAML, an impossible date) raises
    `MemoryStoreError` naming `path`, so the caller can say why it skipped the file."""
    if not lines or lines[0].strip() != "---":
        return None
    for end in range(1, len(lines)):
        if lines[end].strip() == "---":
            head = "".join(lines[1:end])
            # The size cap applies to the fast path too, so every file meets the same limit.
            meta = _parse_simple_yaml(lines[1:end]) if len(head) <= MAX_FRONTMATTER_BYTES // 4 else None
            if meta is None:
                meta = load_frontmatter(head, where=str(path or "memory"))
            return (meta, list(lines[end + 1 :])) if isinstance(meta, dict) else None
    return None


def memory_from_text(text: str, *, path: Path | None = None) -> Memory:
    parsed = parse_head(text.splitlines(keepends=True), path=path)
    if parsed is None:
        raise MemoryStoreError(f"{path or 'memory'}: no YAML frontmatter")
    meta, body = parsed
    return memory_from_meta(meta, "".join(body), path=path)


# -- files ------------------------------------------------------------------------------------------------
def atomic_write_text(path: Path, text: str, *, durable: bool = True) -> None:
    """Write a memory file (or the index) whole, in a private folder made if missing: a reader sees the
    old file or the new one, never half of one, even if this process dies mid-write."""
    private_dir(path.parent)
    replace_private_file(path, text, durable=durable)



def truncation_warning(shown: int, total: int, *, max_lines: int, max_bytes: int) -> str:
    return (
        f"> WARNING: MEMORY.md truncated: {shown} of {total} memories listed "
        f"(caps: {max_lines} lines, {max_bytes} bytes). Run `nova memory list` for all."
    )


def _index_line(memory: Memory) -> str:
    file_name = f"{memory.slug}.md"
    description = " ".join(memory.description.split()) or "(no description)"
    flags = memory.type if memory.status == "active" else f"{memory.type}, {memory.status}"
    return f"- [{memory.name}]({file_name}) — {description} ({flags})"


def render_index(memories: Iterable[Memory], *, max_lines: int = 200, max_bytes: int = 25_000) -> str:
    """One line per memory, newest first, within both caps counting the header and the warning line."""
    ordered = sorted(memories, key=lambda m: (-m.updated.timestamp(), m.name))
    header = ["# Memory index", ""]
    lines = [_index_line(m) for m in ordered]

    def size(rows: Sequence[str]) -> int:
        return len(("\n".join(rows) + "\n").encode("utf-8"))

    if len(header) + len(lines) <= max_lines and size(header + lines) <= max_bytes:
        return "\n".join(header + lines) + "\n"
    kept = lines[: max(0, max_lines - len(header) - 1)]
    while kept:
        warning = truncation_warning(len(kept), len(lines), max_lines=max_lines, max_bytes=max_bytes)
        if size([*header, *kept, warning]) <= max_bytes:
            break
        kept.pop()
    warning = truncation_warning(len(kept), len(lines), max_lines=max_lines, max_bytes=max_bytes)
    return "\n".join([*header, *kept, warning]) + "\n"


# -- the store ----------------------------------------------------------------------------------------
class MemoryStore:
    """Both memory directories behind one name-addressed API. Writes are serialized per directory by a
    file lock so the CLI, a background extraction and consolidation can share them."""

    def __init__(
        self,
        *,
        home_dir: Path,
        project_dir: Path,
        index_max_lines: int = 200,
        index_max_bytes: int = 25_000,
        clock: Callable[[], datetime] = utc_now,
        reviews: ReviewLedger | None = None,
    ) -> None:
        self.home_dir = home_dir
        # Review state lives in the home, never beside project memories a repository could ship.
        self.reviews = reviews or ReviewLedger.for_memory_dir(home_dir)
        self.project_dir = project_dir
        self.index_max_lines = index_max_lines
        self.index_max_bytes = index_max_bytes
        self.clock = clock
        self._thread_lock = threading.RLock()
        # Parsed files by (path) -> (mtime_ns, size, memory): the index is rebuilt after every write, and
        # re-parsing every unchanged file each time would make n writes cost n² parses.
        self._parsed: dict[Path, tuple[int, int, Memory, str]] = {}
        """With each parsed file its content hash, so judging an unchanged file costs a dict lookup."""

    @classmethod
    def for_workspace(cls, *, home: Path, cwd: Path, **kw: Any) -> MemoryStore:
        """`home` is `Settings.home` (~/.nova); `cwd` picks the project by its git root."""
        return cls(home_dir=home_memory_dir(home), project_dir=project_memory_dir(cwd), **kw)

    @property
    def dirs(self) -> tuple[Path, Path]:
        return (self.home_dir, self.project_dir)

    def dir_for(self, memory_type: str) -> Path:
        if memory_type in HOME_TYPES:
            return self.home_dir
        if memory_type in PROJECT_TYPES:
            return self.project_dir
        raise MemoryStoreError(f"unknown memory type {memory_type!r}; expected one of {', '.join(MEMORY_TYPES)}")

    def path_for(self, name: str, memory_type: str) -> Path:
        return self.dir_for(memory_type) / f"{slugify(name)}.md"

    @contextlib.contextmanager
    def _locked(self, directory: Path) -> Iterator[None]:
        private_dir(directory)
        with self._thread_lock, FileLock(str(directory / ".memory.lock")):
            yield

    # -- reading ------------------------------------------------------------------------------------
    def _files(self, directory: Path) -> list[Path]:
        if not directory.is_dir():
            return []
        return sorted(p for p in directory.glob("*.md") if p.name != INDEX_NAME and not p.name.startswith("."))

    def read(self, path: Path) -> Memory:
        try:
            stat = path.stat()
            cached = self._parsed.get(path)
            if cached is not None and cached[:2] == (stat.st_mtime_ns, stat.st_size):
                return self.reviews.judge(cached[2], digest=cached[3])
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise MemoryStoreError(f"{path}: cannot be read ({exc})") from None
        memory = memory_from_text(text, path=path)
        digest = content_hash(memory)
        self._parsed[path] = (stat.st_mtime_ns, stat.st_size, memory, digest)
        return self.reviews.judge(memory, digest=digest)

    def memories(self, *, include_revoked: bool = True) -> list[Memory]:
        """Every readable memory in both directories; unreadable files are skipped (see `problems`)."""
        found: list[Memory] = []
        for directory in self.dirs:
            for path in self._files(directory):
                try:
                    memory = self.read(path)
                except MemoryStoreError as exc:
                    log.warning("skipping memory file: %s", exc)
                    continue
                if include_revoked or memory.status != "revoked":
                    found.append(memory)
        return found

    def problems(self) -> list[str]:
        errors: list[str] = []
        for directory in self.dirs:
            for path in self._files(directory):
                try:
                    self.read(path)
                except MemoryStoreError as exc:
                    errors.append(str(exc))
        return errors

    def find(self, name: str) -> Memory | None:
        """The memory called `name` (by slug) in either directory; the home directory wins a tie."""
        slug = slugify(name)
        for directory in self.dirs:
            path = directory / f"{slug}.md"
            if path.is_file():
                return self.read(path)
        return None

    def get(self, name: str) -> Memory:
        memory = self.find(name)
        if memory is None:
            raise MemoryNotFound(f"no memory named {name!r}")
        return memory

    # -- writing ------------------------------------------------------------------------------------
    def write(self, memory: Memory, *, by: By = "nova", note: str = "") -> Memory:
        """Store `memory` (replacing one of the same name and type), record its status in the review
        ledger and regenerate the index. The status is taken as given: callers that want governance go
        through `nova.memory.governance.remember`, which ends here. `by` says who decided the status
        (`user` for an approval or the user's own words), `note` why a candidate is held."""
        path = self.path_for(memory.name, memory.type)
        # The last line of defence: approving a hand-written file or merging must not store a secret
        # either (`remember` refuses earlier, with the same message).
        findings = find_secrets(f"{memory.name}\n{memory.description}\n{memory.body}")
        if findings:
            raise MemoryStoreError(f"refused: memory {memory.name!r} contains a secret "
                                   f"({describe_findings(findings)}); secrets are never stored in memory")
        stored = replace(memory, path=path, recorded=True,
                         review_note=(note or "awaiting review") if memory.status == "candidate" else "")
        with self._locked(path.parent):
            atomic_write_text(path, memory_to_text(stored))
            self.reviews.record(stored, by=by, note=note)
            self._rebuild_index_locked(path.parent)
        return stored

    def delete(self, name: str) -> Memory:
        memory = self.get(name)
        assert memory.path is not None
        with self._locked(memory.path.parent):
            memory.path.unlink(missing_ok=True)
            self.reviews.forget(memory.path)
            self._rebuild_index_locked(memory.path.parent)
        return memory

    def set_status(self, name: str, status: Status) -> Memory:
        """The user's decision on a memory: `active` is an approval of exactly the content it has now."""
        memory = self.get(name)
        return self.write(replace(memory, status=status, updated=self.clock()), by="user")

    def rebuild_index(self, directory: Path) -> Path:
        with self._locked(directory):
            return self._rebuild_index_locked(directory)

    def _rebuild_index_locked(self, directory: Path) -> Path:
        memories = []
        for path in self._files(directory):
            with contextlib.suppress(MemoryStoreError):
                memories.append(self.read(path))
        index = directory / INDEX_NAME
        atomic_write_text(
            index, render_index(memories, max_lines=self.index_max_lines, max_bytes=self.index_max_bytes),
            durable=False,  # derived from the memory files: losing it to a crash costs one rebuild
        )
        write_journal(directory)  # after every change to the directory, so its mtime is final
        return index
