"""The index over past sessions, the third memory layer's search: every session's facts (the requests,
replies, files edited and read, commands and errors of `nova.sessions.evidence`) with their words in an
SQLite FTS5 table and, where the embeddings extra is installed, their MiniLM vectors, in one file,
`<home>/session-index.db`, beside the session store. It is a cache: deleting it loses nothing, the next
search reads every transcript again.

Incremental. A watermark per session says how far its raw log was read: a byte offset into
`transcript.jsonl` with a digest of the bytes before it, or, for a database that keeps the records
(PostgreSQL), how many records. `catch_up` reads only what was appended since, so a search costs what
changed, not the history; a log rewritten under its watermark is read again from the start, and a
session gone from the store leaves the index on the next catch-up. Vectors are encoded once per distinct
text (a file edited in ten sessions is encoded once), and records indexed while the extra was missing
get theirs when it is there.

Projects. A session belongs to its git root, or to its working directory outside a repository
(`project_of`); a session whose directory is unknown (an import from a format that does not record it)
belongs to none and is never searched. Every read names one project: the FTS query carries it (the
`scope` column), the vector scan covers that project's rows only, so one project's records are never
candidates for another's query.

Concurrency: readers never block (WAL). Two processes catching up at once read the same new records; the
one that commits second finds the watermark moved and drops its copy, so nothing is indexed twice.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import secrets
import sqlite3
import threading
import time
from array import array
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from nova.errors import StorageError
from nova.fs.private import create_private_file, private_dir
from nova.memory.paths import project_root
from nova.memory.retrieval.embed import Encoder
from nova.memory.retrieval.pipeline import indexed_text
from nova.memory.retrieval.records import Record
from nova.memory.retrieval.text import content_words
from nova.messages import Message
from nova.sessions.evidence import Evidence, EvidenceReader, read_transcript_from, tail_mark
from nova.sessions.meta import session_dir
from nova.sessions.schema import MessageRecord, parse_record
from nova.sessions.store import RecordStore, SessionRecord, SessionStore
from nova.sessions.transcript import TRANSCRIPT_NAME

__all__ = ["INDEX_NAME", "CatchUp", "IndexedRow", "ProjectTerms", "ProjectVectors", "SessionIndex", "project_of", "project_of_session",
           "record_of"]

INDEX_NAME = "session-index.db"
_VERSION = 1
"""Bumped when the layout or what is extracted changes: an index of another version is dropped and built
again from the transcripts (it is a cache)."""

_SCHEMA = """
CREATE TABLE sources (
    session_id TEXT PRIMARY KEY, project TEXT NOT NULL, title TEXT NOT NULL,
    kind TEXT NOT NULL,            -- 'file': offset counts bytes, 'rows': database records
    offset INTEGER NOT NULL, mark TEXT NOT NULL, seen REAL NOT NULL, state TEXT NOT NULL
);
CREATE TABLE entries (
    id INTEGER PRIMARY KEY, session_id TEXT NOT NULL, project TEXT NOT NULL, turn INTEGER NOT NULL,
    position INTEGER NOT NULL, kind TEXT NOT NULL, text TEXT NOT NULL, message_id TEXT NOT NULL,
    at REAL NOT NULL, external INTEGER NOT NULL, terms TEXT NOT NULL, scope TEXT NOT NULL,
    digest TEXT NOT NULL, vector BLOB
);
CREATE INDEX entries_session ON entries(session_id);
CREATE INDEX entries_project ON entries(project, id);
CREATE INDEX entries_digest ON entries(digest);
CREATE INDEX entries_unencoded ON entries(project, id) WHERE vector IS NULL;
CREATE VIRTUAL TABLE entry_words USING fts5(
    terms, scope, kind, content='entries', content_rowid='id', tokenize="unicode61 tokenchars '_'"
);
CREATE TABLE counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
INSERT INTO counters VALUES ('generation', 0), ('deletions', 0);
"""

_ENCODE_BATCH = 64
"""Texts encoded per call, and how often the encoding budget is looked at."""

_SPEAKER: dict[str, str] = {"request": "user", "reply": "assistant"}
# How far each kind of fact can be relied on: what a person asked and what a tool call did are facts of
# the record; a reply is the model's account; an error carries a tool's output (external text).
_TRUST: dict[str, float] = {"request": 0.7, "edit": 0.7, "read": 0.6, "command": 0.7, "reply": 0.5, "error": 0.5}


def project_of(cwd: Path) -> str:
    """The project a working directory belongs to: its git root, else the directory itself."""
    return str(project_root(cwd))


def project_of_session(session: SessionRecord) -> str:
    """The project a recorded session belongs to ("" when its working directory is unknown)."""
    root = str(session.meta.get("git_root") or "")
    where = root or session.cwd
    return os.path.normpath(where) if where else ""


def _scope(project: str) -> str:
    # One FTS token standing for the project, whatever characters its path holds.
    return "p" + hashlib.sha1(project.encode("utf-8", "surrogatepass")).hexdigest()[:24]


@dataclass(frozen=True, slots=True, kw_only=True)
class IndexedRow(Evidence):
    """A fact as the index holds it: the evidence, with its row id and its session's title."""

    id: int
    title: str
    terms: str = ""
    """The ranking terms the row was indexed under, space-separated (`content_words` of its text)."""


def record_of(row: Evidence, project: str) -> Record:
    """A fact as the retrieval pipeline ranks it: one record per fact, grouped by session."""
    return Record(
        id=f"{row.session_id}#{row.turn}.{row.position}", text=row.text, kind="session", type=row.kind,
        project=project, at=datetime.fromtimestamp(row.at, UTC) if row.at else None,
        trust=_TRUST.get(row.kind, 0.5), risk=0.3 if row.external else 0.0, cost=len(row.text) // 4,
        source=f"session {row.session_id}, turn {row.turn}, message {row.message_id}", group=row.session_id,
        position=row.position, speaker=_SPEAKER.get(row.kind, ""), external=row.external,
    )


@dataclass(slots=True, kw_only=True)
class CatchUp:
    """What one catch-up found and did, for the search's manifest."""

    project: str
    sessions: int = 0
    """Sessions of the project in the store."""
    records: int = 0
    """Facts of the project in the index after the catch-up."""
    added: int = 0
    read_again: int = 0
    """Sessions whose log changed under the watermark and was read from the start."""
    removed: int = 0
    """Sessions gone from the store whose facts left the index."""
    encoded: int = 0
    """Texts encoded into vectors (distinct texts: a repeated one is encoded once)."""
    without_vectors: int = 0
    """Facts of the project left without a vector when the encoding budget ran out: found by keyword
    until a later catch-up encodes them."""
    bad_lines: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"sessions": self.sessions, "records": self.records, "added": self.added,
                "read_again": self.read_again, "removed": self.removed, "encoded": self.encoded,
                "without_vectors": self.without_vectors, "bad_lines": self.bad_lines}


@dataclass(slots=True)
class ProjectCache:
    """How far a project's in-memory cache of the index reaches: the index generation it was brought up
    to, the deletions it was built after (another one starts it over), its rows and the last of them."""

    generation: int = -1
    deletions: int = -1
    last_id: int = 0
    ids: list[int] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)


CacheT = TypeVar("CacheT", bound=ProjectCache)


@dataclass(slots=True)
class ProjectVectors(ProjectCache):
    """One project's vectors in memory, extended as rows arrive (a full reload only after a deletion):
    `matrix` has one row per id of `ids` (zeros where a row has no vector yet), `row_of` maps an id to
    its row."""

    row_of: dict[int, int] = field(default_factory=dict)
    missing: set[int] = field(default_factory=set)
    matrix: Any = None


@dataclass(slots=True)
class ProjectTerms(ProjectCache):
    """One project's ranking terms in memory, as postings, extended as rows arrive like `ProjectVectors`:
    `postings[term]` is the rows (positions in `ids`) holding the term and how often, `lengths` each row's
    number of terms. Arrays of machine ints, so a query reads them into numpy without copying."""

    lengths: array[int] = field(default_factory=lambda: array("i"))
    total: int = 0
    """Terms over every row (for the mean row length)."""
    postings: dict[str, tuple[array[int], array[int]]] = field(default_factory=dict)


_CACHES: dict[tuple[str, int], dict[str, ProjectVectors]] = {}
"""Vectors in memory by (index file, epoch) and project, shared by every `SessionIndex` of this process
over that file: a tool that opens the index for each call does not read every vector again each time.
The epoch, drawn when the file is built, keeps a rebuilt file from matching a stale cache."""
_TERM_CACHES: dict[tuple[str, int], dict[str, ProjectTerms]] = {}
"""The same for the projects' terms (what keyword recall ranks)."""
_CACHES_LOCK = threading.Lock()
_K1, _B = 1.2, 0.75
"""BM25's parameters, SQLite FTS5's defaults (the keyword recall ranked with FTS5 before)."""


class SessionIndex:
    """The side index of one Nova home. Thread-safe: one connection behind a lock."""

    def __init__(self, path: Path, *, encoder: Encoder | None = None) -> None:
        self.path = path
        self.encoder = encoder
        self._lock = threading.RLock()
        try:
            private_dir(path.parent)
            create_private_file(path)
            self._db = sqlite3.connect(str(path), isolation_level=None, timeout=10.0, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._prepare()
            (epoch,) = self._db.execute("SELECT value FROM counters WHERE name = 'epoch'").fetchone()
        except sqlite3.Error as exc:
            raise StorageError(f"cannot open the session index {path}: {exc} (it is a cache: delete it and "
                               "the next search builds it again)") from None
        with _CACHES_LOCK:
            key = (str(path.resolve()), int(epoch))
            self._vectors = _CACHES.setdefault(key, {})
            self._terms = _TERM_CACHES.setdefault(key, {})
        self._checked: dict[str, tuple[Path, tuple[int, int, int], int, str]] = {}
        """Per session: its log, the (size, mtime, inode) it had when its watermark (offset, mark) was last
        found to hold, so a catch-up skips re-reading the bytes under an untouched watermark."""

    @classmethod
    def for_home(cls, home: Path, *, encoder: Encoder | None = None) -> SessionIndex:
        return cls(home / INDEX_NAME, encoder=encoder)

    def _prepare(self) -> None:
        db = self._db
        if db.execute("PRAGMA user_version").fetchone()[0] == _VERSION:
            return
        db.execute("BEGIN IMMEDIATE")
        try:
            (version,) = db.execute("PRAGMA user_version").fetchone()  # another process may have built it
            if version != _VERSION:
                for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type IN ('table')"
                                          " AND name NOT LIKE 'sqlite_%' AND name NOT LIKE 'entry_words_%'").fetchall():
                    db.execute(f'DROP TABLE IF EXISTS "{name}"')
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        db.execute(statement)
                db.execute("INSERT INTO counters VALUES ('epoch', ?)", (secrets.randbits(53),))
                db.execute(f"PRAGMA user_version = {_VERSION}")
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> SessionIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            db = self._db
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
                db.execute("UPDATE counters SET value = value + 1 WHERE name = 'generation'")
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise

    # -- catching up ----------------------------------------------------------------------------------
    def catch_up(self, store: SessionStore, home: Path, project: str, *,
                 encode_budget_s: float | None = None) -> CatchUp:
        """Index what the project's sessions recorded since the last catch-up. With `encode_budget_s`,
        encoding vectors stops after that many seconds (a first search over a long history must answer
        within a tool call's time); the facts left without one are indexed for keywords now and get
        their vectors on later catch-ups."""
        done = CatchUp(project=project)
        deadline = None if encode_budget_s is None else time.monotonic() + encode_budget_s
        try:
            sessions = [s for s in store.list_sessions() if project and project_of_session(s) == project]
            with self._lock:
                # Every watermark, not only this project's: a session whose folder changed is read again
                # under its new project, and only its own project's catch-up may call it gone.
                known = {row[0]: row for row in self._db.execute(
                    "SELECT session_id, kind, offset, mark, seen, state, project FROM sources")}
            present = {s.id for s in sessions}
            gone = [sid for sid, row in known.items() if row[6] == project and sid not in present]
            if gone:
                with self._write() as db:
                    for sid in gone:
                        self._forget(db, sid)
                    db.execute(f"DELETE FROM sources WHERE session_id IN ({_marks(gone)})", gone)
                done.removed = len(gone)
            rows = store if isinstance(store, RecordStore) else None  # asked once: a protocol check is slow
            for session in sessions:
                self._catch_up_session(rows, home, project, session, known.get(session.id), done, deadline)
            if self.encoder is not None:
                self._fill_vectors(project, done, deadline)
            with self._lock:
                (done.records,) = self._db.execute("SELECT count(*) FROM entries WHERE project = ?",
                                                   (project,)).fetchone()
                if self.encoder is not None:
                    (done.without_vectors,) = self._db.execute(
                        "SELECT count(*) FROM entries WHERE project = ? AND vector IS NULL", (project,)).fetchone()
        except sqlite3.Error as exc:
            raise StorageError(f"session index {self.path}: {exc}") from None
        done.sessions = len(sessions)
        return done

    def _catch_up_session(self, store: RecordStore | None, home: Path, project: str, session: SessionRecord,
                          known: tuple[Any, ...] | None, done: CatchUp, deadline: float | None) -> None:
        """`store` is the database that keeps the records (PostgreSQL), or None: the files are read."""
        sid = session.id
        start, state, again = 0, None, known is not None
        moved = known is not None and known[6] != project  # indexed under another project: read it again
        seen: tuple[Path, tuple[int, int, int]] | None = None  # the log and its (size, mtime, inode) as found
        if store is not None:
            kind = "rows"
            if known is not None and known[1] == "rows" and not moved:
                if known[4] >= session.updated_at:
                    return  # the row says nothing was recorded since
                start, state, again = int(known[2]), json.loads(known[5]), False
            lines = store.read_records(sid, skip=start)
            messages = _messages_of(lines, sid)
            end, mark = start + len(lines), ""
        else:
            kind = "file"
            checked = self._checked.get(sid)
            path = checked[0] if checked is not None else session_dir(home, sid) / TRANSCRIPT_NAME
            try:
                st = os.stat(path)
            except OSError:
                return  # listed in the store, no log here (yet): nothing to read
            size, stamp = st.st_size, (st.st_size, st.st_mtime_ns, st.st_ino)
            seen = (path, stamp)
            if known is not None and known[1] == "file" and not moved:
                offset = int(known[2])
                if checked is not None and checked[1:] == (stamp, offset, known[3]):
                    return  # the same file, untouched since its watermark was last found to hold
                # The digest of the bytes before the watermark tells an append from a rewrite (a copy
                # written anew, a repair), whatever the sizes; reading 256 bytes per session is cheap.
                if size >= offset and tail_mark(path, offset) == known[3]:
                    if size == offset:
                        if _settled(st):
                            self._checked[sid] = (path, stamp, offset, known[3])
                        return
                    start, state, again = offset, json.loads(known[5]), False
            chunk = read_transcript_from(path, start)
            messages, end, mark = chunk.messages, chunk.end, tail_mark(path, chunk.end)
            done.bad_lines += chunk.bad_lines
        reader = EvidenceReader(sid, state)
        facts = [fact for message in messages for fact in reader.feed(message)]
        records = [record_of(f, project) for f in facts]
        texts = [indexed_text(r) for r in records]
        digests = [hashlib.sha1(t.encode("utf-8", "surrogatepass")).hexdigest() for t in texts]
        vectors = (self._vectors_for(texts, digests, done, deadline) if self.encoder is not None
                   else [None] * len(texts))
        scope = _scope(project)
        with self._write() as db:
            current = db.execute("SELECT kind, offset, mark FROM sources WHERE session_id = ?", (sid,)).fetchone()
            expected = (known[1], known[2], known[3]) if known is not None else None
            if current != expected:
                return  # another process moved the watermark meanwhile: its copy stands
            if again:
                self._forget(db, sid)
                done.read_again += 1
            for fact, record, text, digest, vector in zip(facts, records, texts, digests, vectors, strict=True):
                terms = " ".join(content_words(text))
                cursor = db.execute(
                    "INSERT INTO entries (session_id, project, turn, position, kind, text, message_id, at, external,"
                    " terms, scope, digest, vector) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (sid, project, fact.turn, fact.position, fact.kind, record.text, fact.message_id, fact.at,
                     int(fact.external), terms, scope, digest, vector))
                db.execute("INSERT INTO entry_words (rowid, terms, scope, kind) VALUES (?, ?, ?, ?)",
                           (cursor.lastrowid, terms, scope, fact.kind))
            db.execute("INSERT OR REPLACE INTO sources (session_id, project, title, kind, offset, mark, seen, state)"
                       " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                       (sid, project, session.title, kind, end, mark, session.updated_at, json.dumps(reader.state())))
        done.added += len(facts)
        if seen is not None and end == seen[1][0] and _settled(st):  # read up to what the stat saw
            self._checked[sid] = (seen[0], seen[1], end, mark)

    def _forget(self, db: sqlite3.Connection, session_id: str) -> None:
        rows = db.execute("SELECT id, terms, scope, kind FROM entries WHERE session_id = ?", (session_id,)).fetchall()
        if not rows:
            return
        db.executemany("INSERT INTO entry_words (entry_words, rowid, terms, scope, kind) VALUES ('delete', ?, ?, ?, ?)",
                       rows)
        db.execute("DELETE FROM entries WHERE session_id = ?", (session_id,))
        db.execute("UPDATE counters SET value = value + 1 WHERE name = 'deletions'")

    def _vectors_for(self, texts: Sequence[str], digests: Sequence[str], done: CatchUp,
                     deadline: float | None) -> list[bytes | None]:
        """Each text's vector, encoded only for texts no row of the index has a vector for yet; None for
        those the deadline left unencoded."""
        assert self.encoder is not None
        known: dict[str, bytes] = {}
        unique = sorted(set(digests))
        with self._lock:
            for begin in range(0, len(unique), 500):
                chunk = unique[begin : begin + 500]
                known.update(self._db.execute(
                    f"SELECT digest, vector FROM entries WHERE vector IS NOT NULL AND digest IN ({_marks(chunk)})"
                    " GROUP BY digest", chunk).fetchall())
        todo: dict[str, str] = {}
        for text, digest in zip(texts, digests, strict=True):
            if digest not in known:
                todo.setdefault(digest, text)
        pending = list(todo.items())
        for begin in range(0, len(pending), _ENCODE_BATCH):
            if deadline is not None and time.monotonic() >= deadline:
                break
            batch = pending[begin : begin + _ENCODE_BATCH]
            for (digest, _), row in zip(batch, self.encoder.encode([t for _, t in batch]), strict=True):
                known[digest] = row.astype("float32").tobytes()
            done.encoded += len(batch)
        return [known.get(d) for d in digests]

    def _fill_vectors(self, project: str, done: CatchUp, deadline: float | None) -> None:
        """Vectors for the project's rows indexed while no encoder was there, or past a deadline."""
        if deadline is not None and time.monotonic() >= deadline:
            return
        with self._lock:
            rows = self._db.execute("SELECT id, session_id, turn, position, kind, text, message_id, at, external"
                                    " FROM entries WHERE project = ? AND vector IS NULL", (project,)).fetchall()
        if not rows:
            return
        facts = [_row(r, "") for r in rows]
        texts = [indexed_text(record_of(f, project)) for f in facts]
        digests = [hashlib.sha1(t.encode("utf-8", "surrogatepass")).hexdigest() for t in texts]
        vectors = self._vectors_for(texts, digests, done, deadline)
        with self._write() as db:
            db.executemany("UPDATE entries SET vector = ?, digest = ? WHERE id = ?",
                           [(v, d, f.id) for v, d, f in zip(vectors, digests, facts, strict=True) if v is not None])

    # -- reading ------------------------------------------------------------------------------------
    def count(self, project: str) -> int:
        with self._lock:
            (n,) = self._db.execute("SELECT count(*) FROM entries WHERE project = ?", (project,)).fetchone()
        return int(n)

    def watermark(self, session_id: str) -> int | None:
        """How far a session's log was read (bytes, or records for a database), None if never."""
        with self._lock:
            row = self._db.execute("SELECT offset FROM sources WHERE session_id = ?", (session_id,)).fetchone()
        return int(row[0]) if row else None

    def keyword_candidates(self, project: str, words: Iterable[str], *, kinds: Iterable[str] = (),
                           limit: int = 100) -> list[int]:
        """Ids of the project's rows sharing a word with the query, best first by BM25 over the project's
        rows (the candidates the pipeline then ranks; ties by id). Scored in memory with numpy from the
        project's postings (`terms`), which follow the index like its vectors: a query costs what its
        terms' postings cost, where the FTS index scored every matching row through SQLite (most of a
        search's time when common words match most of a project). Without numpy, the FTS index."""
        terms = sorted({w for w in words if w})
        if not terms or not project:
            return []
        wanted = sorted(set(kinds))
        try:
            import numpy as np
        except ImportError:
            return self._fts_candidates(project, terms, wanted, limit)
        with self._lock, _CACHES_LOCK:
            cache = self._refresh_terms(project)
            n = len(cache.ids)
            if n == 0:
                return []
            lengths = np.frombuffer(cache.lengths, dtype=np.int32)
            norm = _K1 * (1.0 - _B + _B * lengths / (cache.total / n or 1.0))
            score = np.zeros(n)
            matched = np.zeros(n, dtype=bool)
            for term in terms:
                posting = cache.postings.get(term)
                if posting is None:
                    continue
                rows = np.frombuffer(posting[0], dtype=np.int32)
                tf = np.frombuffer(posting[1], dtype=np.int32).astype(np.float64)
                # FTS5's idf, floored as it floors it: a term in most rows still counts, a little.
                idf = max(math.log((n - len(rows) + 0.5) / (len(rows) + 0.5)), 1e-6)
                score[rows] += idf * tf * (_K1 + 1.0) / (tf + norm[rows])  # a row appears once per term
                matched[rows] = True
            if wanted:
                matched &= np.isin(np.asarray(cache.kinds), wanted)
            found = np.flatnonzero(matched)
            ids = np.asarray(cache.ids, dtype=np.int64)[found]
            best = found[np.lexsort((ids, -score[found]))[:limit]]
            return [cache.ids[i] for i in best]

    def _fts_candidates(self, project: str, terms: list[str], wanted: list[str], limit: int) -> list[int]:
        match = f'scope : "{_scope(project)}" AND terms : (' + " OR ".join(f'"{t}"' for t in terms) + ")"
        if wanted:
            match += " AND kind : (" + " OR ".join(f'"{k}"' for k in wanted) + ")"
        with self._lock:
            try:
                rows = self._db.execute("SELECT rowid FROM entry_words WHERE entry_words MATCH ?"
                                        " ORDER BY bm25(entry_words, 1.0, 0.0, 0.0), rowid LIMIT ?",
                                        (match, limit)).fetchall()
            except sqlite3.Error as exc:
                raise StorageError(f"session index {self.path}: {exc}") from None
        return [int(r[0]) for r in rows]

    def _behind(self, caches: dict[str, CacheT], project: str, kind: type[CacheT]) -> tuple[CacheT, int | None]:
        """`project`'s cache in `caches`, and the index's generation when the cache is behind it (None: it
        is current); after a deletion since the cache was built, a new empty one in its place. Call with
        `_lock` and `_CACHES_LOCK` held."""
        cache = caches.setdefault(project, kind())
        counters = dict(self._db.execute("SELECT name, value FROM counters").fetchall())
        if counters["generation"] == cache.generation:
            return cache, None
        if counters["deletions"] != cache.deletions:
            cache = caches[project] = kind(deletions=counters["deletions"])
        return cache, counters["generation"]

    def _refresh_terms(self, project: str) -> ProjectTerms:
        """The project's postings, extended with the rows added since (rebuilt after a deletion). Call
        with `_lock` and `_CACHES_LOCK` held."""
        cache, generation = self._behind(self._terms, project, ProjectTerms)
        if generation is None:
            return cache
        for row_id, kind, text in self._db.execute(
                "SELECT id, kind, terms FROM entries WHERE project = ? AND id > ? ORDER BY id", (project, cache.last_id)):
            position = len(cache.ids)
            cache.ids.append(row_id)
            cache.kinds.append(kind)
            words = text.split()
            cache.lengths.append(len(words))
            cache.total += len(words)
            for term, tf in Counter(words).items():
                posting = cache.postings.get(term)
                if posting is None:
                    posting = cache.postings[term] = (array("i"), array("i"))
                posting[0].append(position)
                posting[1].append(tf)
            cache.last_id = row_id
        cache.generation = generation
        return cache

    def rows(self, ids: Sequence[int]) -> list[IndexedRow]:
        out: list[IndexedRow] = []
        with self._lock:
            for begin in range(0, len(ids), 500):
                chunk = list(ids[begin : begin + 500])
                out.extend(_row(r, r[10], r[9]) for r in self._db.execute(
                    "SELECT e.id, e.session_id, e.turn, e.position, e.kind, e.text, e.message_id, e.at, e.external,"
                    " e.terms, coalesce(s.title, '') FROM entries e LEFT JOIN sources s ON s.session_id = e.session_id"
                    f" WHERE e.id IN ({_marks(chunk)})", chunk))
        return out

    def all_rows(self, project: str) -> list[IndexedRow]:
        """Every fact of the project, in index order (what a baseline ranks)."""
        with self._lock:
            return [_row(r, "", r[9]) for r in self._db.execute(
                "SELECT id, session_id, turn, position, kind, text, message_id, at, external, terms FROM entries"
                " WHERE project = ? ORDER BY id", (project,))]

    def vectors(self, project: str) -> ProjectVectors:
        """The project's vectors, kept in memory and extended with what was added since the last call."""
        with self._lock, _CACHES_LOCK:  # one refresh at a time: the cache is shared by the process
            cache, generation = self._behind(self._vectors, project, ProjectVectors)
            if generation is None:
                return cache
            new = self._db.execute("SELECT id, kind, vector FROM entries WHERE project = ? AND id > ? ORDER BY id",
                                   (project, cache.last_id)).fetchall()
            filled: list[tuple[int, bytes]] = []
            missing = sorted(cache.missing)
            for begin in range(0, len(missing), 500):
                chunk = missing[begin : begin + 500]
                filled.extend(self._db.execute("SELECT id, vector FROM entries WHERE vector IS NOT NULL AND id IN"
                                               f" ({_marks(chunk)})", chunk).fetchall())
            cache.generation = generation
            _extend(cache, new, filled)
            return cache


def _extend(cache: ProjectVectors, new: Sequence[tuple[int, str, bytes | None]],
            filled: Sequence[tuple[int, bytes]]) -> None:
    import numpy as np

    dim = Encoder.dim
    if new:
        block = np.zeros((len(new), dim), dtype=np.float32)
        for i, (row_id, kind, blob) in enumerate(new):
            cache.row_of[row_id] = len(cache.ids)
            cache.ids.append(row_id)
            cache.kinds.append(kind)
            if blob is None:
                cache.missing.add(row_id)
            else:
                block[i] = np.frombuffer(blob, dtype=np.float32)
        cache.matrix = block if cache.matrix is None else np.vstack([cache.matrix, block])
        cache.last_id = new[-1][0]
    for row_id, blob in filled:
        cache.matrix[cache.row_of[row_id]] = np.frombuffer(blob, dtype=np.float32)
        cache.missing.discard(row_id)
    if cache.matrix is None:
        cache.matrix = np.zeros((0, dim), dtype=np.float32)


_SETTLED_NS = 2_000_000_000


def _settled(st: os.stat_result) -> bool:
    """Whether a file's stat can stand for its bytes: its last change is seconds old. A file's time
    moves in clock ticks of several milliseconds, so a rewrite of the same size right after the change
    the stat saw could keep the same time; such a file is checked by its bytes until it has settled."""
    return time.time_ns() - st.st_mtime_ns > _SETTLED_NS


def _marks(values: Sequence[object]) -> str:
    """The `?, ?, …` of an `IN (…)` over `values` (callers keep chunks under SQLite's parameter limit)."""
    return ",".join("?" * len(values))


def _row(r: Sequence[Any], title: str, terms: str = "") -> IndexedRow:
    return IndexedRow(id=int(r[0]), session_id=r[1], title=title, turn=int(r[2]), position=int(r[3]), kind=r[4],
                      text=r[5], message_id=r[6], at=float(r[7]), external=bool(r[8]), terms=terms)


def _messages_of(lines: Sequence[str], session_id: str) -> list[Message]:
    messages: list[Message] = []
    for n, line in enumerate(lines):
        try:
            record = parse_record(line, f"session {session_id}, record {n}")
        except StorageError:
            continue
        if isinstance(record, MessageRecord):
            messages.append(record.message)
    return messages
