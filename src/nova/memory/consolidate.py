"""Consolidation (SPEC MEM-6): merge duplicate memories and delete expired ones, in the background.

Gates, checked in this order by `Consolidator.maybe_run()`:

1. scans are throttled: at most one gate check every `consolidate_scan_interval_s` (10 min);
2. at least `consolidate_min_hours` (24 h) since the last completed run;
3. at least `consolidate_min_sessions` (5) sessions started since then;
4. the lock file `<home>/memory/.consolidate.lock` (holder pid, host, start time) is free, or its holder
   is dead (same host, no such pid), or it is older than `lock_stale_s`: then it is taken over.

The clock is injected so the gates can be tested without waiting. Every merge and delete is appended to
`<home>/memory/consolidation.log` as one JSON object per line.

Every merge and deletion is reported with why (which name, description or text made them duplicates,
or when it expired) and put in the trash first (`nova.memory.trash`): `nova memory undo` restores it
for 30 days. The scan starts from a snapshot of every file's text; a file edited after that is never
overwritten or deleted: its change is skipped and reported, and the next run sees the new text.

Duplicates are memories of the same type that share a name slug, a description or a body (after
whitespace and case folding). Only unreviewed candidates that Nova itself wrote are merged: the most
recently updated one is kept (a `nova memory edit` counts as an update, so the text a user just edited
keeps its name), and nothing the others say is lost: every body not already contained in another is
joined in, a description that differs is kept with its body, the expiry is the latest (none if any had
none), provenance is unioned, and the result is still a candidate. Approved memories are never merged into or out of: a candidate that duplicates one is left
as it is and reported as `held` for the user to review. Files Nova has no review record of are left
alone too (merging them would give unknown text Nova's provenance). Every merge is reported by name,
never silent. Revoked memories are kept: they are the record that stops the model from re-creating them.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from filelock import FileLock

from nova.fs.private import create_private_file, private_dir
from nova.memory.config import MemoryConfig
from nova.memory.record import Memory, Status, format_time
from nova.memory.reviews import content_hash
from nova.memory.store import MemoryStore, atomic_write_text, memory_to_text
from nova.memory.trash import Trash

__all__ = ["ConsolidationLock", "ConsolidationReport", "Consolidator", "count_sessions_since", "pid_alive"]

Clock = Callable[[], float]


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by someone else
    except OSError:
        return False
    return True


def count_sessions_since(sessions_dir: Path) -> Callable[[float], int]:
    """Counts session directories written after a time: each run of Nova creates one (SES-1)."""
    def count(since: float) -> int:
        try:
            with os.scandir(sessions_dir) as it:
                return sum(1 for e in it if e.is_dir() and e.stat().st_mtime > since)
        except (FileNotFoundError, NotADirectoryError):
            return 0
    return count


class ConsolidationLock:
    """A lock file naming its holder. The short decision (free? stale? take over) runs under an OS file
    lock, released by the kernel if a process dies, so two processes can never both take over."""

    def __init__(self, path: Path, *, stale_after: float = 3600.0, clock: Clock = time.time) -> None:
        self.path = path
        self.stale_after = stale_after
        self.clock = clock
        self.pid = os.getpid()
        self.host = socket.gethostname()
        self.took_over: dict[str, Any] | None = None
        self._token: dict[str, Any] | None = None

    def holder(self) -> dict[str, Any] | None:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (FileNotFoundError, json.JSONDecodeError, UnicodeDecodeError):
            return None
        return data if isinstance(data, dict) else None

    def _stale_reason(self, holder: dict[str, Any]) -> str | None:
        started = holder.get("started")
        if not isinstance(started, int | float) or self.clock() - started > self.stale_after:
            return "lock older than the stale age"
        pid = holder.get("pid")
        if holder.get("host") == self.host and isinstance(pid, int) and not pid_alive(pid):
            return f"holder pid {pid} is dead"
        return None

    def acquire(self) -> bool:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(self.path) + ".guard", timeout=10):
            if self.path.exists():
                holder = self.holder()
                if holder is not None:
                    reason = self._stale_reason(holder)
                    if reason is None:
                        return False
                    self.took_over = {**holder, "reason": reason}
                else:
                    self.took_over = {"reason": "unreadable lock file"}
            self._token = {"pid": self.pid, "host": self.host, "started": self.clock()}
            atomic_write_text(self.path, json.dumps(self._token))
            return True

    def release(self) -> None:
        if self._token is None:
            return
        with FileLock(str(self.path) + ".guard", timeout=10):
            if self.holder() == self._token:  # never delete a lock someone took over from us
                self.path.unlink(missing_ok=True)
        self._token = None

    @contextlib.contextmanager
    def held(self) -> Iterator[bool]:
        acquired = self.acquire()
        try:
            yield acquired
        finally:
            if acquired:
                self.release()


@dataclass(slots=True, kw_only=True)
class ConsolidationReport:
    ran: bool
    reason: str
    merged: list[dict[str, Any]] = field(default_factory=list)
    deleted: list[dict[str, Any]] = field(default_factory=list)
    held: list[dict[str, Any]] = field(default_factory=list)
    """Duplicates left unmerged because an approved memory is involved: the user decides."""
    skipped: list[dict[str, Any]] = field(default_factory=list)
    """Changes not made because a file was edited after the scan started: the edit wins."""

    def describe(self) -> list[str]:
        """One line per change, for the person who ran `nova memory consolidate`."""
        lines = [f"kept {e['into']!r} ← merged {', '.join(repr(n) for n in e['merged'])} ({e.get('why', '')}): "
                 f"their text is now in {e['into']!r} (still a candidate: review it with `nova memory show "
                 f"{e['into']}`; undo with `nova memory undo {e.get('undo', '')}` within 30 days)"
                 for e in self.merged]
        lines += [f"deleted {e['name']!r}: {e['reason']} (undo with `nova memory undo {e.get('undo', '')}` within "
                  "30 days)" for e in self.deleted]
        lines += [f"skipped {', '.join(repr(n) for n in e['names'])}: {e['reason']}" for e in self.skipped]
        lines += [f"left {e['name']!r} unmerged: it duplicates approved memory {e['duplicates']!r} "
                  "(forget one, or keep both)" for e in self.held]
        return lines


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


class Consolidator:
    def __init__(
        self,
        *,
        store: MemoryStore,
        state_dir: Path,
        config: MemoryConfig | None = None,
        clock: Clock = time.time,
        count_sessions: Callable[[float], int] | None = None,
    ) -> None:
        self.store = store
        self.config = config or MemoryConfig()
        self.clock = clock
        self.state_path = state_dir / ".consolidate.json"
        self.log_path = state_dir / "consolidation.log"
        self.lock = ConsolidationLock(state_dir / ".consolidate.lock", stale_after=self.config.lock_stale_s,
                                      clock=clock)
        self.count_sessions = count_sessions or (lambda since: 0)

    @classmethod
    def for_home(cls, *, store: MemoryStore, home: Path, **kw: Any) -> Consolidator:
        return cls(store=store, state_dir=store.home_dir, count_sessions=count_sessions_since(home / "sessions"),
                   **kw)

    # -- state --------------------------------------------------------------------------------------
    def _state(self) -> dict[str, float]:
        try:
            data = json.loads(self.state_path.read_text(encoding="utf-8"))
        except (FileNotFoundError, json.JSONDecodeError, UnicodeDecodeError):
            return {}
        return {k: float(v) for k, v in data.items() if isinstance(v, int | float)} if isinstance(data, dict) else {}

    def _save_state(self, **updates: float) -> None:
        atomic_write_text(self.state_path, json.dumps({**self._state(), **updates}, sort_keys=True))

    # -- gates --------------------------------------------------------------------------------------
    def gate(self) -> str | None:
        """None when a run may start, else why not. Records the scan time (that is the throttle)."""
        now = self.clock()
        state = self._state()
        last_scan = state.get("last_scan")
        if last_scan is not None and now - last_scan < self.config.consolidate_scan_interval_s:
            return f"throttled: last check {now - last_scan:.0f}s ago"
        self._save_state(last_scan=now)
        last_run = state.get("last_run", 0.0)
        if last_run and now - last_run < self.config.consolidate_min_hours * 3600:
            return f"too soon: last run {(now - last_run) / 3600:.1f}h ago"
        sessions = self.count_sessions(last_run)
        if sessions < self.config.consolidate_min_sessions:
            return f"not enough sessions since the last run ({sessions} of {self.config.consolidate_min_sessions})"
        return None

    def maybe_run(self) -> ConsolidationReport:
        reason = self.gate()
        if reason is not None:
            return ConsolidationReport(ran=False, reason=reason)
        return self.run()

    def run(self) -> ConsolidationReport:
        """One consolidation under the lock (no time gates: `nova memory consolidate` calls this)."""
        with self.lock.held() as acquired:
            if not acquired:
                holder = self.lock.holder() or {}
                return ConsolidationReport(ran=False, reason=f"locked by pid {holder.get('pid')} on "
                                                             f"{holder.get('host')}")
            report = ConsolidationReport(ran=True, reason="ran")
            if self.lock.took_over:
                report.reason = f"ran (took over a stale lock: {self.lock.took_over['reason']})"
            self._consolidate(report)
            self._save_state(last_run=self.clock())
            return report

    # -- the work -----------------------------------------------------------------------------------
    def _log(self, entry: dict[str, Any]) -> None:
        private_dir(self.log_path.parent)
        create_private_file(self.log_path)
        with self.log_path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(entry, ensure_ascii=False, sort_keys=True) + "\n")

    def _snapshot(self) -> dict[Path, str]:
        """Every memory file's text as the scan starts: an edit made after it is never overwritten."""
        texts: dict[Path, str] = {}
        for directory in self.store.dirs:
            if not directory.is_dir():
                continue
            for path in directory.glob("*.md"):
                with contextlib.suppress(OSError, UnicodeDecodeError):
                    texts[path] = path.read_text(encoding="utf-8")
        return texts

    @staticmethod
    def _unchanged(memory: Memory, snapshot: dict[Path, str]) -> bool:
        assert memory.path is not None
        try:
            return snapshot.get(memory.path) == memory.path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return False

    def _saved(self, memory: Memory, snapshot: dict[Path, str]) -> dict[str, Any]:
        assert memory.path is not None
        record = self.store.reviews.get(content_hash(memory))
        return {"path": str(memory.path), "text": snapshot[memory.path],
                "state": record.state if record is not None else None,
                "by": record.by if record is not None else "nova"}

    def _skip(self, report: ConsolidationReport, names: list[str], stamp: str) -> None:
        entry = {"at": stamp, "action": "skip", "names": names,
                 "reason": "edited after the consolidation scan started: left as it is (run it again to "
                           "consolidate the new text)"}
        report.skipped.append(entry)
        self._log(entry)

    def _consolidate(self, report: ConsolidationReport) -> None:
        now = datetime.fromtimestamp(self.clock(), UTC).replace(microsecond=0)
        stamp = format_time(now)
        trash = Trash(self.store.home_dir, clock=self.clock)
        trash.operations()  # purges what is past its 30 days
        snapshot = self._snapshot()
        live: list[Memory] = []
        for memory in self.store.memories():
            if memory.path not in snapshot:
                continue  # appeared after the scan started: the next run sees it
            if memory.is_expired(now):
                if not self._unchanged(memory, snapshot):
                    self._skip(report, [memory.name], stamp)
                    continue
                entry: dict[str, Any] = {"at": stamp, "action": "delete", "name": memory.name, "type": memory.type,
                         "reason": f"expired {format_time(memory.expires)}" if memory.expires else "expired"}
                entry["undo"] = trash.put(action="delete", entry=entry, files=[self._saved(memory, snapshot)])
                self._delete_path(memory)
                report.deleted.append(entry)
                self._log(entry)
            elif memory.status != "revoked":
                live.append(memory)
        for group in self._duplicate_groups(live):
            approved = [m for m in group if m.status == "active"]
            mergeable = [m for m in group if m.status == "candidate" and m.recorded]
            if approved:
                for other in [*approved[1:], *mergeable]:
                    entry = {"at": stamp, "action": "hold", "name": other.name, "type": other.type,
                             "duplicates": approved[0].name}
                    report.held.append(entry)
                    self._log(entry)
                continue
            if len(mergeable) < 2:
                continue
            survivor, others = mergeable[0], mergeable[1:]
            if not all(self._unchanged(m, snapshot) for m in mergeable):
                self._skip(report, [m.name for m in mergeable if not self._unchanged(m, snapshot)], stamp)
                continue
            merged = self._merge(survivor, others, now)
            entry = {"at": stamp, "action": "merge", "into": survivor.name, "type": survivor.type,
                     "merged": [o.name for o in others], "why": self._why(survivor, others)}
            # Into the trash before anything changes, so a crash between the steps loses nothing either.
            entry["undo"] = trash.put(action="merge", entry=entry,
                                      files=[self._saved(m, snapshot) for m in mergeable],
                                      result={"path": str(survivor.path), "text": memory_to_text(merged)})
            # Written before the others go: if the write is refused, nothing has been lost.
            self.store.write(merged, note=f"merged by consolidation from {', '.join(o.name for o in others)}")
            for other in others:
                if self._unchanged(other, snapshot):
                    self._delete_path(other)
                else:  # edited while the merge ran: its new text stays where it is
                    self._skip(report, [other.name], stamp)
            report.merged.append(entry)
            self._log(entry)

    @staticmethod
    def _why(survivor: Memory, others: list[Memory]) -> str:
        """What made each memory a duplicate, said the way a person would check it."""
        group = [survivor, *others]
        reasons: list[str] = []
        for other in others:
            peers = [m for m in group if m is not other]
            same = [label for label, key in (("the same name", lambda m: m.slug),
                                             ("the same description", lambda m: _norm(m.description)),
                                             ("the same text", lambda m: _norm(m.body)))
                    if key(other) and any(key(other) == key(p) for p in peers)]
            reasons.append(f"{other.name!r} has {' and '.join(same) or 'overlapping text'}")
        return "; ".join(reasons)

    def _delete_path(self, memory: Memory) -> None:
        assert memory.path is not None
        memory.path.unlink(missing_ok=True)
        self.store.reviews.forget(memory.path)
        self.store.rebuild_index(memory.path.parent)

    @staticmethod
    def _duplicate_groups(memories: list[Memory]) -> list[list[Memory]]:
        """Connected groups under "same type and same slug, description or body", newest first."""
        parent = list(range(len(memories)))

        def find(i: int) -> int:
            while parent[i] != i:
                parent[i] = parent[parent[i]]
                i = parent[i]
            return i

        seen: dict[tuple[str, str, str], int] = {}
        for i, m in enumerate(memories):
            keys = [("slug", m.slug), ("body", _norm(m.body))]
            if m.description.strip():
                keys.append(("description", _norm(m.description)))
            for kind, value in keys:
                if not value:
                    continue
                key = (m.type, kind, value)
                if key in seen:
                    parent[find(i)] = find(seen[key])
                else:
                    seen[key] = i
        groups: dict[int, list[Memory]] = {}
        for i, m in enumerate(memories):
            groups.setdefault(find(i), []).append(m)
        return [sorted(g, key=lambda m: (-m.updated.timestamp(), m.name)) for g in groups.values() if len(g) > 1]

    @staticmethod
    def _merge(survivor: Memory, others: list[Memory], now: datetime) -> Memory:
        """One memory saying everything the group said: the survivor's text first, then each other's
        body (headed by its description when that differs), leaving out only text already contained."""
        paragraphs: list[str] = []

        def add(text: str) -> None:
            if not text or any(_norm(text) in _norm(p) for p in paragraphs):
                return
            # A longer text that contains an earlier one replaces it rather than repeating it.
            paragraphs[:] = [p for p in paragraphs if _norm(p) not in _norm(text)]
            paragraphs.append(text)

        add(survivor.body.strip())
        for m in others:
            body, description = m.body.strip(), m.description.strip()
            said = _norm(description) in (_norm(survivor.description), "") or any(
                _norm(description) in _norm(p) for p in paragraphs)
            body_said = not body or any(_norm(body) in _norm(p) for p in paragraphs)
            if said:
                add(body)
            elif body_said:
                add(description)
            else:
                add(f"{description}:\n{body}")
        group = [survivor, *others]
        status: Status = "candidate"  # only candidates are merged, and the merge itself is unreviewed
        messages = tuple(dict.fromkeys(msg for m in group for msg in m.source.messages))
        expiries = [m.expires for m in group]
        return replace(
            survivor, body="\n\n".join(paragraphs), status=status, updated=now,
            created=min(m.created for m in group),
            # Text that never expired must not start to expire by being merged.
            expires=None if any(e is None for e in expiries) else max(e for e in expiries if e is not None),
            source=replace(survivor.source, messages=messages),
            external=any(m.external for m in group),
        )
