"""Hypothesis strategies for the incremental consumers: histories edited the way a session edits them.

A session's history grows by appended messages; a snip replaces an old message with a new version under
the same id; a compaction replaces the head with a summary; a resume or a copy hands over equal messages
that are different objects. `edits()` draws a sequence of such steps, and `replay(edits)` yields the
history after each one, so a test can feed every state to an incremental checker and compare it with
the checker that starts from nothing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from typing import Any

from hypothesis import strategies as st

from nova.history.incremental import BLOCK_SIZE, MessageBlocks, common_prefix
from nova.messages import Message, Part, SummaryPart, TextPart, ThinkingPart, ToolResultPart, ToolUsePart

# Few tool ids, so that pairs match, go missing and repeat (the pairing check has something to find).
TOOL_IDS = ("t1", "t2", "t3")

texts = st.text(alphabet="ab cd\n{}é中", max_size=30)
parts: st.SearchStrategy[Part] = st.one_of(
    st.builds(TextPart, texts),
    st.builds(ToolUsePart, st.sampled_from(TOOL_IDS), st.sampled_from(["bash", "read_file"]),
              st.fixed_dictionaries({"command": texts})),
    st.builds(ToolResultPart, st.sampled_from(TOOL_IDS), texts, st.booleans()),
    st.builds(ThinkingPart, texts, st.sampled_from(["", "sig"])),
    st.builds(SummaryPart, texts, st.just(("gone",))),
)
# What Nova inserted (memory, summary, observations) and what a snip marks.
labels = st.sampled_from([(None, {}), (None, {}), ("memory", {}), ("summary", {}), ("context", {}),
                          (None, {"snipped": True})])


@st.composite
def messages(draw: st.DrawFn, serial: Iterator[int]) -> Message:
    origin, metadata = draw(labels)
    return Message(role=draw(st.sampled_from(["user", "assistant", "user", "assistant", "system"])),
                   parts=tuple(draw(st.lists(parts, max_size=3))), id=f"m{next(serial)}", created_at=0.0,
                   metadata=metadata, origin=origin)


@st.composite
def edits(draw: st.DrawFn, max_steps: int = 12) -> list[tuple[str, Any]]:
    """Steps: ("append", [messages]), ("snip", (position, parts)), ("compact", (position, summary)),
    ("copy", position), ("cut", position), ("fresh", None): the next state is a brand-new equal list."""
    serial = iter(range(10**9))
    steps: list[tuple[str, Any]] = []
    for _ in range(draw(st.integers(1, max_steps))):
        kind = draw(st.sampled_from(["append", "append", "append", "snip", "compact", "copy", "cut", "fresh"]))
        if kind == "append":
            steps.append((kind, draw(st.lists(messages(serial), min_size=1, max_size=6))))
        elif kind == "snip":
            steps.append((kind, (draw(st.integers(0, 10**6)), tuple(draw(st.lists(parts, max_size=2))))))
        elif kind == "compact":
            summary = Message(role="user", parts=(SummaryPart(draw(texts), covers=("x",)),), id=f"m{next(serial)}",
                              created_at=0.0, origin="summary")
            steps.append((kind, (draw(st.integers(0, 10**6)), summary)))
        else:
            steps.append((kind, draw(st.integers(0, 10**6))))
    return steps


def every_kind_of_edit() -> list[tuple[str, Any]]:
    """One fixed sequence with each kind of step of `edits()` (and a tool call answered, one left open,
    thinking, a snipped and a memory message), for an example a test always runs."""
    def use(i: str) -> ToolUsePart:
        return ToolUsePart(i, "bash", {"command": "ls"})

    def msg(n: int, role: str, *parts: Part, origin: str | None = None) -> Message:
        return Message(role=role, parts=parts, id=f"e{n}", created_at=0.0, origin=origin)

    summary = msg(9, "user", SummaryPart("what happened", covers=("x",)), origin="summary")
    return [
        ("append", [msg(1, "user", TextPart("fix it")), msg(2, "assistant", ThinkingPart("hm", "sig"), use("t1")),
                    msg(3, "user", ToolResultPart("t1", "a.py")), msg(4, "assistant", use("t2"))]),
        ("snip", (2, (ToolResultPart("t1", "[snipped]"),))),
        ("append", [msg(5, "user", ToolResultPart("t2", "b.py")), msg(6, "user", TextPart("recalled"), origin="memory"),
                    msg(7, "assistant", TextPart("done"), use("t3"))]),
        ("copy", 1),
        ("compact", (3, summary)),
        ("fresh", None),
        ("cut", 3),
        ("append", [msg(8, "user", TextPart("again"))]),
    ]


def replay(steps: list[tuple[str, Any]]) -> Iterator[list[Message]]:
    """The history after each step (positions are taken modulo the history's length)."""
    history: list[Message] = []
    for kind, arg in steps:
        n = len(history)
        if kind == "append":
            history = history + list(arg)
        elif kind == "snip" and n:
            position, new_parts = arg
            old = history[position % n]
            history[position % n] = dataclasses.replace(old, parts=new_parts, metadata={**old.metadata, "snipped": True})
        elif kind == "compact" and n:
            position, summary = arg
            history = [summary, *history[position % (n + 1):]]
        elif kind == "copy" and n:
            history[arg % n] = dataclasses.replace(history[arg % n])
        elif kind == "cut":
            history = history[: arg % (n + 1)]
        elif kind == "fresh":
            history = [dataclasses.replace(m) for m in history]
        yield list(history)


def as_views(states: Iterator[list[Message]], base: Sequence[Message] = ()) -> Iterator[MessageBlocks]:
    """Each history (after `base`) as the compiler hands it out: `MessageBlocks` whose full blocks are
    the very tuples of the previous view as far as the history did not change."""
    previous: list[Message] = []
    blocks: list[tuple[Message, ...]] = []
    for state in states:
        history = [*base, *state]
        del blocks[common_prefix(previous, history) // BLOCK_SIZE :]
        while (len(blocks) + 1) * BLOCK_SIZE <= len(history):
            start = len(blocks) * BLOCK_SIZE
            blocks.append(tuple(history[start : start + BLOCK_SIZE]))
        previous = history
        yield MessageBlocks(tuple(blocks), tuple(history[len(blocks) * BLOCK_SIZE :]))


def long_base(n: int) -> list[Message]:
    """`n` plain messages (requests, tool calls and their results) to put before a drawn history."""
    out: list[Message] = []
    for i in range(n // 3):
        use = ToolUsePart(f"b{i}", "bash", {"command": f"ls {i}"})
        out += [Message.user(f"request {i}", id=f"bu{i}", created_at=0.0),
                Message(role="assistant", parts=(use,), id=f"ba{i}", created_at=0.0),
                Message(role="user", parts=(ToolResultPart(use.id, f"file_{i}.py"),), id=f"br{i}", created_at=0.0)]
    return out
