"""The promotion ladder (SPEC MEM-8): what a memory has proven, rung by rung.

    episode   a note from one session: every memory starts here
    lesson    seen in two or more sessions (recalled or proposed there), or approved by a person
    skill     a lesson with a test that passed, run by `nova memory promote NAME --to skill --test CMD`
    standard  a skill a person reviewed and promoted, with evidence from at least two sessions: only a
              standard may become a rule (`--add-to-rules` writes it into the project's NOVA.md)

Evidence is checked at every rung, not only the last: promoting to `standard` re-checks the lesson's
sessions and the skill's test. A promotion without its evidence is refused, naming what is missing.
Test results and reviews are bound to the memory's content hash: an edit after them voids them, and the
memory stands on the highest rung its evidence still supports. One trajectory never becomes a rule: a
single session is never enough for `standard`, whoever approves it.

The records live in `<NOVA_HOME>/memory/.ladder.json` (private, beside the review ledger), which no
model tool may write; there is no model tool that promotes.
"""

from __future__ import annotations

import contextlib
import json
import shlex
import subprocess
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from filelock import FileLock

from nova.errors import NovaError
from nova.fs.private import private_dir
from nova.memory.provenance import ProvenanceLog
from nova.memory.reviews import ReviewLedger, content_hash
from nova.memory.store import Memory, atomic_write_text

__all__ = ["LADDER_NAME", "RUNGS", "Ladder", "PromotionRefused", "Rung", "Standing", "rule_line"]

Rung = Literal["episode", "lesson", "skill", "standard"]
RUNGS: tuple[Rung, ...] = ("episode", "lesson", "skill", "standard")
LADDER_NAME = ".ladder.json"
MIN_SESSIONS = 2
TEST_TIMEOUT_S = 600


class PromotionRefused(NovaError):
    """A promotion without the evidence its rung needs."""

    def __init__(self, name: str, target: str, missing: list[str]) -> None:
        self.missing = missing
        super().__init__(f"cannot promote {name!r} to {target}; missing: " + "; ".join(missing))


@dataclass(frozen=True, slots=True, kw_only=True)
class Standing:
    name: str
    rung: Rung
    sessions: tuple[str, ...] = ()
    approved: bool = False
    test: Mapping[str, Any] | None = None
    reviewed: Mapping[str, Any] | None = None
    next: Rung | None = None
    missing: tuple[str, ...] = ()
    """What the next rung still needs."""
    notes: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        return {"rung": self.rung, "next": self.next, "missing": list(self.missing),
                "evidence": {"sessions": list(self.sessions), "approved": self.approved,
                             "test": dict(self.test) if self.test else None,
                             "reviewed": dict(self.reviewed) if self.reviewed else None},
                "may_become_rule": self.rung == "standard", "notes": list(self.notes)}


def rule_line(memory: Memory) -> str:
    text = " ".join(memory.body.split()) or memory.description
    return f"- {text} (standard: memory {memory.name!r})"


class Ladder:
    def __init__(self, home_memory_dir: Path) -> None:
        self.path = home_memory_dir / LADDER_NAME
        self.reviews = ReviewLedger.for_memory_dir(home_memory_dir)
        self.uses = ProvenanceLog.for_memory_dir(home_memory_dir)

    # -- records --------------------------------------------------------------------------------------
    def _records(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (FileNotFoundError, NotADirectoryError, ValueError, UnicodeDecodeError):
            return {}
        found = data.get("memories") if isinstance(data, dict) else None
        return found if isinstance(found, dict) else {}

    @contextlib.contextmanager
    def _locked(self) -> Iterator[dict[str, Any]]:
        private_dir(self.path.parent)
        with FileLock(str(self.path) + ".lock", mode=0o600):
            records = self._records()
            yield records
            atomic_write_text(self.path, json.dumps({"version": 1, "memories": records}, ensure_ascii=False,
                                                    sort_keys=True, indent=1) + "\n")

    # -- evidence -------------------------------------------------------------------------------------
    def sessions(self, memory: Memory) -> tuple[str, ...]:
        found = {memory.source.session} if memory.source.session else set()
        found |= self.uses.sessions_of(memory.name)
        return tuple(sorted(s for s in found if s))

    def _approved(self, memory: Memory) -> bool:
        if memory.status != "active":
            return False
        record = self.reviews.get(content_hash(memory))
        return record is not None and record.state == "active" and record.by == "user"

    def _missing(self, memory: Memory, target: Rung, record: Mapping[str, Any]) -> list[str]:
        """Everything `target` and the rungs below it still need, lowest rung first."""
        if memory.status == "revoked":
            return ["it is revoked"]
        missing: list[str] = []
        digest = content_hash(memory)
        level = RUNGS.index(target)
        sessions = self.sessions(memory)
        if level >= 1 and len(sessions) < MIN_SESSIONS and not self._approved(memory):
            missing.append(f"lesson: seen in {len(sessions)} session(s), needs {MIN_SESSIONS}, or a person's "
                           f"approval (`nova memory approve {memory.name}`)")
        if level >= 2:
            test = record.get("test")
            if not isinstance(test, Mapping):
                missing.append("skill: a test that passed (`--test CMD` runs it and records its exit code)")
            elif test.get("exit_code") != 0:
                missing.append(f"skill: its test `{test.get('command')}` failed (exit {test.get('exit_code')})")
            elif test.get("hash") != digest:
                missing.append("skill: its test passed for earlier text; run it again (`--test CMD`)")
        if level >= 3:
            if len(sessions) < MIN_SESSIONS:
                missing.append(f"standard: evidence from {MIN_SESSIONS} sessions (one trajectory never becomes a "
                               f"rule; seen in {len(sessions)})")
            if not self._approved(memory):
                missing.append(f"standard: a person's approval of its current text (`nova memory approve "
                               f"{memory.name}`)")
        return missing

    def standing(self, memory: Memory) -> Standing:
        record = self._records().get(memory.name) or {}
        claimed = record.get("rung") if record.get("rung") in RUNGS else "episode"
        rung: Rung = "episode"
        notes: list[str] = []
        for candidate in RUNGS[1 : RUNGS.index(claimed) + 1]:
            reviewed = record.get("reviewed")
            if candidate == "standard" and not (isinstance(reviewed, Mapping)
                                                and reviewed.get("hash") == content_hash(memory)):
                notes.append("its review as a standard was of earlier text")
                break
            if self._missing(memory, candidate, record):
                notes.append(f"promoted to {claimed} once, but its evidence no longer holds")
                break
            rung = candidate
        # A lesson needs no promotion: the evidence alone puts a memory there.
        if rung == "episode" and not self._missing(memory, "lesson", record):
            rung = "lesson"
        following = RUNGS[RUNGS.index(rung) + 1] if rung != "standard" else None
        missing = tuple(self._missing(memory, following, record)) if following else ()
        if following == "standard" and not missing:
            missing = (f"standard: a person's review (`nova memory promote {memory.name} --to standard`)",)
        test = record.get("test") if isinstance(record.get("test"), Mapping) else None
        reviewed = record.get("reviewed") if isinstance(record.get("reviewed"), Mapping) else None
        return Standing(name=memory.name, rung=rung, sessions=self.sessions(memory), approved=self._approved(memory),
                        test=test, reviewed=reviewed, next=following, missing=missing, notes=tuple(notes))

    # -- promotion ------------------------------------------------------------------------------------
    def promote(self, memory: Memory, target: Rung, *, by: Literal["user", "nova"], test: str = "",
                cwd: Path | None = None) -> Standing:
        """Climb to `target` when every rung up to it has its evidence; `test` (a command) is run first
        when given and its exit code recorded. Refusals raise `PromotionRefused` naming what is missing."""
        if target not in RUNGS:
            raise PromotionRefused(memory.name, str(target), [f"unknown rung; expected one of {', '.join(RUNGS)}"])
        if target == "episode":
            raise PromotionRefused(memory.name, target, ["every memory is an episode note already"])
        if test:
            self.record_test(memory, test, cwd=cwd or Path.cwd())
        record = self._records().get(memory.name) or {}
        missing = self._missing(memory, target, record)
        if target == "standard" and by != "user":
            missing.append("standard: a person must promote it; the model never does")
        if missing:
            raise PromotionRefused(memory.name, target, missing)
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        with self._locked() as records:
            entry = dict(records.get(memory.name) or {})
            entry["rung"] = target
            entry.setdefault("history", []).append({"rung": target, "at": stamp, "by": by})
            if target == "standard":
                entry["reviewed"] = {"by": by, "at": stamp, "hash": content_hash(memory)}
            records[memory.name] = entry
        return self.standing(memory)

    def record_test(self, memory: Memory, command: str, *, cwd: Path) -> int:
        """Run `command` (no shell) in `cwd` and record its real exit code against the memory's text."""
        try:
            argv = shlex.split(command)
            completed = subprocess.run(argv, cwd=cwd, capture_output=True, timeout=TEST_TIMEOUT_S, check=False)
            code = completed.returncode
        except (OSError, ValueError, subprocess.TimeoutExpired):
            code = 127
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        with self._locked() as records:
            entry = dict(records.get(memory.name) or {})
            entry["test"] = {"command": command, "exit_code": code, "at": stamp, "hash": content_hash(memory),
                             "cwd": str(cwd)}
            records[memory.name] = entry
        return code
