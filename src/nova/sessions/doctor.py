"""`nova sessions doctor`: check a session's record against its transcript and rebuild what is derived.

The transcript is the source of truth. For each session the doctor reads it whole and reports damaged
lines (by byte offset; they are left in place, readers skip them), a torn last line (set aside into
`transcript.jsonl.corrupt-<time>`), a last record missing its newline (given one); then it compares
meta.json (missing, corrupt, counts that disagree with the records: rewritten from the transcript,
the old file kept as `meta.json.corrupt-<time>`) and the session store (an unreadable database moved
aside; a missing session row or missing messages indexed again). It takes the session's lock like any
writer, so it never repairs a session another process is writing.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nova.errors import SessionLocked, StorageError
from nova.fs.special_files import open_regular, special_kind
from nova.sessions.lock import SessionLock
from nova.sessions.meta import META_NAME, read_meta_or_damage, session_dir, validate_session_id, write_meta
from nova.sessions.rebuild import count_transcript, meta_from_counts, rebuild_store_rows, set_aside
from nova.sessions.session import default_store, session_record
from nova.sessions.sqlite import SQLiteSessionStore
from nova.sessions.store import SessionStore
from nova.sessions.transcript import TRANSCRIPT_NAME, Transcript

__all__ = ["DoctorReport", "StoreCheck", "check_session", "check_store", "session_ids"]


@dataclass(slots=True)
class DoctorReport:
    session_id: str
    found: list[str] = field(default_factory=list)
    did: list[str] = field(default_factory=list)
    ok: bool = True
    """False when something found could not be dealt with (the session is busy, its transcript gone)."""

    def to_dict(self) -> dict[str, Any]:
        return {"session_id": self.session_id, "ok": self.ok, "found": self.found, "did": self.did}


@dataclass(slots=True)
class StoreCheck:
    store: SessionStore
    found: list[str] = field(default_factory=list)
    did: list[str] = field(default_factory=list)


def session_ids(home: Path) -> list[str]:
    root = home / "sessions"
    if not root.is_dir():
        return []
    ids = []
    for entry in sorted(root.iterdir()):
        try:
            if entry.is_dir():
                ids.append(validate_session_id(entry.name))
        except StorageError:
            continue
    return ids


def check_store(home: Path) -> StoreCheck:
    """Open the store (an unreadable one is moved aside as it opens) and ask SQLite to check it; a
    damaged one is moved aside too and a new one started. Sessions are then re-indexed one by one."""
    store = default_store(home)
    check = StoreCheck(store=store)
    if isinstance(store, SQLiteSessionStore):
        if store.set_aside is not None:
            check.found.append(f"the session store {store.path} was unreadable ({store.set_aside_reason})")
            check.did.append(f"moved it to {store.set_aside} and started a new one")
        problem = store.quick_check()
        if problem:
            store.close()
            check.found.append(f"the session store {store.path} is damaged ({problem})")
            aside = set_aside(store.path)
            for suffix in ("-wal", "-shm"):
                side = store.path.with_name(store.path.name + suffix)
                if side.exists():
                    os.replace(side, aside.with_name(aside.name.replace(".corrupt-", suffix + ".corrupt-", 1)))
            check.did.append(f"moved it to {aside} and started a new one")
            check.store = default_store(home)
    return check


def check_session(home: Path, session_id: str, store: SessionStore) -> DoctorReport:
    report = DoctorReport(session_id=session_id)
    directory = session_dir(home, session_id)
    transcript = Transcript(directory / TRANSCRIPT_NAME)
    if not directory.is_dir():
        report.found.append(f"no session directory {directory}")
        report.ok = False
        return report
    if not transcript.path.exists():
        report.found.append(f"{transcript.path} is missing: nothing to rebuild from")
        report.ok = False
        return report
    kind = special_kind(os.stat(transcript.path).st_mode)
    if kind is not None:  # a FIFO would hang the read, a device never end it
        report.found.append(f"{transcript.path} is {kind}, not a transcript: nothing read from it; move it aside")
        report.ok = False
        return report
    lock = SessionLock(directory, session_id)
    try:
        lock.acquire()
    except SessionLocked as exc:
        report.found.append(str(exc))
        report.ok = False
        return report
    try:
        _check_locked(report, directory, transcript, store)
    finally:
        lock.release()
    return report


def _check_locked(report: DoctorReport, directory: Path, transcript: Transcript, store: SessionStore) -> None:
    session_id = report.session_id
    # The transcript itself: a torn or unterminated last line first, so the full read below sees the
    # log as every later reader will.
    size = transcript.path.stat().st_size
    if size == 0:
        report.found.append(f"the transcript {transcript.path} is empty (0 bytes)")
    torn = transcript.find_torn_tail()
    unterminated = torn is None and size > 0 and _last_byte(transcript.path) != b"\n"
    recovered = transcript.recover()
    transcript.close()
    if recovered is not None:
        report.found.append(recovered.describe().split(";")[0])
        report.did.append(f"moved the incomplete last record to {recovered.quarantined}")
    elif unterminated:
        report.found.append("the last record had no newline at its end")
        report.did.append("added the newline (the record is kept)")
    counts = count_transcript(transcript)
    for bad in counts.bad:
        report.found.append(f"damaged record at byte {bad.offset} ({bad.size} bytes): {bad.reason}")
    if counts.bad:
        report.did.append(f"left {len(counts.bad)} damaged record(s) in place; readers skip them with a warning")

    # meta.json, derived from the transcript.
    rebuilt = meta_from_counts(session_id, counts, transcript=transcript.path)
    meta, damage = read_meta_or_damage(directory)
    if meta is None:
        report.found.append(damage)
        kept = ""
        if (directory / META_NAME).exists():
            kept = f", kept the old one as {set_aside(directory / META_NAME).name}"
        meta = rebuilt
        write_meta(directory, meta)
        report.did.append(f"rebuilt meta.json from the transcript{kept}")
    elif meta.message_count != counts.messages:
        report.found.append(f"meta.json counts {meta.message_count} message(s), the transcript holds {counts.messages}")
        meta.message_count = counts.messages
        meta.updated_at = max(meta.updated_at, rebuilt.updated_at)
        write_meta(directory, meta)
        report.did.append(f"set the count in meta.json to {counts.messages}")

    # The store: its session row and every message the transcript holds.
    row = store.get_session(session_id)
    stored = {s.message.id for s in store.get_messages(session_id, include_compacted=True)}
    missing = [mid for mid in dict.fromkeys(counts.message_ids) if mid not in stored]
    if row is None:
        report.found.append(f"the session store has no row for session {session_id}")
    if missing:
        report.found.append(f"the session store is missing {len(missing)} of {len(set(counts.message_ids))} "
                            "message(s)")
        rebuild_store_rows(store, session_id, transcript)
        report.did.append(f"indexed {len(missing)} message(s) again from the transcript")
    if row is None or dict(row.meta).get("message_count") != meta.message_count:
        if row is not None:
            report.found.append("the session store's row disagrees with meta.json")
        store.save_session(session_record(meta))
        report.did.append("wrote the session's row in the store")


def _last_byte(path: Path) -> bytes:
    with open_regular(path, str(path)) as f:
        f.seek(-1, os.SEEK_END)
        return f.read(1)
