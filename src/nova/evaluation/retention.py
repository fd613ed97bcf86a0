"""What a replayed run must keep readable, and how much of it its final view still shows.

The items are every user message, every line of the task statement, every modified path (the files the
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
from nova.messages import Message

__all__ = ["Item", "retention", "retention_items"]


@dataclass(frozen=True, slots=True)
class Item:
    text: str
    source: str = ""
    """The id of the user message it comes from ("" for modified paths and the failing command)."""


def retention_items(messages: Sequence[Message]) -> list[Item]:
    """What a run must keep readable: user messages, task statement lines, modified paths, the last
    failing command and the last line of its error."""
    users = [m for m in messages if is_user_message(m)]
    items = [Item(m.text, m.id) for m in users]
    if users:
        items += [Item(line.strip(), users[0].id) for line in users[0].text.splitlines() if len(line.strip()) >= 12]
    modified, failing = work_items(messages)
    items += [Item(p) for p in modified]
    if failing is not None:
        items += [Item(x) for x in failing]
    return [i for i in items if i.text]


def retention(items: Sequence[Item], view: Sequence[Message]) -> tuple[int, int, int]:
    """(held, counted, excused): an item lost from the view is excused only when it comes from a user
    message the manifest records as cut, with why; every other loss counts against the policy."""
    text = view_text(view)
    recorded = {d.source.removeprefix("message:") for d in cut_records(view) if d.reason}
    held = excused = 0
    for item in items:
        if item.text in text:
            held += 1
        elif item.source and item.source in recorded:
            excused += 1
    return held, len(items) - excused, excused
