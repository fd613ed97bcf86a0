"""The consolidation trash: every merge and deletion can be undone for 30 days (`nova memory undo`).

Before consolidation changes a file it puts what it is about to lose here, one JSON file per operation
in `<NOVA_HOME>/memory/.trash/` (private):

    {"id": "c-20250102T100000-ab12", "at": 1735812000.0, "action": "merge" | "delete",
     "entry": {...what the report said: into, merged, why...},
     "files": [{"path": "...", "text": "<the file as it was>", "state": "candidate", "by": "nova"}],
     "result": {"path": "...", "text": "<what the merge wrote>"}}

Undo puts every file back as it was, with the review state it had. It never overwrites an edit: a
file that exists again under the same name is left as it is, and a merged memory that was changed
after the merge keeps its change (the merged-away memories come back beside it). Operations older than
30 days are purged whenever the trash is read.
"""

from __future__ import annotations

import json
import os
import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from nova.errors import NovaError
from nova.fs.private import private_dir
from nova.memory.store import MemoryStore, atomic_write_text, memory_from_text

__all__ = ["RETENTION_DAYS", "TRASH_DIR", "NothingToUndo", "Operation", "Trash", "UndoReport"]

TRASH_DIR = ".trash"
RETENTION_DAYS = 30


class NothingToUndo(NovaError):
    """No such operation in the trash (never there, undone already, or older than 30 days)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Operation:
    id: str
    at: float
    action: str
    entry: Mapping[str, Any]
    files: tuple[Mapping[str, Any], ...]
    result: Mapping[str, Any] | None = None

    def describe(self) -> str:
        when = datetime.fromtimestamp(self.at, UTC).strftime("%Y-%m-%d %H:%M")
        if self.action == "merge":
            what = (f"merged {', '.join(repr(n) for n in self.entry.get('merged', ()))} into "
                    f"{self.entry.get('into')!r}")
        else:
            what = f"deleted {self.entry.get('name')!r}"
        why = self.entry.get("why") or self.entry.get("reason") or ""
        return f"{self.id}  {when}  {what}" + (f" ({why})" if why else "")


@dataclass(slots=True, kw_only=True)
class UndoReport:
    operation: Operation
    restored: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    """Files left as they are because they were changed after the operation (never overwritten)."""

    def describe(self) -> list[str]:
        lines = [f"undid {self.operation.describe()}"]
        lines += [f"  restored {p}" for p in self.restored]
        lines += [f"  kept {p}: it was changed after the consolidation, so your version stays" for p in self.kept]
        return lines


class Trash:
    def __init__(self, home_memory_dir: Path, *, clock: Callable[[], float] = time.time) -> None:
        self.dir = home_memory_dir / TRASH_DIR
        self.clock = clock

    def put(self, *, action: str, entry: Mapping[str, Any], files: Sequence[Mapping[str, Any]],
            result: Mapping[str, Any] | None = None) -> str:
        now = self.clock()
        op_id = f"c-{datetime.fromtimestamp(now, UTC).strftime('%Y%m%dT%H%M%S')}-{secrets.token_hex(2)}"
        private_dir(self.dir)
        record = {"id": op_id, "at": now, "action": action, "entry": dict(entry), "files": [dict(f) for f in files],
                  "result": dict(result) if result else None}
        atomic_write_text(self.dir / f"{op_id}.json", json.dumps(record, ensure_ascii=False, indent=1) + "\n")
        os.chmod(self.dir / f"{op_id}.json", 0o600)
        return op_id

    def operations(self) -> list[Operation]:
        """Newest first; operations past the retention are deleted on the way."""
        if not self.dir.is_dir():
            return []
        cutoff = self.clock() - RETENTION_DAYS * 86400
        found: list[Operation] = []
        for path in self.dir.glob("c-*.json"):
            try:
                raw = json.loads(path.read_text(encoding="utf-8"))
                op = Operation(id=str(raw["id"]), at=float(raw["at"]), action=str(raw["action"]),
                               entry=raw.get("entry") or {}, files=tuple(raw.get("files") or ()),
                               result=raw.get("result"))
            except (OSError, ValueError, KeyError, TypeError, UnicodeDecodeError):
                continue
            if op.at < cutoff:
                path.unlink(missing_ok=True)
                continue
            found.append(op)
        return sorted(found, key=lambda o: (-o.at, o.id))

    def undo(self, store: MemoryStore, op_id: str | None = None) -> UndoReport:
        ops = self.operations()
        op = next((o for o in ops if o.id == op_id), None) if op_id else (ops[0] if ops else None)
        if op is None:
            raise NothingToUndo(f"no consolidation {op_id!r} to undo (kept {RETENTION_DAYS} days)" if op_id
                                else "nothing to undo: the consolidation trash is empty")
        report = UndoReport(operation=op)
        result = op.result or {}
        for saved in op.files:
            path = Path(str(saved["path"]))
            text = str(saved["text"])
            if path == Path(str(result.get("path", ""))):
                # The merged memory: back to its own text only if nobody changed it since the merge.
                current = path.read_text(encoding="utf-8") if path.is_file() else None
                if current is not None and current != result.get("text"):
                    report.kept.append(str(path))
                    continue
            elif path.exists():
                report.kept.append(str(path))
                continue
            self._restore(store, path, text, state=saved.get("state"), by=saved.get("by"))
            report.restored.append(str(path))
        (self.dir / f"{op.id}.json").unlink(missing_ok=True)
        return report

    @staticmethod
    def _restore(store: MemoryStore, path: Path, text: str, *, state: Any, by: Any) -> None:
        atomic_write_text(path, text)
        if state in ("candidate", "active", "revoked"):
            from dataclasses import replace

            memory = replace(memory_from_text(text, path=path), status=state)
            store.reviews.record(memory, by="user" if by == "user" else "nova")
        store.rebuild_index(path.parent)
