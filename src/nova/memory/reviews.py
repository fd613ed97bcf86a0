"""Review state kept where neither the model nor a repository can write it (SPEC MEM-7, MEM-8).

A memory file's frontmatter says `status: active, author: user`, but anything that can write the file
can write that: a tool the model ran, a `git pull`, a file shipped in a hostile repository. So the
frontmatter is never believed on its own. Every memory Nova writes, and every approval a user gives,
is recorded in a ledger, `<NOVA_HOME>/memory/.reviews.json` (0600 in a 0700 folder, under the home
that no model tool may write), keyed by the memory's content hash:

    {"version": 1, "memories": {"<sha256>": {"state": "active", "name": "...", "path": "...",
                                              "by": "user", "at": "2025-01-02T10:00:00Z", "note": ""}}}

The hash covers what a memory says and where it applies: its folder, name, type, description, body,
expiry, author, origin and external flag; not its status (recorded here) nor its timestamps. A file
whose hash has no record was not written or approved through Nova (written by hand or by a tool,
edited after its review, or older than this ledger): it is an unreviewed candidate whatever its
frontmatter says, never recalled, and `nova memory list` says why. A revoked status in a file is
always honoured: revoking is the safe direction.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from filelock import FileLock

from nova.fs.private import private_dir, replace_private_file

if TYPE_CHECKING:
    from nova.memory.record import Memory

__all__ = ["LEDGER_NAME", "ReviewLedger", "ReviewRecord", "content_hash"]

log = logging.getLogger(__name__)

LEDGER_NAME = ".reviews.json"
State = Literal["candidate", "active", "revoked"]
By = Literal["user", "nova"]

UNREVIEWED = ("not written or approved through Nova (added by hand, by a tool or a repository, or older "
              "than review records): check it, then `nova memory approve {name}`")
CHANGED = ("changed outside Nova since it was reviewed: check it, then `nova memory approve {name}`")

# Parsed ledgers by path -> (mtime_ns, size, records, state by file): recall reads the ledger each turn.
_cache: dict[Path, tuple[int, int, dict[str, dict[str, Any]], dict[str, State]]] = {}
_cache_lock = threading.Lock()


def content_hash(memory: Memory) -> str:
    """The hash a review is recorded under (see the module doc for what it covers)."""
    folder = str(Path(os.path.realpath(memory.path.parent))) if memory.path is not None else ""
    fields = {
        "folder": folder,
        "name": memory.name.strip(),
        "type": memory.type,
        "description": memory.description.strip(),
        "body": memory.body.strip(),
        "expires": memory.expires.astimezone(UTC).isoformat() if memory.expires else None,
        "author": memory.author,
        "origin": memory.source.origin,
        "external": bool(memory.external),
    }
    encoded = json.dumps(fields, ensure_ascii=False, sort_keys=True).encode("utf-8", "surrogatepass")
    return hashlib.sha256(encoded).hexdigest()


@dataclass(frozen=True, slots=True, kw_only=True)
class ReviewRecord:
    state: State
    name: str
    path: str
    by: By
    at: str
    note: str = ""


def _record(raw: Any) -> ReviewRecord | None:
    if not isinstance(raw, dict) or raw.get("state") not in ("candidate", "active", "revoked"):
        return None
    return ReviewRecord(state=raw["state"], name=str(raw.get("name", "")), path=str(raw.get("path", "")),
                        by="user" if raw.get("by") == "user" else "nova", at=str(raw.get("at", "")),
                        note=str(raw.get("note", "")))


class ReviewLedger:
    """The review records of one Nova home. Reads are cached by the file's mtime and size; writes are
    serialized across processes by a file lock and replace the file atomically."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def for_memory_dir(cls, home_memory_dir: Path) -> ReviewLedger:
        return cls(home_memory_dir / LEDGER_NAME)

    # -- reading ------------------------------------------------------------------------------------
    def _load(self) -> tuple[dict[str, dict[str, Any]], dict[str, State]]:
        """(records by hash, state by file path), cached while the file is unchanged."""
        try:
            stat = self.path.stat()
        except (FileNotFoundError, NotADirectoryError):
            return {}, {}
        with _cache_lock:
            cached = _cache.get(self.path)
            if cached is not None and cached[:2] == (stat.st_mtime_ns, stat.st_size):
                return cached[2], cached[3]
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            records = data.get("memories") if isinstance(data, dict) else None
            if not isinstance(records, dict):
                raise ValueError("no 'memories' mapping")
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            # Losing review state makes memories candidates again, never the reverse.
            log.warning("memory review records %s unreadable (%s): every memory needs review again",
                        self.path, exc)
            records = {}
        by_path: dict[str, State] = {}
        for raw in records.values():
            record = _record(raw)
            if record is not None:
                by_path[record.path] = record.state
        with _cache_lock:
            _cache[self.path] = (stat.st_mtime_ns, stat.st_size, records, by_path)
        return records, by_path

    def get(self, digest: str) -> ReviewRecord | None:
        return _record(self._load()[0].get(digest))

    def state_of_path(self, path: Path) -> State | None:
        """The state last recorded for a file, whatever its content (the scan's cheap pre-check)."""
        return self._load()[1].get(str(Path(os.path.realpath(path))))

    def paths(self) -> dict[str, State]:
        """Every recorded file (resolved path) and its state."""
        return self._load()[1]

    # -- judging a memory ---------------------------------------------------------------------------
    def judge(self, memory: Memory, *, digest: str | None = None) -> Memory:
        """`memory` with the status the ledger gives it: `review_note` says why it is held when the
        ledger, not the file, decided. `digest` is its `content_hash` when the caller has it."""
        if memory.status == "revoked":
            return memory
        record = self.get(digest or content_hash(memory))
        if record is None:
            previous = self.state_of_path(memory.path) if memory.path is not None else None
            note = CHANGED if previous in ("active", "candidate") else UNREVIEWED
            return replace(memory, status="candidate", recorded=False, review_note=note.format(name=memory.name))
        if record.state == "revoked":
            return replace(memory, status="revoked")
        if record.state == "candidate":
            return replace(memory, status="candidate", review_note=record.note or "awaiting review")
        return memory  # approved; a file that says candidate stays one

    # -- writing ------------------------------------------------------------------------------------
    @contextlib.contextmanager
    def _locked(self) -> Iterator[dict[str, dict[str, Any]]]:
        private_dir(self.path.parent)
        with FileLock(str(self.path) + ".lock", mode=0o600):
            records = dict(self._load()[0])
            yield records
            self._save(records)

    def _save(self, records: dict[str, dict[str, Any]]) -> None:
        replace_private_file(self.path, json.dumps({"version": 1, "memories": records}, ensure_ascii=False,
                                                   sort_keys=True, indent=1) + "\n", durable=True)

    def record(self, memory: Memory, *, by: By, note: str = "") -> None:
        """Record `memory` (written at its path) with its status. Earlier records of the same file are
        dropped, so content the file held before is not approved by a later review."""
        self.record_many([memory], by=by, note=note)

    def record_many(self, memories: Iterable[Memory], *, by: By, note: str = "") -> None:
        stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        with self._locked() as records:
            by_path = {v.get("path"): k for k, v in records.items() if isinstance(v, dict)}
            for memory in memories:
                assert memory.path is not None
                where = str(Path(os.path.realpath(memory.path)))
                old = by_path.pop(where, None)
                if old is not None:
                    records.pop(old, None)
                digest = content_hash(memory)
                records[digest] = {"state": memory.status, "name": memory.name, "path": where, "by": by,
                                   "at": stamp, "note": note}
                by_path[where] = digest

    def forget(self, path: Path) -> None:
        where = str(Path(os.path.realpath(path)))
        with self._locked() as records:
            for key in [k for k, v in records.items() if isinstance(v, dict) and v.get("path") == where]:
                del records[key]
