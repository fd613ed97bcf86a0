"""Revocation that follows provenance (SPEC MEM-7): a revoked memory leaves every view, including the
summaries, task-state entries and recall blocks that were written while it was active.

Two private files in the home's memory folder, which no model tool may write:

    .provenance.jsonl   one line per use: {"at", "session", "kind": "view" | "summary", "id", "memories"}
                        — a recall block mounted in a view (the message the memory runtime inserted),
                        or a compaction summary that covered such a block (so it may quote it)
    .revocations.json   {"version": 1, "revoked": {name: {"name", "description", "body", "at",
                                                          "derived": {"sessions": [...], "messages": [...]}}}}

`revoke()` is what `nova memory forget` (and the server's DELETE) call: the memory's status becomes
`revoked`, its uses are looked up in the provenance log and stored with it as `derived`, and memories
derived from it (a promotion or a merge that names it as a source) go back to review.

`ProvenanceGuard`, an agent extension that runs before compaction (order 50), records the uses of the
session it serves and rebuilds each view without revoked content: a recall entry of a revoked memory is
removed outright, and any other text Nova or the model wrote (summaries, assistant text, tool results,
the pinned task state) has each line that quotes the revoked text replaced by a marker. "Quotes" is
deterministic: a shared run of five words, or three in a message or session the provenance log marks
as derived from the memory. The user's own messages are left as they wrote them. Because the guard
runs before compaction, a later summary is written from the scrubbed history, never from the revoked
text. The raw session log is not rewritten: it is the record of what happened.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from filelock import FileLock

from nova.context.extensions import Extension, ViewRequest
from nova.fs.private import create_private_file, private_dir
from nova.history.incremental import MessageBlocks
from nova.messages import Message, SummaryPart, TextPart, ToolResultPart
from nova.model import ModelRequest

__all__ = [
    "PROVENANCE_NAME",
    "REVOCATIONS_NAME",
    "ProvenanceGuard",
    "ProvenanceLog",
    "RevocationRegistry",
    "Revoked",
    "Scrubber",
    "scrub_text",
]

log = logging.getLogger(__name__)

PROVENANCE_NAME = ".provenance.jsonl"
REVOCATIONS_NAME = ".revocations.json"
_WORDS = re.compile(r"\w+", re.UNICODE)
_MEMORY_ENTRY = re.compile(r'<memory name="(?P<name>[^"]*)"[^>]*>.*?</memory>\n?', re.DOTALL)
STRICT_RUN = 3
"""Words in a row that count as a quote in text marked as derived from the revoked memory."""
LOOSE_RUN = 5
"""Words in a row that count as a quote anywhere else."""


def _words(text: str) -> list[str]:
    return _WORDS.findall(text.lower())


def _runs(words: Sequence[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


@dataclass(frozen=True, slots=True, kw_only=True)
class Revoked:
    """A revoked memory as the scrubber needs it: its text, and where it was used while active."""

    name: str
    description: str
    body: str
    at: str = ""
    sessions: frozenset[str] = frozenset()
    messages: frozenset[str] = frozenset()

    def runs(self, n: int) -> set[tuple[str, ...]]:
        return _runs(_words(f"{self.description}\n{self.body}"), n)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "body": self.body, "at": self.at,
                "derived": {"sessions": sorted(self.sessions), "messages": sorted(self.messages)}}

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> Revoked:
        derived = raw.get("derived") if isinstance(raw.get("derived"), Mapping) else {}
        assert isinstance(derived, Mapping)
        return cls(name=str(raw.get("name", "")), description=str(raw.get("description", "")),
                   body=str(raw.get("body", "")), at=str(raw.get("at", "")),
                   sessions=frozenset(str(s) for s in derived.get("sessions") or ()),
                   messages=frozenset(str(m) for m in derived.get("messages") or ()))


# -- the use log ---------------------------------------------------------------------------------------
class ProvenanceLog:
    """Append-only record of which memories each view and summary used."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    @classmethod
    def for_memory_dir(cls, home_memory_dir: Path) -> ProvenanceLog:
        return cls(home_memory_dir / PROVENANCE_NAME)

    def append(self, *, session: str, kind: str, message_id: str, memories: Iterable[str]) -> None:
        names = sorted(set(memories))
        if not names:
            return
        entry = {"at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "session": session, "kind": kind,
                 "id": message_id, "memories": names}
        with self._lock:
            private_dir(self.path.parent)
            if not self.path.exists():
                create_private_file(self.path)
            with self.path.open("a", encoding="utf-8") as handle:
                handle.write(json.dumps(entry, ensure_ascii=False, sort_keys=True) + "\n")

    def entries(self) -> Iterator[dict[str, Any]]:
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
        except (FileNotFoundError, NotADirectoryError, UnicodeDecodeError):
            return
        for line in lines:
            with contextlib.suppress(json.JSONDecodeError):
                entry = json.loads(line)
                if isinstance(entry, dict) and isinstance(entry.get("memories"), list):
                    yield entry

    def uses_of(self, name: str) -> list[dict[str, Any]]:
        return [e for e in self.entries() if name in e["memories"]]

    def memories_of(self, message_ids: Iterable[str]) -> set[str]:
        wanted = set(message_ids)
        return {n for e in self.entries() if e.get("id") in wanted for n in e["memories"]}

    def sessions_of(self, name: str) -> set[str]:
        return {str(e.get("session")) for e in self.uses_of(name) if e.get("session")}


# -- the registry ------------------------------------------------------------------------------------
class RevocationRegistry:
    """The revoked memories' text and derived uses; read on every model call, so cached by mtime."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._cached: tuple[int, int, tuple[Revoked, ...]] | None = None

    @classmethod
    def for_memory_dir(cls, home_memory_dir: Path) -> RevocationRegistry:
        return cls(home_memory_dir / REVOCATIONS_NAME)

    def stamp(self) -> tuple[int, int]:
        try:
            st = self.path.stat()
        except (FileNotFoundError, NotADirectoryError):
            return (0, 0)
        return (st.st_mtime_ns, st.st_size)

    def entries(self) -> tuple[Revoked, ...]:
        stamp = self.stamp()
        if stamp == (0, 0):
            return ()
        if self._cached is not None and self._cached[:2] == stamp:
            return self._cached[2]
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            raw = data.get("revoked", {}) if isinstance(data, dict) else {}
            found = tuple(Revoked.from_dict(v) for v in raw.values() if isinstance(v, Mapping))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            log.warning("revocation records %s unreadable (%s)", self.path, exc)
            found = ()
        self._cached = (*stamp, found)
        return found

    def get(self, name: str) -> Revoked | None:
        return next((r for r in self.entries() if r.name == name), None)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[dict[str, Any]]:
        from nova.memory.store import atomic_write_text

        private_dir(self.path.parent)
        with FileLock(str(self.path) + ".lock", mode=0o600):
            try:
                data = json.loads(self.path.read_text(encoding="utf-8"))
                revoked = dict(data.get("revoked", {})) if isinstance(data, dict) else {}
            except (FileNotFoundError, ValueError, UnicodeDecodeError):
                revoked = {}
            yield revoked
            atomic_write_text(self.path, json.dumps({"version": 1, "revoked": revoked}, ensure_ascii=False,
                                                    sort_keys=True, indent=1) + "\n")
            with contextlib.suppress(OSError):
                os.chmod(self.path, 0o600)

    def add(self, revoked: Revoked) -> None:
        with self._locked() as records:
            records[revoked.name] = revoked.to_dict()

    def lift(self, name: str) -> bool:
        """The user approved the memory again: its text may be shown again."""
        if self.get(name) is None:
            return False
        with self._locked() as records:
            return records.pop(name, None) is not None


# -- scrubbing ---------------------------------------------------------------------------------------
def _marker(name: str) -> str:
    return f"[removed: text from revoked memory {name!r}]"


def scrub_text(text: str, revoked: Sequence[Revoked], *, strict_names: frozenset[str] = frozenset(),
               runs: Mapping[tuple[str, int], set[tuple[str, ...]]] | None = None) -> tuple[str, list[str]]:
    """`text` without revoked memories: their recall entries removed, lines quoting them replaced.
    Returns the new text and the names of the memories it removed (empty when nothing changed)."""
    removed: list[str] = []
    names = {r.name for r in revoked}

    def drop(match: re.Match[str]) -> str:
        if match.group("name") in names:
            removed.append(match.group("name"))
            return ""
        return match.group(0)

    if "<memory" in text:
        text = _MEMORY_ENTRY.sub(drop, text)
    out: list[str] = []
    for line in text.split("\n"):
        words = _words(line)
        hit = None
        for r in revoked:
            n = STRICT_RUN if r.name in strict_names else LOOSE_RUN
            if len(words) < n:
                # A short line is a quote when the whole of it appears in the revoked text.
                if len(words) >= STRICT_RUN and tuple(words) in _cached_runs(r, len(words), runs):
                    hit = r.name
                    break
                continue
            table = _cached_runs(r, n, runs)
            if any(tuple(words[i : i + n]) in table for i in range(len(words) - n + 1)):
                hit = r.name
                break
        if hit is None:
            out.append(line)
        else:
            removed.append(hit)
            indent = line[: len(line) - len(line.lstrip())]
            out.append(indent + _marker(hit))
    return "\n".join(out), list(dict.fromkeys(removed))


def _cached_runs(r: Revoked, n: int, runs: Mapping[tuple[str, int], set[tuple[str, ...]]] | None
                 ) -> set[tuple[str, ...]]:
    if runs is not None and (r.name, n) in runs:
        return runs[(r.name, n)]
    return r.runs(n)


@dataclass
class Scrubber:
    """Scrubs messages and text against one set of revocations, remembering what it already did."""

    revoked: tuple[Revoked, ...]
    session: str = ""
    _runs: dict[tuple[str, int], set[tuple[str, ...]]] = field(default_factory=dict)
    _done: dict[str, tuple[Message, Message]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for r in self.revoked:
            words = _words(f"{r.description}\n{r.body}")
            for n in range(STRICT_RUN, LOOSE_RUN + 1):
                self._runs[(r.name, n)] = _runs(words, n)

    def _strict(self, message_id: str) -> frozenset[str]:
        return frozenset(r.name for r in self.revoked if message_id in r.messages or self.session in r.sessions)

    def text(self, text: str, *, message_id: str = "") -> tuple[str, list[str]]:
        return scrub_text(text, self.revoked, strict_names=self._strict(message_id), runs=self._runs)

    def message(self, message: Message) -> Message:
        done = self._done.get(message.id)
        if done is not None and done[0] is message:
            return done[1]
        result = self._scrub(message)
        self._done[message.id] = (message, result)
        return result

    def _scrub(self, message: Message) -> Message:
        if message.role == "user" and message.origin is None and not message.tool_results():
            return message  # the user's own words stay as they wrote them
        removed: list[str] = []
        parts: list[Any] = []
        for part in message.parts:
            if isinstance(part, TextPart | SummaryPart):
                new, names = self.text(part.text, message_id=message.id)
                parts.append(replace(part, text=new) if names else part)
            elif isinstance(part, ToolResultPart):
                new, names = self.text(part.content, message_id=message.id)
                parts.append(replace(part, content=new) if names else part)
            else:
                names = []
                parts.append(part)
            removed.extend(names)
        if not removed:
            return message
        return message.with_parts(parts).with_metadata(revoked_memories=sorted(set(removed)))


# -- the extension -------------------------------------------------------------------------------------
@dataclass
class ProvenanceGuard(Extension):
    """Records what each view mounted and rebuilds views without revoked memories (see the module doc)."""

    order = 50  # before compaction (100): a summary is written from history that is already scrubbed

    registry: RevocationRegistry
    log: ProvenanceLog
    session_id: str = ""
    _seen: set[str] = field(default_factory=set)
    _recalled: dict[str, list[str]] = field(default_factory=dict)
    _scrubber: tuple[tuple[int, int], Scrubber] | None = None
    _clean: tuple[int, Message | None, Message | None] = (0, None, None)
    """(length, first, last) of the history last seen: that prefix is recorded and scrubbed already."""
    _clean_stamp: tuple[int, int] = (0, 0)
    _clean_blocks: dict[int, tuple[Message, ...]] = field(default_factory=dict)
    _clean_stamp_blocks: tuple[int, int] = (0, 0)

    @classmethod
    def for_home_memory_dir(cls, home_memory_dir: Path, *, session_id: str) -> ProvenanceGuard:
        return cls(registry=RevocationRegistry.for_memory_dir(home_memory_dir),
                   log=ProvenanceLog.for_memory_dir(home_memory_dir), session_id=session_id)

    def prepare_view(self, *, request: ViewRequest) -> Sequence[Message]:
        history = request.history
        start = self._known_prefix(history)
        self.record(history, start=start)
        scrubber = self.scrubber()
        stamp = self.registry.stamp()
        if scrubber is None:
            self._mark(history, stamp)
            return history
        # Only what is new since the last call is looked at (the loop appends; a compaction or a new
        # revocation starts over), so a long session pays per message once, not per call.
        if self._clean_stamp != stamp:
            start = 0
        tail = [scrubber.message(m) for m in history[start:]]
        if any(a is not b for a, b in zip(tail, history[start:], strict=True)):
            history = [*history[:start], *tail]
        self._mark(history, stamp)
        return history

    def prepare_request(self, *, request: ModelRequest) -> ModelRequest:
        """The last check before a request leaves: anything the view gained after the history was
        scrubbed (a summary written this call, the pinned task state) is scrubbed too."""
        scrubber = self.scrubber()
        if scrubber is None:
            return request
        if self._clean_stamp_blocks != self.registry.stamp():
            self._clean_blocks, self._clean_stamp_blocks = {}, self.registry.stamp()
        if isinstance(request.messages, MessageBlocks) and self._clean_view(request.messages, scrubber):
            return request
        messages = [scrubber.message(m) for m in request.messages]
        if all(a is b for a, b in zip(messages, request.messages, strict=True)):
            return request
        return replace(request, messages=messages)

    def _clean_view(self, view: MessageBlocks, scrubber: Scrubber) -> bool:
        """True when nothing in `view` needs scrubbing. Consecutive views share their full blocks (the
        same tuples), so a block found clean once is skipped by identity: a call costs its tail."""
        if len(self._clean_blocks) > 4 * len(view.blocks) + 64:
            self._clean_blocks = {}  # blocks of a history since compacted away
        for block in view.blocks:
            if self._clean_blocks.get(id(block)) is block:
                continue
            if any(scrubber.message(m) is not m for m in block):
                return False
            self._clean_blocks[id(block)] = block
        return all(scrubber.message(m) is m for m in view.tail)

    def _known_prefix(self, history: Sequence[Message]) -> int:
        length, first, last = self._clean
        if length and len(history) >= length and history[0] is first and history[length - 1] is last:
            return length
        return 0

    def _mark(self, history: Sequence[Message], stamp: tuple[int, int]) -> None:
        self._clean = (len(history), history[0], history[-1]) if history else (0, None, None)
        self._clean_stamp = stamp

    def scrubber(self) -> Scrubber | None:
        revoked = self.registry.entries()
        if not revoked:
            return None
        stamp = self.registry.stamp()
        if self._scrubber is None or self._scrubber[0] != stamp:
            self._scrubber = (stamp, Scrubber(revoked=revoked, session=self.session_id))
        return self._scrubber[1]

    def scrub_pinned(self, text: str) -> str:
        """The pinned task state without revoked text (its entries may quote a memory the session used)."""
        scrubber = self.scrubber()
        return text if scrubber is None or not text else scrubber.text(text)[0]

    def record(self, history: Sequence[Message], *, start: int = 0) -> None:
        """Log each recall block and each summary covering one, once per message."""
        for message in history[start:]:
            if message.id in self._seen:
                continue
            self._seen.add(message.id)
            if message.origin == "memory":
                names = [str(n) for n in message.metadata.get("memories") or ()]
                names = names or [m.group("name") for m in _MEMORY_ENTRY.finditer(message.text)]
                self._recalled[message.id] = names
                self.log.append(session=self.session_id, kind="view", message_id=message.id, memories=names)
            elif any(isinstance(p, SummaryPart) for p in message.parts):
                covered = [c for p in message.parts if isinstance(p, SummaryPart) for c in p.covers]
                names = [n for c in covered for n in self._recalled.get(c, ())]
                unknown = [c for c in covered if c not in self._recalled]
                if unknown and not names:
                    names = sorted(self.log.memories_of(unknown))
                self.log.append(session=self.session_id, kind="summary", message_id=message.id, memories=names)


# -- revoking --------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True, kw_only=True)
class RevocationReport:
    name: str
    views: tuple[str, ...] = ()
    summaries: tuple[str, ...] = ()
    sessions: tuple[str, ...] = ()
    held: tuple[str, ...] = ()
    """Memories that quote the revoked one (a merge, a promotion written from it): back to review."""

    def describe(self) -> list[str]:
        lines = [f"revoked {self.name!r}: it is never recalled again and the model cannot re-create it"]
        if self.views or self.summaries:
            lines.append(f"it was used in {len(self.views)} view(s) and {len(self.summaries)} summary(ies) in "
                         f"{len(self.sessions)} session(s): {', '.join(self.sessions)}; their next views are "
                         "rebuilt without its text (summaries and task state that quote it are redacted)")
        for held in self.held:
            lines.append(f"{held!r} quotes it: back to review (`nova memory show {held}`)")
        return lines

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "views": list(self.views), "summaries": list(self.summaries),
                "sessions": list(self.sessions), "held": list(self.held)}


def revoke(store: Any, name: str) -> RevocationReport:
    """Revoke `name` in `store` (a `MemoryStore`) and everything derived from it (see the module doc)."""
    memory = store.set_status(name, "revoked")
    home = store.home_dir
    uses = ProvenanceLog.for_memory_dir(home).uses_of(memory.name)
    views = tuple(dict.fromkeys(str(u["id"]) for u in uses if u.get("kind") == "view"))
    summaries = tuple(dict.fromkeys(str(u["id"]) for u in uses if u.get("kind") == "summary"))
    sessions = tuple(dict.fromkeys(str(u["session"]) for u in uses if u.get("session")))
    entry = Revoked(name=memory.name, description=memory.description, body=memory.body,
                    at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                    sessions=frozenset(sessions), messages=frozenset((*views, *summaries)))
    RevocationRegistry.for_memory_dir(home).add(entry)
    scrubber = Scrubber(revoked=(entry,))
    held: list[str] = []
    for other in store.memories(include_revoked=False):
        if other.name == memory.name or other.status != "active":
            continue
        if scrubber.text(f"{other.description}\n{other.body}")[1]:
            store.write(replace(other, status="candidate"), by="nova",
                        note=f"quotes revoked memory {memory.name!r}: check it, then approve or forget it")
            held.append(other.name)
    return RevocationReport(name=memory.name, views=views, summaries=summaries, sessions=sessions,
                            held=tuple(held))


def reinstate(store: Any, name: str) -> None:
    """The user approved `name` again: lift its revocation so its text may appear again."""
    RevocationRegistry.for_memory_dir(store.home_dir).lift(store.get(name).name)
