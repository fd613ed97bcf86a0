"""Retention scoring (nova.evaluation.retention): what a replayed run must keep readable, counted by words."""

from __future__ import annotations

from nova.evaluation.retention import Item, retention, retention_items
from nova.messages import Message, TextPart, ToolResultPart, ToolUsePart


def _run() -> list[Message]:
    task = Message(role="user", id="u1", parts=(
        TextPart("Fix the date parser in utils/dates.py\nkeep the public API unchanged"),
        TextPart("<environment_details>\n# Visible files\nsrc/app.py\n</environment_details>", harness=True),
    ))
    write = ToolUsePart("t1", "write_file", {"path": "utils/dates.py", "content": "def parse(): ..."})
    return [task, Message(role="assistant", id="a1", parts=(write,)),
            Message(role="user", id="r1", parts=(ToolResultPart("t1", "ok"),))]


def test_items_are_what_the_person_typed_and_the_files_written() -> None:
    texts = [i.text for i in retention_items(_run())]
    assert "utils/dates.py" in texts
    assert "keep the public API unchanged" in texts  # a task-statement line
    # The harness's insert is not the user's words: nothing of it is an item.
    assert not any("environment_details" in t or "Visible files" in t for t in texts)


def test_an_item_is_held_whatever_whitespace_the_view_joins_it_with() -> None:
    items = [Item("Fix the date parser in utils/dates.py\n\nkeep the public API unchanged", "u1")]
    view = [Message(role="user", id="u1", parts=(TextPart("Fix the date parser in utils/dates.py"),
                                                TextPart("keep the public API unchanged")))]
    assert retention(items, view) == (1, 1, 0)


def test_a_lost_item_counts_against_the_view() -> None:
    items = retention_items(_run())
    held, counted, excused = retention(items, [Message.user("something else entirely")])
    assert (held, excused) == (0, 0) and counted == len(items) > 0
