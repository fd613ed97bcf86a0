"""Converters between nova messages and the three provider shapes: examples and round-trip properties.

Round trips are exact except for what a shape cannot carry, and the `expected_*` helpers say exactly
what that is: summaries read back as text (all shapes); Chat Completions drops thinking, joins an
assistant's text and loses `is_error`; Responses joins adjacent assistant text and loses `is_error`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nova.messages import (
    ImagePart,
    Message,
    Part,
    SummaryPart,
    TextPart,
    ThinkingPart,
    ToolResultPart,
    ToolUsePart,
)
from nova.model import CacheHints, ModelRequest, ToolSpec
from nova.providers.formats import (
    INVALID_ARGUMENTS_KEY,
    dump_arguments,
    input_from_responses,
    input_to_responses,
    messages_from_anthropic,
    messages_from_chat,
    messages_to_anthropic,
    messages_to_chat,
    parse_arguments,
    request_to_anthropic,
    request_to_chat,
    request_to_responses,
)
from nova.providers.formats.openai_responses import reasoning_signature

# -- generated histories ------------------------------------------------------------------------------
_text = st.text(min_size=1, max_size=40)
_key = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=8).filter(
    lambda k: not k.startswith("__")
)
_scalar = st.none() | st.booleans() | st.integers(-(10**9), 10**9) | _text
_json = st.recursive(
    _scalar,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_key, inner, max_size=3),
    max_leaves=6,
)
_arguments = st.dictionaries(_key, _json, max_size=4)
_image = st.builds(
    ImagePart,
    media_type=st.sampled_from(["image/png", "image/jpeg"]),
    data=st.from_regex(r"[A-Za-z0-9+/]{4,16}=?", fullmatch=True),
) | st.builds(ImagePart, url=st.from_regex(r"https://img\.example\.com/[a-z]{1,8}\.png", fullmatch=True))
_anthropic_thinking = st.builds(ThinkingPart, _text, signature=_text, provider=st.just("anthropic")) | st.builds(
    lambda data: ThinkingPart("", signature=data, redacted=True, provider="anthropic"), _text
)
_responses_thinking = st.builds(
    lambda text, n, enc: ThinkingPart(
        text, signature=reasoning_signature(f"rs_{n:04d}", enc), provider="openai-responses"
    ),
    st.text(max_size=30),
    st.integers(0, 9999),
    st.none() | _text,
)


@st.composite
def histories(draw: st.DrawFn, thinking: st.SearchStrategy[ThinkingPart]) -> list[Message]:
    """Valid alternating histories: every tool call is answered, results first in the next user turn."""
    messages: list[Message] = []
    pending: list[str] = []
    counter = 0
    for _turn in range(draw(st.integers(1, 4))):
        user_parts: list[Part] = [
            ToolResultPart(call_id, draw(st.text(max_size=30)), is_error=draw(st.booleans()))
            for call_id in pending
        ]
        extra = draw(st.lists(_text.map(TextPart) | _text.map(SummaryPart) | _image, max_size=3))
        if not user_parts and not extra:
            extra = [TextPart(draw(_text))]
        messages.append(Message(role="user", parts=(*user_parts, *extra)))
        assistant: list[Part] = list(draw(st.lists(thinking, max_size=1)))
        assistant += [TextPart(t) for t in draw(st.lists(_text, max_size=2))]
        pending = []
        for _ in range(draw(st.integers(0, 2))):
            counter += 1
            call_id = f"call_{counter}"
            pending.append(call_id)
            assistant.append(ToolUsePart(call_id, draw(_key), draw(_arguments)))
        if not any(isinstance(p, TextPart | ToolUsePart) for p in assistant):
            assistant.append(TextPart(draw(_text)))
        messages.append(Message(role="assistant", parts=tuple(assistant)))
    return messages


def _shape(messages: Sequence[Message]) -> list[tuple[str, tuple[Part, ...]]]:
    return [(m.role, tuple(m.parts)) for m in messages]


def _summaries_as_text(parts: Sequence[Part]) -> list[Part]:
    return [TextPart(p.text) if isinstance(p, SummaryPart) else p for p in parts]


def _no_error_flag(parts: Sequence[Part]) -> list[Part]:
    return [ToolResultPart(p.tool_use_id, p.content) if isinstance(p, ToolResultPart) else p for p in parts]


def _join_text(parts: Sequence[Part]) -> list[Part]:
    out: list[Part] = []
    for p in parts:
        if isinstance(p, TextPart) and out and isinstance(out[-1], TextPart):
            out[-1] = TextPart(out[-1].text + p.text)
        else:
            out.append(p)
    return out


def _expected(
    messages: Sequence[Message], transform: Callable[[Message], list[Part]]
) -> list[tuple[str, tuple[Part, ...]]]:
    return [(m.role, tuple(transform(m))) for m in messages]


def expected_anthropic(m: Message) -> list[Part]:
    return _summaries_as_text(m.parts)


def expected_chat(m: Message) -> list[Part]:
    parts = _no_error_flag(_summaries_as_text(m.parts))
    if m.role == "assistant":
        text = "".join(p.text for p in parts if isinstance(p, TextPart))
        joined: list[Part] = [TextPart(text)] if text else []
        return joined + [p for p in parts if isinstance(p, ToolUsePart)]
    return parts


def expected_responses(m: Message) -> list[Part]:
    parts = _no_error_flag(_summaries_as_text(m.parts))
    return _join_text(parts) if m.role == "assistant" else parts


# -- round-trip properties ----------------------------------------------------------------------------
# The Anthropic and Chat Completions round trips draw the same histories (thinking as Anthropic signs it).
ANTHROPIC_HISTORIES = dict(history=histories(_anthropic_thinking))


def check_anthropic_round_trip(history: list[Message]) -> None:
    wire = messages_to_anthropic(history)
    json.dumps(wire)  # the shape is plain JSON
    assert _shape(messages_from_anthropic(wire)) == _expected(history, expected_anthropic)


@settings(max_examples=30, deadline=None)
@given(**ANTHROPIC_HISTORIES)
def test_anthropic_round_trip(**drawn: Any) -> None:
    check_anthropic_round_trip(**drawn)


@pytest.mark.slow  # the same property over 150 examples
@settings(max_examples=150, deadline=None)
@given(**ANTHROPIC_HISTORIES)
def test_anthropic_round_trip_over_many_histories(**drawn: Any) -> None:
    check_anthropic_round_trip(**drawn)


def check_chat_round_trip(history: list[Message]) -> None:
    wire = messages_to_chat(history)
    json.dumps(wire)
    assert _shape(messages_from_chat(wire)) == _expected(history, expected_chat)
    # Every tool message directly follows the assistant message that called it, or another tool message.
    for i, item in enumerate(wire):
        if item["role"] == "tool":
            assert wire[i - 1]["role"] == "tool" or "tool_calls" in wire[i - 1]


@settings(max_examples=30, deadline=None)
@given(**ANTHROPIC_HISTORIES)
def test_chat_round_trip(**drawn: Any) -> None:
    check_chat_round_trip(**drawn)


@pytest.mark.slow  # the same property over 150 examples
@settings(max_examples=150, deadline=None)
@given(**ANTHROPIC_HISTORIES)
def test_chat_round_trip_over_many_histories(**drawn: Any) -> None:
    check_chat_round_trip(**drawn)


RESPONSES_HISTORIES = dict(history=histories(_responses_thinking))


def check_responses_round_trip(history: list[Message]) -> None:
    wire = input_to_responses(history)
    json.dumps(wire)
    assert _shape(input_from_responses(wire)) == _expected(history, expected_responses)


@settings(max_examples=30, deadline=None)
@given(**RESPONSES_HISTORIES)
def test_responses_round_trip(**drawn: Any) -> None:
    check_responses_round_trip(**drawn)


@pytest.mark.slow  # the same property over 150 examples
@settings(max_examples=150, deadline=None)
@given(**RESPONSES_HISTORIES)
def test_responses_round_trip_over_many_histories(**drawn: Any) -> None:
    check_responses_round_trip(**drawn)


@settings(max_examples=100, deadline=None)
@given(histories(_anthropic_thinking))
def test_serialization_is_deterministic(history: list[Message]) -> None:
    request = ModelRequest(
        model="m", messages=history, system="s", cache=CacheHints(system=True, last_user_message=True)
    )
    for build in (request_to_anthropic, request_to_chat, request_to_responses):
        assert json.dumps(build(request)) == json.dumps(build(request))


@given(_arguments)
def test_arguments_round_trip_with_sorted_keys(arguments: dict[str, Any]) -> None:
    text = dump_arguments(arguments)
    assert parse_arguments(text) == arguments
    assert text == json.dumps(arguments, sort_keys=True, ensure_ascii=False)


# -- examples ----------------------------------------------------------------------------------------
def test_parse_arguments_never_raises() -> None:
    assert parse_arguments('{"a": 1}') == {"a": 1}
    assert parse_arguments("") == {}
    assert parse_arguments(None) == {}
    for bad in ('{"a": 1', "[1, 2]", "null", "not json", "{" * 5000):
        assert parse_arguments(bad) == {INVALID_ARGUMENTS_KEY: bad}


def test_anthropic_blocks() -> None:
    history = [
        Message(
            role="user",
            parts=(
                TextPart("see"),
                ImagePart(media_type="image/png", data="AAAA"),
                ImagePart(url="https://x/y.png"),
            ),
        ),
        Message(
            role="assistant",
            parts=(
                ThinkingPart("hmm", signature="sig==", provider="anthropic"),
                ThinkingPart("", signature="opaque", redacted=True, provider="anthropic"),
                TextPart(""),  # empty text blocks are rejected by the API, so they are left out
                ToolUsePart("toolu_1", "grep", {"pattern": "x"}),
            ),
        ),
        Message(
            role="user",
            parts=(TextPart("and"), ToolResultPart("toolu_1", "boom", is_error=True), SummaryPart("older")),
        ),
    ]
    wire = messages_to_anthropic(history)
    assert wire[0]["content"][1] == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"},
    }
    assert wire[0]["content"][2] == {"type": "image", "source": {"type": "url", "url": "https://x/y.png"}}
    assert wire[1]["content"] == [
        {"type": "thinking", "thinking": "hmm", "signature": "sig=="},
        {"type": "redacted_thinking", "data": "opaque"},
        {"type": "tool_use", "id": "toolu_1", "name": "grep", "input": {"pattern": "x"}},
    ]
    # tool_result blocks come first in a user turn; a summary is a text block
    assert wire[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "boom", "is_error": True},
        {"type": "text", "text": "and"},
        {"type": "text", "text": "older"},
    ]


def test_anthropic_cache_breakpoints_never_touch_inputs() -> None:
    schema: dict[str, Any] = {"type": "object", "properties": {}}
    tools = [ToolSpec("a", "first", {"type": "object"}), ToolSpec("b", "second", schema)]
    request = ModelRequest(
        model="claude-haiku-4-5",
        system="stable system",
        messages=[Message.user("one"), Message.assistant("two"), Message.user("three")],
        tools=tools,
        cache=CacheHints(system=True, last_tool=True, last_user_message=True),
    )
    params = request_to_anthropic(request)
    marker = {"type": "ephemeral"}
    assert params["system"] == [{"type": "text", "text": "stable system", "cache_control": marker}]
    assert params["tools"][1] == {
        "name": "b",
        "description": "second",
        "input_schema": schema,
        "cache_control": marker,
    }
    assert params["tools"][1]["input_schema"] is not schema
    assert "cache_control" not in params["tools"][0]
    assert params["messages"][2]["content"] == [{"type": "text", "text": "three", "cache_control": marker}]
    assert "cache_control" not in params["messages"][0]["content"][0]
    assert schema == {"type": "object", "properties": {}} and tools[1].input_schema is schema
    plain = request_to_anthropic(
        ModelRequest(model="m", messages=[Message.user("x")], system="s", tools=tools)
    )
    assert "cache_control" not in json.dumps(plain)


def test_anthropic_hoists_system_messages() -> None:
    request = ModelRequest(model="m", system="base", messages=[Message.system("rules"), Message.user("hi")])
    params = request_to_anthropic(request)
    assert params["system"][0]["text"] == "base\n\nrules"
    assert [m["role"] for m in params["messages"]] == ["user"]


def test_chat_splits_tool_results_and_merges_them_back() -> None:
    history = [
        Message.user("go"),
        Message(role="assistant", parts=(ToolUsePart("c1", "a", {}), ToolUsePart("c2", "b", {"x": [1, 2]}))),
        Message(
            role="user", parts=(ToolResultPart("c1", "r1"), ToolResultPart("c2", "r2"), TextPart("next?"))
        ),
    ]
    wire = messages_to_chat(history, system="sys")
    assert [w["role"] for w in wire] == ["system", "user", "assistant", "tool", "tool", "user"]
    assert wire[2]["content"] is None
    back = messages_from_chat(wire)
    assert back[0].role == "system" and back[0].text == "sys"
    assert _shape(back[1:]) == _shape(history)


def test_chat_reads_reasoning_content_from_compatible_servers() -> None:
    (message,) = messages_from_chat([{"role": "assistant", "content": "ok", "reasoning_content": "think"}])
    assert message.parts == (ThinkingPart("think"), TextPart("ok"))


def test_responses_drops_foreign_thinking_and_uses_developer_role() -> None:
    history = [
        Message.system("rules"),
        Message.user("hi"),
        Message(
            role="assistant",
            parts=(ThinkingPart("anthropic thought", signature="EqQB...", provider="anthropic"), TextPart("hello")),
        ),
    ]
    items = input_to_responses(history)
    assert items[0] == {"type": "message", "role": "developer", "content": "rules"}
    assert items[1] == {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}
    assert items[2] == {"type": "message", "role": "assistant", "content": "hello"}
    assert len(items) == 3


def test_responses_tools_are_not_strict_and_openai_cache_key() -> None:
    request = ModelRequest(
        model="gpt-4.1",
        messages=[Message.user("x")],
        tools=[ToolSpec("t", "d", {"type": "object"})],
        cache=CacheHints(cache_key="nova:abc"),
    )
    params = request_to_responses(request)
    assert params["tools"] == [
        {
            "type": "function",
            "name": "t",
            "description": "d",
            "parameters": {"type": "object"},
            "strict": False,
        }
    ]
    assert params["prompt_cache_key"] == "nova:abc"
    assert "include" not in params  # not a reasoning model
    assert request_to_chat(request)["prompt_cache_key"] == "nova:abc"
    assert "prompt_cache_key" not in request_to_chat(request, compatible=True)
