"""The message model: one serializer, frozen parts, round trips for any generated history."""

from __future__ import annotations

import dataclasses
import json
from typing import get_args

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nova.messages import (
    ImagePart,
    Message,
    MessageOrigin,
    SummaryPart,
    TextPart,
    ThinkingPart,
    ToolResultPart,
    ToolUsePart,
    dumps,
    from_dict,
    iter_tool_pairs,
    loads,
    person_entries,
    to_dict,
)

text = st.text(max_size=40)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6) | text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
    max_leaves=8,
)
parts = st.one_of(
    st.builds(TextPart, text),
    st.builds(ToolUsePart, st.text(min_size=1, max_size=8), st.text(min_size=1, max_size=8),
              st.dictionaries(text, json_values, max_size=3)),
    st.builds(ToolResultPart, st.text(min_size=1, max_size=8), text, st.booleans()),
    st.builds(ThinkingPart, text, text, st.booleans()),
    st.builds(ImagePart, st.sampled_from(["image/png", "image/jpeg"]), text, text),
    st.builds(SummaryPart, text, st.lists(st.text(min_size=1, max_size=6), max_size=3).map(tuple)),
)
messages = st.builds(
    Message,
    role=st.sampled_from(["user", "assistant", "system"]),
    parts=st.lists(parts, max_size=5).map(tuple),
    id=st.text(min_size=1, max_size=10),
    created_at=st.floats(0, 2e9, allow_nan=False),
    metadata=st.dictionaries(st.text(max_size=5), json_values, max_size=3),
    origin=st.sampled_from([None, *get_args(MessageOrigin)]),
)


@given(st.lists(messages, max_size=6))
def test_serializer_round_trips_any_history(history: list[Message]) -> None:
    assert loads(dumps(history)) == history
    for message in history:
        data = to_dict(message)
        json.dumps(data)  # JSON-ready
        assert from_dict(data) == message


def test_every_part_is_tagged_by_kind() -> None:
    message = Message(role="assistant", parts=(TextPart("a"), ToolUsePart("t1", "bash", {"command": "ls"})))
    kinds = [p["kind"] for p in to_dict(message)["parts"]]
    assert kinds == ["text", "tool_use"]


def test_parts_and_messages_are_frozen() -> None:
    part = TextPart("a")
    with pytest.raises(dataclasses.FrozenInstanceError):
        part.text = "b"  # type: ignore[misc]
    message = Message.user("hi")
    with pytest.raises(dataclasses.FrozenInstanceError):
        message.role = "assistant"  # type: ignore[misc]


def test_unknown_kind_is_rejected() -> None:
    data = to_dict(Message.user("x"))
    data["parts"][0]["kind"] = "telepathy"
    with pytest.raises(ValueError):
        from_dict(data)


def test_ids_are_unique_and_text_view() -> None:
    a, b = Message.user("one"), Message.user("two")
    assert a.id != b.id
    m = Message(role="assistant", parts=(TextPart("x"), SummaryPart("y"), ThinkingPart("z")))
    assert m.text == "x\n\ny"


def test_iter_tool_pairs_finds_missing_results() -> None:
    call_a, call_b = ToolUsePart("a", "bash", {}), ToolUsePart("b", "bash", {})
    history = [
        Message(role="assistant", parts=(call_a, call_b)),
        Message(role="user", parts=(ToolResultPart("a", "ok"),)),
    ]
    pairs = {u.id: r for u, r in iter_tool_pairs(history)}
    assert pairs["a"] is not None and pairs["a"].content == "ok"
    assert pairs["b"] is None


def test_origin_is_written_only_when_set() -> None:
    assert "origin" not in to_dict(Message.user("typed by a person"))
    summary = Message.user("[summary]", origin="summary")
    assert to_dict(summary)["origin"] == "summary" and from_dict(to_dict(summary)) == summary


def test_messages_written_with_nova_kind_load_with_an_origin() -> None:
    old = {**to_dict(Message.user("recalled: A", id="m1")), "metadata": {"nova_kind": "memory", "memories": ["a"]}}
    loaded = from_dict(old)
    assert loaded.origin == "memory" and loaded.metadata == {"memories": ["a"]}
    assert loads(json.dumps([old])) == [loaded]
    unknown = from_dict({**old, "metadata": {"nova_kind": "telepathy"}})
    assert unknown.origin is None and unknown.metadata == {"nova_kind": "telepathy"}


def test_text_marks_are_written_only_when_set_and_say_whose_words_they_are() -> None:
    assert to_dict(Message.user("hi"))["parts"] == [{"text": "hi", "kind": "text"}]
    mixed = Message(role="user", id="r1", parts=(
        ToolResultPart("t1", "done"),
        TextPart("[Request interrupted by user]", harness=True),
        TextPart("no, keep the old name", entry="u7"),
        TextPart("and run the tests"),
    ))
    data = to_dict(mixed)
    assert data["parts"][1] == {"text": "[Request interrupted by user]", "kind": "text", "harness": True}
    assert data["parts"][2] == {"text": "no, keep the old name", "kind": "text", "entry": "u7"}
    assert from_dict(data) == mixed
    # Beside a tool result, after an interrupt marker: the person's words, each under its own id.
    assert person_entries(mixed) == [("u7", "no, keep the old name"), ("r1", "and run the tests")]
    # A message the harness wrote as a whole hides nothing but its own text.
    caveat = Message(role="user", id="m1", metadata={"is_meta": True},
                     parts=(TextPart("Caveat: local commands."), TextPart("fix it", entry="u2")))
    assert person_entries(caveat) == [("u2", "fix it")]
    assert person_entries(Message.assistant("fix it")) == []
