"""`Session`: one session directory plus its rows in the session store, behind the calls the agent loop makes.

    session = Session.create(home, title="fix the parser", cwd=".", provider="anthropic", model="claude-…")
    session.record_message(user_message)
    session.record_message(assistant_message, usage)   # usage goes into the record (audit)
    session.add_cost(usage, cost_usd)                  # totals move here, exactly once per call
    session.flush()                                    # turn end: fsync the log, write meta.json
    ...
    session = Session.open(home, session_id)           # locks it for this process; sets a torn last line aside
    history = session.load_history()                   # after the last boundary, repaired (SES-4, SES-5)

The transcript is written first and is authoritative; the store is the queryable copy (compacted flags,
snipped content). A crash between the two leaves the store one message short, which `append_messages`
tolerates on the next write because it ignores ids it already has. A caller that records many messages
quickly (a framework adapter) may let the store rows wait for a batch (`record_messages(store_later=True)`):
they are written before any write that needs them and at every `flush`. meta.json and the store's rows are
rebuilt from the transcript when they are missing or damaged (`rebuild.py`), and a writable open holds
`session.lock` (`lock.py`) until `close`, so two processes never write one session at once.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from nova.errors import StorageError
from nova.fs.private import FOLDER_MODE, create_private_file, private_dir
from nova.messages import Message, new_id
from nova.model import CallPurpose, Usage
from nova.sessions.db_transcript import open_transcript
from nova.sessions.lock import SessionLock
from nova.sessions.meta import (
    ARTIFACT_DIRS,
    META_NAME,
    MODEL_EVENT,
    SessionMeta,
    find_git_root,
    new_session_id,
    read_meta_or_damage,
    session_dir,
    title_from_prompt,
    validate_session_id,
    write_meta,
)
from nova.sessions.recorder import RecordedSession
from nova.sessions.repair import HistoryScan, RepairReport, repair_history
from nova.sessions.schema import BoundaryRecord, printable, strip_thinking
from nova.sessions.store import SessionRecord, SessionStore, SetAsideReport, StoredTaskState
from nova.sessions.transcript import TRANSCRIPT_NAME, BadLine, TailRead, TornTail, Transcript

__all__ = ["STORE_BATCH", "STORE_DELAY_S", "Session", "default_store", "delete_session", "list_sessions"]

STORE_BATCH = 64
"""Messages recorded with `store_later` are written to the store once this many wait..."""
STORE_DELAY_S = 1.0
"""... or once the oldest has waited this long (checked when the next one is recorded)."""

def default_store(home: Path) -> SessionStore:
    """SQLite at `<home>/nova.db`, or PostgreSQL when a database URL is configured (`backend.py`)."""
    from nova.sessions.backend import open_store

    return open_store(home)


class Session(RecordedSession):
    """Use `Session.create` or `Session.open`; the constructor is for them. What the agent asks of it
    (recording, task state, sub-agents' sessions) is declared in `nova.sessions.recorder`."""

    def __init__(
        self, home: Path, meta: SessionMeta, store: SessionStore, *, owns_store: bool, readonly: bool = False
    ) -> None:
        self.home = home
        self._meta = meta
        self.store = store
        self._owns_store = owns_store
        self.readonly = readonly
        self.transcript = open_transcript(self.dir / TRANSCRIPT_NAME, store, meta.id)
        self._dirty = False
        self.recovered: TornTail | None = None
        """The torn last line set aside when this session was opened, if there was one."""
        self.last_repair: RepairReport | None = None
        """What `load_history` had to repair, for the resume notice."""
        self.last_boundary: BoundaryRecord | None = None
        """The compact_boundary the last `load_history` started from (None: there was none)."""
        self._tail: tuple[TailRead, bool] | None = None
        """The tail `open` parsed and whether its messages need no repair, kept for `load_history` until
        a message or boundary is recorded."""
        self._lock: SessionLock | None = None
        """Held while this process may write the session (not for a readonly open)."""
        self.notices: list[str] = []
        """What `open` found damaged and did about it (meta.json rebuilt, store re-indexed, empty
        transcript), one sentence each, for the user."""
        self.bad_lines: list[BadLine] = []
        """Damaged transcript lines the resume read skipped (left in place)."""
        self._unstored: list[Message] = []
        """Messages in the transcript whose store rows `record_messages(store_later=True)` holds back."""
        self._unstored_since = 0.0
        self._unstored_lock = threading.Lock()
        """Held while the held-back rows are added to or written: a flush from another thread neither
        loses a row nor writes one out of order."""

    # -- lifecycle ----------------------------------------------------------------------------------
    @classmethod
    def create(
        cls,
        home: Path,
        *,
        title: str = "",
        cwd: str | Path | None = None,
        provider: str = "",
        model: str = "",
        base_url: str | None = None,
        session_id: str | None = None,
        store: SessionStore | None = None,
        parent_id: str = "",
    ) -> Session:
        sid = validate_session_id(session_id) if session_id else new_session_id()
        directory = session_dir(home, sid)
        # "" is an unknown working directory (an imported session whose format does not record one).
        cwd_text = "" if cwd == "" else str(Path(cwd if cwd is not None else os.getcwd()).expanduser())
        now = time.time()
        meta = SessionMeta(
            id=sid,
            title=printable(title),
            cwd=cwd_text,
            git_root=find_git_root(cwd_text) if cwd_text else "",
            provider=provider,
            model=model,
            base_url=base_url,
            created_at=now,
            updated_at=now,
            parent_id=parent_id,
        )
        try:
            private_dir(home)
            private_dir(directory.parent)
            directory.mkdir(mode=FOLDER_MODE, exist_ok=False)
        except FileExistsError:
            raise StorageError(f"session {sid} already exists in {directory.parent}") from None
        except OSError as exc:
            raise StorageError(f"cannot create session directory {directory}: {exc.strerror}") from None
        # From here on a failure (a full disk, most often) removes what was made: a session that could
        # not be written must not stay behind as an empty entry of `nova sessions list`.
        try:
            for path in (directory, *(directory / name for name in ARTIFACT_DIRS)):
                private_dir(path)
            create_private_file(directory / TRANSCRIPT_NAME, exclusive=True)
        except OSError as exc:
            shutil.rmtree(directory, ignore_errors=True)
            raise StorageError(f"cannot create session directory {directory}: {exc.strerror}") from None
        lock = SessionLock(directory, sid)
        lock.acquire()
        session = None
        try:
            write_meta(directory, meta)
            owns = store is None
            session = cls(home, meta, store or default_store(home), owns_store=owns)
            session._lock = lock
            session.store.save_session(session._record())
        except BaseException:
            if session is not None and session._owns_store:
                with contextlib.suppress(Exception):
                    session.store.close()
            lock.release()
            shutil.rmtree(directory, ignore_errors=True)
            raise
        if note := _set_aside_note(session.store):
            session.notices.append(note)
        return session

    @classmethod
    def open(
        cls, home: Path, session_id: str, *, store: SessionStore | None = None, readonly: bool = False,
        strict: bool = False,
    ) -> Session:
        """Open an existing session. An unknown id, an unreadable directory, a missing transcript or a
        meta.json of a newer Nova raise `StorageError` untouched. Unless `readonly`, the session is
        locked for this process first (`SessionLocked` when another one holds it).

        Damage is worked around and said (`notices`, `bad_lines`): a damaged line of the transcript is
        skipped and left in place; a missing or corrupt meta.json is rebuilt from the transcript (the old
        one kept as `meta.json.corrupt-<time>`); a session the store does not know is indexed again from
        its transcript (an unreadable store was moved aside as it opened). With `strict`, a damaged or
        torn line, a damaged meta.json or an empty transcript whose meta counted messages is refused
        instead; the store, a cache, is still rebuilt. A readonly open changes no file: it rebuilds in
        memory and reports. Unless `readonly`, a torn last line is then quarantined (see `recovered`)."""
        directory = session_dir(home, session_id)
        try:
            exists = directory.is_dir()
        except PermissionError:  # a parent folder cannot be searched
            raise StorageError(f"session directory {directory} is not readable") from None
        if not exists:
            raise StorageError(f"no session {session_id!r} in {directory.parent}: `nova sessions list` shows the ids")
        if not os.access(directory, os.R_OK | os.X_OK):
            raise StorageError(f"session directory {directory} is not readable")
        transcript = Transcript(directory / TRANSCRIPT_NAME)
        if not transcript.path.exists():
            raise StorageError(f"{transcript.path} is missing")
        lock = None if readonly else SessionLock(directory, session_id)
        if lock is not None:
            lock.acquire()
        try:
            return cls._open_locked(home, session_id, transcript, store=store, readonly=readonly, strict=strict,
                                    lock=lock)
        except BaseException:
            if lock is not None:
                lock.release()
            raise

    @classmethod
    def _open_locked(
        cls, home: Path, session_id: str, transcript: Transcript, *, store: SessionStore | None, readonly: bool,
        strict: bool, lock: SessionLock | None,
    ) -> Session:
        directory = transcript.path.parent
        notices: list[str] = []
        meta, meta_damage = read_meta_or_damage(directory)
        if meta is None and strict:
            raise StorageError(f"{meta_damage}; refused (--strict: without it meta.json is rebuilt from the "
                               "transcript)")
        scan = HistoryScan()
        tail = transcript.read_tail(observe=scan.add, messages_only=True, strict=strict)  # checks each record
        if meta is None:
            from nova.sessions.rebuild import count_transcript, meta_from_counts

            meta = meta_from_counts(session_id, count_transcript(transcript), transcript=transcript.path)
            if readonly:
                notices.append(f"{meta_damage}; read the session from its transcript instead "
                               f"(`nova sessions doctor {session_id}` writes a new meta.json)")
            else:
                kept = ""
                if (directory / META_NAME).exists():
                    from nova.sessions.rebuild import set_aside

                    kept = f", the old one kept as {set_aside(directory / META_NAME).name}"
                write_meta(directory, meta)
                notices.append(f"{meta_damage}; rebuilt it from the transcript{kept} (cost total unknown)")
        elif not readonly and transcript.path.stat().st_size and _written_after(transcript.path, directory / META_NAME):
            # The last writer appended records and never reached its turn-end flush (a crash): meta.json
            # undercounts them. Counted again from the transcript, which costs one full read, only then.
            from nova.sessions.rebuild import count_transcript

            counted = count_transcript(transcript).messages
            if counted != meta.message_count:
                notices.append(f"meta.json counted {meta.message_count} message(s), the transcript holds "
                               f"{counted} (the last run ended before saving its totals); corrected")
                meta.message_count = counted
                meta.updated_at = max(meta.updated_at, transcript.path.stat().st_mtime)
                write_meta(directory, meta)
        if transcript.path.stat().st_size == 0:
            said = f"; meta.json counted {meta.message_count} message(s)" if meta.message_count else ""
            if strict and meta.message_count:
                raise StorageError(f"the transcript {transcript.path} is empty (0 bytes){said}; refused (--strict)")
            notices.append(f"the transcript {transcript.path} is empty (0 bytes): this session has no recorded "
                           f"messages and resumes with an empty history{said}")
        owns = store is None
        session = cls(home, meta, store or default_store(home), owns_store=owns, readonly=readonly)
        try:
            return session._settle_open(session_id, tail, scan.valid, notices, lock)
        except BaseException:
            if owns:
                session.store.close()
            raise

    def _settle_open(self, session_id: str, tail: TailRead, valid: bool, notices: list[str],
                     lock: SessionLock | None) -> Session:
        """The part of `open` that uses the store and may change files: after every check."""
        session = self
        transcript = self.transcript
        session._lock = lock
        session.notices = notices
        session.bad_lines = list(tail.bad)
        if note := _set_aside_note(session.store):
            notices.insert(0, note)
        # Kept so resume parses the tail once. Quarantining a torn line does not change it: `read_tail`
        # already stopped at the last complete record.
        session._tail = (tail, valid)
        if session.readonly:
            session.recovered = tail.torn  # reported, left in place
            return session
        if session.store.get_session(session_id) is None:
            from nova.sessions.rebuild import rebuild_store_rows

            rebuild_store_rows(session.store, session_id, transcript)
            session.store.save_session(session._record())
            if session.store.get_messages(session_id, include_compacted=True):
                notices.append(f"the session store had no record of session {session_id}; "
                               "indexed it again from the transcript")
        session.recovered = session.transcript.recover()
        if session.recovered is not None:
            session.record_event(
                "torn_tail_quarantined",
                {
                    "offset": session.recovered.offset,
                    "size": session.recovered.size,
                    "path": str(session.recovered.quarantined),
                },
            )
        return session

    def close(self) -> None:
        self._tail = None  # a long tail is megabytes; a session opened only to read its log never used it
        try:
            if not self.readonly:
                self.flush()
            self.transcript.close()
            if self._owns_store:
                self.store.close()
        finally:
            # Last: another process may write as soon as the lock is free.
            if self._lock is not None:
                self._lock.release()
                self._lock = None

    def release_lock(self) -> None:
        """Let another process write the session while this one keeps it open (workers sharing one home
        hand a session to each other between turns). The log's descriptor goes too: the next append
        opens the file anew, whatever another process made of it meanwhile. `take_lock` before writing."""
        self.transcript.close()
        if self._lock is not None:
            self._lock.release()

    def take_lock(self) -> None:
        """Take back the lock `release_lock` let go; `SessionLocked` naming the holder when another
        process has it now."""
        if self._lock is not None:
            self._lock.acquire()

    def __enter__(self) -> Session:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- identity -----------------------------------------------------------------------------------
    @property
    def id(self) -> str:
        return self._meta.id

    @property
    def dir(self) -> Path:
        return session_dir(self.home, self._meta.id)

    @property
    def meta(self) -> SessionMeta:
        return self._meta

    # -- recording (the agent loop's protocol) ------------------------------------------------------
    def _writable(self) -> None:
        if self.readonly:
            raise StorageError(f"session {self.id} was opened read-only")

    def record_message(self, message: Message, usage: Usage | None = None) -> None:
        """Append to the log, then to the store. `usage` is kept in the record for audit; totals move
        only through `add_cost`, so a caller that records and charges one call counts it once."""
        self._writable()
        self._tail = None
        message = strip_thinking(message)
        self.transcript.append_message(message, usage)
        if not self.transcript.stores_messages:  # a database transcript wrote the row with the record
            self._store_pending()
            self.store.append_messages(self.id, [message])
        self._meta.message_count += 1
        self._touch()

    def record_messages(self, entries: Sequence[tuple[Message, Usage | None]], *, store_later: bool = False) -> None:
        """`record_message` for several messages, in order, with one store write for all of them.

        `store_later`: the log gets them now, the store's rows wait for `STORE_BATCH` messages, for
        `STORE_DELAY_S`, or for the next write that needs them (a rewrite, a compaction boundary, another
        `record_message`) or `flush`, whichever comes first. For a caller that records every few
        milliseconds (a framework adapter, at each model call of a fast loop): each store write is a
        transaction whose commit costs more than the rest of recording a message. The transcript stays
        authoritative; a crash before the next flush leaves the store short of the waiting messages, as
        a crash between the log and the store already may leave it one short."""
        if not entries:
            return
        self._writable()
        self._tail = None
        stripped = [strip_thinking(message) for message, _ in entries]
        self.transcript.append_messages(zip(stripped, (usage for _, usage in entries), strict=True))
        if self.transcript.stores_messages:  # each row went with its record, in one transaction
            self._meta.message_count += len(stripped)
            self._touch()
            return
        now = time.monotonic()
        with self._unstored_lock:
            if not self._unstored:
                self._unstored_since = now
            self._unstored.extend(stripped)
            due = not store_later or len(self._unstored) >= STORE_BATCH or now - self._unstored_since >= STORE_DELAY_S
        self._meta.message_count += len(stripped)
        self._touch()
        if due:
            self._store_pending()

    def _store_pending(self) -> None:
        """Write the store rows `record_messages` held back (in order, before any later row)."""
        with self._unstored_lock:
            if self._unstored:
                self.store.append_messages(self.id, self._unstored)
                self._unstored = []

    def record_event(self, name: str, data: Mapping[str, Any]) -> None:
        self._writable()
        self.transcript.append_event(name, data)
        self._touch()

    def record_compact_boundary(self, boundary: BoundaryRecord) -> str:
        """Write a compact_boundary record (see `schema.py` for the fields), flag the covered messages
        compacted, store the new head messages, set `compacted_at`. Returns the boundary id (a new one
        when `boundary.id` is empty)."""
        self._writable()
        boundary_id = boundary.id or new_id("cmp")
        head = [strip_thinking(m) for m in boundary.messages]
        self._tail = None
        self._store_pending()
        self.transcript.append_boundary(dataclasses.replace(boundary, id=boundary_id, messages=tuple(head)))
        self.store.mark_compacted(self.id, boundary.covers)
        self.store.append_messages(self.id, head)
        self._meta.compacted_at = time.time()
        self._touch()
        self.flush()  # rare and important: make it durable now, not at turn end
        return boundary_id

    def update_message_content(self, message_id: str, message: Message) -> None:
        """Rewrite a message in the working store (a snip, CMP-3). The raw log keeps the original and
        gets an event saying it happened."""
        self._writable()
        self._store_pending()
        self.store.update_message_content(self.id, message_id, strip_thinking(message))
        self.record_event("message_content_updated", {"message_id": message_id})

    def use_model(self, *, provider: str, model: str, base_url: str | None) -> None:
        """The session continues on this provider, model and endpoint (a resume told to switch): the
        next resume uses them. The change is recorded in the transcript too, which outlives meta.json."""
        self._writable()
        current = (self._meta.provider, self._meta.model, self._meta.base_url)
        if current == (provider, model, base_url or ""):
            return
        self._meta.provider, self._meta.model, self._meta.base_url = provider, model, base_url or ""
        self.record_event(MODEL_EVENT, {"provider": provider, "model": model, "base_url": base_url or ""})

    def title_if_untitled(self, prompt: str) -> None:
        """Name a session created without a title after its first request, as `nova run` names one."""
        if not self._meta.title and (title := title_from_prompt(prompt)):
            self._writable()
            self._meta.title = title
            self._touch()

    def add_cost(self, usage: Usage, cost_usd: float | None, purpose: CallPurpose = "turn", *,
                 calls: int = 1) -> None:
        """`cost_usd` None: the call's price is unknown; the session's cost is then unknown too
        (`SessionMeta.cost_known`), never a silent $0. `purpose` files the call in the session's
        by-purpose tally (`SessionMeta.calls`); only a turn's call measures the conversation (a memory
        extraction after the turn reads a short excerpt, not the context)."""
        if purpose == "turn":
            self._meta.add_usage(usage)
        else:
            self._meta.usage = self._meta.usage + usage
        self._meta.count_call(purpose, usage, cost_usd, calls=calls)
        self._meta.extra["unpriced_calls"] = int(self._meta.extra.get("unpriced_calls") or 0) + (cost_usd is None)
        self._meta.cost_usd += float(cost_usd or 0.0)
        self._touch()

    def add_unmeasured_calls(self, calls: int) -> None:
        """Model calls the record holds without their usage (an imported recording that kept none): turn
        calls of unknown tokens and price, so the session's cost is unknown rather than a silent $0; the
        context figure stays what the measured calls left."""
        if self.readonly or calls <= 0:
            return
        for _ in range(calls):
            self._meta.count_call("turn", Usage(), None)
        self._meta.extra["unpriced_calls"] = int(self._meta.extra.get("unpriced_calls") or 0) + calls
        self._meta.extra["unmeasured_calls"] = int(self._meta.extra.get("unmeasured_calls") or 0) + calls
        self._touch()

    def note_context_size(self, tokens: int) -> None:
        """The context's size at the end of a turn, as Nova measures the next view (`nova run`'s footer,
        the TUI's bar): the sessions list shows it rather than the last call's reported input."""
        if self.readonly or tokens == self._meta.last_context_tokens:
            return
        self._meta.last_context_tokens = tokens
        self._touch()

    def flush(self) -> None:
        """Turn end: fsync the transcript, then publish meta.json and the store row."""
        if self.readonly:
            return
        self._store_pending()
        self.transcript.sync()
        if self._dirty:
            write_meta(self.dir, self._meta)
            self.store.save_session(self._record())
            self._dirty = False

    def _touch(self) -> None:
        self._meta.updated_at = time.time()
        self._dirty = True

    def date_as_recorded(self, started: float, last: float) -> None:
        """Date a session made from another agent's recording by its recorded messages (epoch seconds),
        not by the minute it was imported: `nova sessions list` orders and ages sessions by these, and
        a folder imported at once would otherwise show every session at the same minute."""
        self._writable()
        self._meta.created_at = started
        self._meta.updated_at = max(started, last)
        self._dirty = True

    # -- canonical task state (deterministic writers only, CTX-6) -----------------------------------
    def get_task_state(self) -> dict[str, Any] | None:
        return self.store.get_task_state(self.id)

    def get_versioned_task_state(self) -> StoredTaskState | None:
        return self.store.get_versioned_task_state(self.id)

    def put_task_state(self, state: Mapping[str, Any], *, expected_version: int | None = None) -> int:
        """See `SessionStore.put_task_state`: with `expected_version` a stale write is refused."""
        return self.store.put_task_state(self.id, state, expected_version=expected_version)

    # -- sub-agents (CTX-5) -------------------------------------------------------------------------
    def start_child(self, *, title: str, cwd: Path, provider: str, model: str) -> Session:
        """A sub-agent's own session, on this session's store, linked to it by `parent_id`."""
        return Session.create(self.home, title=title, cwd=cwd, provider=provider, model=model, store=self.store,
                              parent_id=self.id)

    # -- resume -------------------------------------------------------------------------------------
    def load_history(self) -> list[Message]:
        """The working history: records after the last compact_boundary (read backwards, SES-4), with
        snipped content from the store where a message was rewritten, then repaired (SES-5).

        Costs what the records after the boundary cost: the tail `open` parsed is reused, and the store
        is asked only for rewritten messages (an index lookup), never for every live message."""
        if self._tail is not None:
            tail, valid = self._tail
        else:
            scan = HistoryScan()
            tail = self.transcript.read_tail(observe=scan.add, messages_only=True)
            valid = scan.valid
        self._tail = None
        self.last_boundary = tail.boundary
        messages = tail.messages()
        rewritten = {s.message.id: s.message for s in self.store.get_rewritten_messages(self.id)}
        if rewritten:
            messages = [rewritten.get(m.id, m) for m in messages]
            valid = False  # a snip can change what the scan saw: let the repair check again
        repaired, report = repair_history(messages, known_valid=valid)
        self.last_repair = report
        return repaired

    def _record(self) -> SessionRecord:
        return session_record(self._meta)


def session_record(m: SessionMeta) -> SessionRecord:
    """The store's row for a session, mirroring its meta.json."""
    return SessionRecord(
        id=m.id,
        title=m.title,
        cwd=m.cwd,
        provider=m.provider,
        model=m.model,
        created_at=m.created_at,
        updated_at=m.updated_at,
        compacted_at=m.compacted_at,
        parent_id=m.parent_id,
        meta={
            "git_root": m.git_root,
            "message_count": m.message_count,
            "usage": m.usage.to_dict(),
            "cost_usd": m.cost_usd,
        },
    )


def list_sessions(home: Path) -> tuple[list[SessionMeta], list[str]]:
    """Every session directory's meta, newest first, and one problem line per directory that could not
    be read (listing goes on past a broken one)."""
    root = home / "sessions"
    metas: list[SessionMeta] = []
    problems: list[str] = []
    if not root.exists():
        return metas, problems
    try:
        entries = sorted(root.iterdir())
    except OSError as exc:
        raise StorageError(f"cannot list {root}: {exc.strerror}") from None
    for entry in entries:
        if not entry.is_dir():
            continue
        try:
            validate_session_id(entry.name)
            meta, damage = read_meta_or_damage(entry)
            if meta is None:
                meta = _meta_from_transcript(entry)
                problems.append(f"{damage}; listed from its transcript (`nova sessions doctor {entry.name}` "
                                "writes a new one)")
            metas.append(meta)
        except StorageError as exc:
            problems.append(str(exc))
    metas.sort(key=lambda m: (m.updated_at, m.id), reverse=True)
    return metas, problems


def _set_aside_note(store: SessionStore) -> str:
    """The store's warning that it replaced an unreadable database as it opened, else ""."""
    return store.describe_set_aside() if isinstance(store, SetAsideReport) else ""


def _written_after(path: Path, than: Path) -> bool:
    """Whether `path` was modified after `than` (a writer appends, then writes meta.json at turn end)."""
    try:
        return path.stat().st_mtime_ns > than.stat().st_mtime_ns
    except OSError:
        return False


def _meta_from_transcript(directory: Path) -> SessionMeta:
    from nova.sessions.rebuild import count_transcript, meta_from_counts

    transcript = Transcript(directory / TRANSCRIPT_NAME)
    if not transcript.path.exists():
        raise StorageError(f"{directory} has neither a readable meta.json nor a transcript")
    return meta_from_counts(directory.name, count_transcript(transcript), transcript=transcript.path)


def delete_session(home: Path, session_id: str, *, store: SessionStore | None = None) -> None:
    """Remove the session directory and its store rows. Canonical task state stays (SES-6). Refused
    (`SessionLocked`) while another process has the session open for writing."""
    directory = session_dir(home, session_id)
    if not directory.is_dir():
        raise StorageError(f"no session {session_id!r} in {directory.parent}: `nova sessions list` shows the ids")
    lock = SessionLock(directory, session_id)
    lock.acquire()
    try:
        _delete_locked(home, directory, session_id, store)
    finally:
        lock.release()


def _delete_locked(home: Path, directory: Path, session_id: str, store: SessionStore | None) -> None:
    owned = store is None
    target = store or default_store(home)
    try:
        target.delete_session(session_id)
    finally:
        if owned:
            target.close()
    try:
        shutil.rmtree(directory)
    except OSError as exc:
        raise StorageError(f"cannot remove {directory}: {exc.strerror}") from None
