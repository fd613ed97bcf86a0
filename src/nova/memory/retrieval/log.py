"""The retrieval log (SPEC MEM-9): what each search retrieved, which of it was used, and the user's
feedback, in one SQLite file beside the memories. It is what later tuning and audits read."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from contextlib import closing
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from nova.fs.private import private_dir
from nova.memory.retrieval.pipeline import SearchResult

__all__ = ["LOG_NAME", "LoggedHit", "RetrievalLog", "Verdict"]

LOG_NAME = "retrieval-log.sqlite"
Verdict = Literal["helpful", "wrong", "outdated", "irrelevant"]
_SCHEMA = """
CREATE TABLE IF NOT EXISTS retrievals (id INTEGER PRIMARY KEY, at TEXT NOT NULL, query TEXT NOT NULL,
                                       stages TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS retrieved (retrieval INTEGER NOT NULL REFERENCES retrievals(id), record TEXT NOT NULL,
                                      rank INTEGER NOT NULL, score REAL NOT NULL, used INTEGER NOT NULL DEFAULT 0,
                                      PRIMARY KEY (retrieval, record));
CREATE TABLE IF NOT EXISTS feedback (retrieval INTEGER NOT NULL REFERENCES retrievals(id), record TEXT NOT NULL,
                                     verdict TEXT NOT NULL, note TEXT NOT NULL, at TEXT NOT NULL);
"""


@dataclass(frozen=True, slots=True, kw_only=True)
class LoggedHit:
    retrieval: int
    record: str
    rank: int
    score: float
    used: bool
    feedback: tuple[str, ...]


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class RetrievalLog:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._ready = False

    def _connect(self) -> sqlite3.Connection:
        # Created on first use, so an agent that never recalls anything never touches the disk.
        if not self._ready:
            private_dir(self.path.parent)
            with closing(sqlite3.connect(self.path, timeout=5.0)) as db, db:
                db.executescript(_SCHEMA)
            self._ready = True
        return sqlite3.connect(self.path, timeout=5.0)

    def record(self, result: SearchResult, *, at: str | None = None) -> int:
        """Log a search and its hits; returns the retrieval id that `mark_used` and `feedback` take."""
        with closing(self._connect()) as db, db:
            cursor = db.execute("INSERT INTO retrievals (at, query, stages) VALUES (?, ?, ?)",
                                (at or _now(), result.query, json.dumps(result.stages, default=str)))
            retrieval = int(cursor.lastrowid or 0)
            db.executemany("INSERT INTO retrieved (retrieval, record, rank, score) VALUES (?, ?, ?, ?)",
                           [(retrieval, h.record.id, rank, h.score) for rank, h in enumerate(result.hits, 1)])
        return retrieval

    def mark_used(self, retrieval: int, records: Iterable[str]) -> None:
        with closing(self._connect()) as db, db:
            db.executemany("UPDATE retrieved SET used = 1 WHERE retrieval = ? AND record = ?",
                           [(retrieval, r) for r in records])

    def feedback(self, retrieval: int, record: str, verdict: Verdict, note: str = "") -> None:
        with closing(self._connect()) as db, db:
            db.execute("INSERT INTO feedback (retrieval, record, verdict, note, at) VALUES (?, ?, ?, ?, ?)",
                       (retrieval, record, verdict, note, _now()))

    def hits(self, retrieval: int) -> list[LoggedHit]:
        with closing(self._connect()) as db:
            rows = db.execute("SELECT record, rank, score, used FROM retrieved WHERE retrieval = ? ORDER BY rank",
                              (retrieval,)).fetchall()
            verdicts: dict[str, list[str]] = {}
            for record, verdict in db.execute("SELECT record, verdict FROM feedback WHERE retrieval = ? ORDER BY rowid",
                                              (retrieval,)):
                verdicts.setdefault(record, []).append(verdict)
        return [LoggedHit(retrieval=retrieval, record=r, rank=k, score=s, used=bool(u),
                          feedback=tuple(verdicts.get(r, ()))) for r, k, s, u in rows]

    def last(self) -> int | None:
        with closing(self._connect()) as db:
            row = db.execute("SELECT max(id) FROM retrievals").fetchone()
        return int(row[0]) if row and row[0] is not None else None
