"""What a replayed run must keep readable, and how much of it its final view still shows.

The items are every user message (the text the person typed), every line of the task statement, every modified path (the files the
calls write, by `nova.history.tool_paths`) and the last failing command with the last line of its error.
An item lost with a user message the manifest records as cut, and why (`nova.context.compiler.cut_records`:
a message over three quarters of the threshold, or one the compaction summary had no room for), is
excused rather than counted against the policy; the baselines record nothing, so nothing of theirs is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from nova.context.compiler import cut_records
from nova.context.summarize import is_user_message
from nova.evaluation.cases import work_items
from nova.evaluation.replay import view_text
from nova.messages import Message, person_entries

__all__ = ["Item", "retention", "retention_items"]


@dataclass(frozen=True, slots=True)
class Item:
    text: str
    source: str = ""
    """The id of the user message it comes from ("" for modified paths and the failing command)."""


def retention_items(messages: Sequence[Message]) -> list[Item]:
    """What a run must keep readable: user messages, task statement lines, modified paths, the last
    failing command and the last line of its error."""
    # What the person typed: text the recording agent put into a user message (Cline's environment
    # details, a hook's note) is the harness's, regenerated on every turn, not the user's words.
    typed = [(m.id, text) for m in messages if is_user_message(m) for _, text in person_entries(m)]
    items = [Item(text, source) for source, text in typed]
    if typed:
        source, first = typed[0]
        items += [Item(line.strip(), source) for line in first.splitlines() if len(line.strip()) >= 12]
    modified, failing = work_items(messages)
    items += [Item(p) for p in modified]
    if failing is not None:
        items += [Item(x) for x in failing]
    return [i for i in items if i.text]


def retention(items: Sequence[Item], view: Sequence[Message]) -> tuple[int, int, int]:
    """(held, counted, excused): an item lost from the view is excused only when it comes from a user
    message the manifest records as cut, with why; every other loss counts against the policy. Whitespace
    is compared collapsed: a message's parts are joined differently in its text and in the view's, and
    the resume repair merges adjacent user messages, so only the words say whether an item is there."""
    text = _words(view_text(view))
    recorded = {d.source.removeprefix("message:") for d in cut_records(view) if d.reason}
    held = excused = 0
    for item in items:
        if _words(item.text) in text:
            held += 1
        elif item.source and item.source in recorded:
            excused += 1
    return held, len(items) - excused, excused


def _words(text: str) -> str:
    return " ".join(text.split())
