"""What a Nova recording says its context pipeline did, followed along by a replay of it.

A Nova session's transcript holds more than its messages (`nova.sessions.readers.base.PipelineRecord`):
each task-state write, each compaction and each message rewritten in the view, where it happened. A
replay under the `nova` policy runs the same pipeline over the same messages, and `RecordedRun` gives
it what it cannot work out by itself:

- the task state in effect at each call (the pinned block): the user's commands, test evidence and
  accepted proposals came from outside the messages;
- the files a compaction's restore attachment re-read from disk (CMP-7): the disk has changed since, or
  is on another machine, but the recorded head of history shows them as they were (one `### <path>`
  section per file after the summary, `nova.context.compaction`); elsewhere it has nothing, and the
  restore falls back to the result the model saw, as a live restore does when a file cannot be read;
- the `/compact` commands the user gave, forced at the same places;
- whether the replay's views are still the recorded ones: they are while its compactions (what they
  folded and what they left) and rewrites are the recorded ones, in order and place (it is the replay's
  session recorder, so it sees each), and it spilled no result as it entered history (the recording
  holds every live spill done already).
  Then a call's recorded usage is the provider's count of the very view the replay built, and the
  replay's token ledger anchors on it as the live ledger did (TOK-2): the decisions that follow are
  the live run's, whatever the provider's tokenizer.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from nova.context.state import TaskState
from nova.messages import Message, SummaryPart, TextPart
from nova.model import CallPurpose, Usage
from nova.sessions.readers.base import PipelineRecord, RecordedCompaction
from nova.sessions.schema import BoundaryRecord

__all__ = ["RecordedRun", "restored_sections"]

# The sections of a restore attachment that are not files.
_OTHER_SECTIONS = ("Active skills", "Tools available")

Change = tuple[int, str, tuple[str, ...]]
"""(message index it came before, "compaction", "rewrite" or "spill", the ids it covered or changed; for a
compaction, then the digest of the head it left)."""


class RecordedRun:
    """A recording's pipeline record, positioned on the replay's messages (see the module text). The
    replay calls `move_to` before each message; the pipeline it builds records into this object."""

    def __init__(self, record: PipelineRecord | None, messages: Sequence[Message], read_paths: Iterable[str]) -> None:
        self.record = record
        index = {m.id: i for i, m in enumerate(messages)}
        self._recorded_ids = index.keys()
        end = len(messages)

        def place(before: str) -> int:
            # A write before a message the resume repair took out holds from the end on.
            return index.get(before, end) if before else end

        self._states: dict[int, Mapping[str, Any]] = {}
        self._restores: dict[int, dict[str, str]] = {}
        self._expected: list[Change] = []
        self.manual: frozenset[int] = frozenset()
        """The places the user compacted (`/compact`): the replay forces a compaction there."""
        if record is not None:
            for written in record.task_states:
                self._states[place(written.before)] = written.state  # the last write before a message holds
            known = set(read_paths)
            manual: set[int] = set()
            for change in record.changes:
                at = place(change.before)
                if isinstance(change, RecordedCompaction):
                    self._expected.append((at, "compaction", (*self._recorded(change.covers), _content(change.head))))
                    self._restores[at] = restored_sections(_attachment(change.head), known)
                    if change.trigger == "manual":
                        manual.add(at)
                else:
                    self._expected.append((at, "rewrite", (change.message_id,)))
            self.manual = frozenset(manual)
        self._made: list[Change] = []
        self._at = 0
        self._same = record is not None

    # -- following the replay ------------------------------------------------------------------------
    def move_to(self, index: int) -> TaskState | None:
        """The replay is about to take message `index` (`len(messages)`: the final view); returns the task
        state recorded as written before it, if one was."""
        self._at = index
        data = self._states.pop(index, None)
        return TaskState.from_dict(data) if data is not None else None

    def same_views(self) -> bool:
        """Whether every view so far, this one included, is the one the recording sent: the replay made
        exactly the recorded compactions and rewrites, at the same places, up to here."""
        if self._same:
            expected = [c for c in self._expected if c[0] <= self._at]
            self._same = self._made == expected
        return self._same

    def anchor(self, message: Message) -> Usage | None:
        """The recorded usage of the call that answered with `message`, when the replay's view for it is
        the recorded one: the provider's own count of that view."""
        usage = message.metadata.get("usage") if message.role == "assistant" else None
        if not isinstance(usage, dict) or not self.same_views():
            return None
        recorded = Usage.from_dict(usage)
        return recorded if recorded.context_tokens > 0 else None

    def read_file(self, path: str) -> str | None:
        """A file as the recorded compaction at this place re-read it for its restore; "" (nothing to
        restore) for one that compaction left out, when the replay has followed the recording so far;
        else None (the restore falls back to the result the model saw).

        A file the live restore left out did not fit its budget with the text on disk then (or was
        empty); the result the model saw, its stand-in here, is another text and may fit where that one
        did not, leaving another head of history than the recorded one."""
        restored = self._restores.get(self._at)
        if restored is None:
            return None
        if path in restored:
            return restored[path]
        following = self._made == [c for c in self._expected if c[0] < self._at]
        return "" if following else None

    def spilled(self, message_id: str) -> None:
        """The replay spilled a result of `message_id` as it entered history. A live spill is recorded
        already done (the message holds the placeholder), so this is one the live run did not make."""
        self._made.append((self._at, "spill", (message_id,)))

    # -- the replay's session recorder (nova.sessions.recorder.SessionRecorder) -------------------------
    def update_message_content(self, message_id: str, message: Message) -> None:
        self._made.append((self._at, "rewrite", (message_id,)))

    def record_compact_boundary(self, boundary: BoundaryRecord) -> str:
        self._made.append((self._at, "compaction", (*self._recorded(boundary.covers), _content(boundary.messages))))
        return ""

    def _recorded(self, covers: Sequence[str]) -> tuple[str, ...]:
        """The recorded messages a compaction folded: an earlier summary it folded too has an id of its
        own in each run."""
        return tuple(c for c in covers if c in self._recorded_ids)

    def record_message(self, message: Message, usage: Usage | None = None) -> None:
        return None

    def record_event(self, name: str, data: Mapping[str, Any]) -> None:
        return None

    def add_cost(self, usage: Usage, cost_usd: float | None, purpose: CallPurpose = "turn", *,
                 calls: int = 1) -> None:
        return None

    def note_context_size(self, tokens: int) -> None:
        return None

    def flush(self) -> None:
        return None


def restored_sections(attachment: str, paths: Iterable[str]) -> dict[str, str]:
    """The `### <path>` sections of a restore attachment for each of `paths` it holds, by path. A
    section ends where the next known one starts (a file's text may itself hold `### ` lines)."""
    starts: list[tuple[int, int, str]] = []  # (heading at, text at, path or section name)
    for name in (*set(paths), *_OTHER_SECTIONS):
        heading = f"\n\n### {name}\n"
        at = attachment.find(heading)
        while at >= 0:
            starts.append((at, at + len(heading), name))
            at = attachment.find(heading, at + 1)
    starts.sort()
    sections: dict[str, str] = {}
    for number, (_, begin, name) in enumerate(starts):
        if name in _OTHER_SECTIONS or name in sections:
            continue
        end = starts[number + 1][0] if number + 1 < len(starts) else len(attachment)
        sections[name] = attachment[begin:end]
    return sections


def _content(head: Sequence[Message]) -> str:
    """What a compaction left, as the model reads it (ids aside: a summary's is fresh in each run): a
    summary written differently (by a model in the live run, extracted in the replay) parts the views."""
    shown = [[m.role, m.text, [r.content for r in m.tool_results()], [[u.name, dict(u.input)] for u in m.tool_uses()]]
             for m in head]
    return hashlib.blake2b(json.dumps(shown, sort_keys=True, default=str).encode("utf-8", "surrogatepass"),
                           digest_size=16).hexdigest()


def _attachment(head: Sequence[Message]) -> str:
    """The restore attachment of a recorded head: the text after the summary in its summary message."""
    for message in head:
        if any(isinstance(p, SummaryPart) for p in message.parts):
            return "".join(p.text for p in message.parts if isinstance(p, TextPart))
    return ""
