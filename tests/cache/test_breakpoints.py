"""Breakpoint placement (CCH-1, CCH-2), the Anthropic rules, and a deterministic prefix."""

from __future__ import annotations

import copy
import json

from nova.context.cache import (
    MAX_BREAKPOINTS,
    Breakpoint,
    CachePlanner,
    apply_cache_plan,
    check_breakpoints,
    plan_cache,
    prefix_bytes,
)
from nova.messages import Message, ToolResultPart
from nova.model import CacheHints, ModelRequest, ToolSpec
from nova.providers.formats.anthropic import request_to_anthropic
from nova.providers.formats.openai_chat import request_to_chat
from nova.providers.formats.openai_responses import request_to_responses
from nova.testing import call
from nova.tools import default_registry

ALL = CacheHints(system=True, last_tool=True, last_user_message=True, cache_key="ses-1")
LONG = "Follow the project's rules carefully. " * 400  # ~3,000 tokens: over every model's minimum


def request(*, system: str = LONG, model: str = "claude-sonnet-4-5", cache: CacheHints = ALL,
            messages: list[Message] | None = None) -> ModelRequest:
    tools = default_registry().specs()
    msgs = messages or [Message.user("fix the bug"), Message(role="assistant", parts=(call("bash", command="ls"),)),
                        Message(role="user", parts=(ToolResultPart("x", "a.py b.py"), ))]
    return ModelRequest(model=model, system=system, messages=msgs, tools=tools, cache=cache)


def markers(body: dict) -> list[str]:
    found = []
    if any("cache_control" in b for b in body.get("system", [])):
        found.append("system")
    if body.get("tools") and "cache_control" in body["tools"][-1]:
        found.append("tool")
    for index, m in enumerate(body["messages"]):
        if any("cache_control" in b for b in m["content"]):
            found.append(f"message {index}")
    return found


def test_anthropic_gets_the_three_breakpoints_of_cch1() -> None:
    plan = plan_cache(request())
    assert [b.segment for b in plan.breakpoints] == ["tools", "system", "messages"]
    body = request_to_anthropic(apply_cache_plan(request()))
    assert markers(body) == ["system", "tool", "message 2"]
    # The marker is on the last block of the last user message, not on an earlier one.
    assert "cache_control" in body["messages"][2]["content"][-1]
    assert check_breakpoints(plan.breakpoints) == []


def test_openai_gets_the_session_cache_key_and_no_markers() -> None:
    planned = apply_cache_plan(request(model="gpt-4o"))
    chat = request_to_chat(planned)
    responses = request_to_responses(planned)
    assert chat["prompt_cache_key"] == "ses-1" and responses["prompt_cache_key"] == "ses-1"
    assert "cache_control" not in json.dumps(chat) and "cache_control" not in json.dumps(responses)


def test_no_breakpoint_on_a_prefix_under_the_models_minimum() -> None:
    small = request(system="Be brief.", messages=[Message.user("hi")], model="claude-haiku-4-5")
    plan = plan_cache(small)  # the built-in tools (~1,200 tokens) and all the rest are under Haiku's 4,096
    assert plan.breakpoints == () and len(plan.dropped) == 3
    assert markers(request_to_anthropic(apply_cache_plan(small))) == []
    # The same request for Sonnet 4.5 (minimum 1,024): the tool catalog alone is long enough.
    sonnet = plan_cache(request(system="Be brief.", messages=[Message.user("hi")]))
    assert [b.segment for b in sonnet.breakpoints] == ["tools", "system", "messages"]
    # A long system prompt reaches Haiku's minimum: tools stay unmarked, system and messages get one.
    haiku = plan_cache(request(model="claude-haiku-4-5"))
    assert [b.segment for b in haiku.breakpoints] == ["system", "messages"]
    assert haiku.breakpoints[0].prefix_tokens >= 4096


def _fields(r: ModelRequest) -> dict:
    return {f: getattr(r, f) for f in ("model", "messages", "system", "tools", "cache")}


def test_a_1h_breakpoint_never_follows_a_5m_one() -> None:
    mixed = request(cache=CacheHints(system=True, last_tool=True, last_user_message=True, ttl="1h", head_ttl="5m"))
    plan = plan_cache(mixed)
    assert [b.ttl for b in plan.breakpoints] == ["5m", "5m", "5m"]
    good = request(cache=CacheHints(system=True, last_tool=True, last_user_message=True, ttl="5m", head_ttl="1h"))
    plan = plan_cache(good)
    assert [b.ttl for b in plan.breakpoints] == ["1h", "1h", "5m"]
    body = request_to_anthropic(apply_cache_plan(good))
    assert body["system"][0]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    assert body["tools"][-1]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    assert body["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert check_breakpoints([Breakpoint("system", 2000, "5m"), Breakpoint("messages", 3000, "1h")]) == [
        "a 1h breakpoint on messages follows a 5m one"]


def test_at_most_four_breakpoints() -> None:
    five = [Breakpoint("messages", 2000 + i, "5m") for i in range(MAX_BREAKPOINTS + 1)]
    assert any("at most 4" in p for p in check_breakpoints(five))
    assert len(plan_cache(request()).breakpoints) <= MAX_BREAKPOINTS


def test_registry_tools_are_never_mutated() -> None:
    registry = default_registry()
    specs = registry.specs()
    before = [copy.deepcopy(dict(s.input_schema)) for s in specs]
    req = ModelRequest(model="claude-sonnet-4-5", system=LONG, messages=[Message.user("hi")], tools=specs, cache=ALL)
    body = request_to_anthropic(apply_cache_plan(req))
    assert "cache_control" in body["tools"][-1]
    body["tools"][-1]["input_schema"]["properties"] = {}  # even changing the rendered copy
    assert [dict(s.input_schema) for s in registry.specs()] == before
    assert all("cache_control" not in s.input_schema for s in registry.specs())


def test_prefix_serialization_ignores_key_order_and_markers() -> None:
    schema_a = {"type": "object", "properties": {"b": {"type": "string"}, "a": {"type": "integer"}}}
    schema_b = {"properties": {"a": {"type": "integer"}, "b": {"type": "string"}}, "type": "object"}
    use_a = Message(role="assistant", parts=(call("t", id="c1", x=1, y=2),), id="m1")
    use_b = Message(role="assistant", parts=(call("t", id="c1", y=2, x=1),), id="m2")
    a = ModelRequest(model="m", system="s", tools=[ToolSpec("t", "d", schema_a)],
                     messages=[Message.user("go"), use_a, Message.user("ok")])
    b = ModelRequest(model="m", system="s", tools=[ToolSpec("t", "d", schema_b)],
                     messages=[Message.user("go", id="other"), use_b, Message.user("ok")], cache=ALL)
    assert prefix_bytes(a) == prefix_bytes(b)
    # What the SDK would send is byte-identical too (insertion-ordered JSON of the converter's output).
    unmarked = ModelRequest(**{**_fields(b), "cache": CacheHints()})
    assert json.dumps(request_to_anthropic(a)) == json.dumps(request_to_anthropic(unmarked))


def test_nothing_time_or_id_dependent_before_the_last_breakpoint() -> None:
    first = request()
    again = ModelRequest(**{**_fields(first), "messages": [
        Message(role=m.role, parts=m.parts, created_at=0.0, id=f"other-{i}") for i, m in enumerate(first.messages)]})
    assert prefix_bytes(first) == prefix_bytes(again)
    assert json.dumps(request_to_anthropic(first)) == json.dumps(request_to_anthropic(again))


def test_the_first_message_gets_a_fourth_breakpoint_when_the_message_one_is_further_on() -> None:
    hints = CacheHints(system=True, last_tool=True, last_user_message=True, first_message=True, cache_key="ses-1")
    asked = request(cache=hints)
    plan = plan_cache(asked)
    assert [b.segment for b in plan.breakpoints] == ["tools", "system", "opening", "messages"]
    assert plan.breakpoints[1].prefix_tokens < plan.breakpoints[2].prefix_tokens < plan.breakpoints[3].prefix_tokens
    assert check_breakpoints(plan.breakpoints) == []
    body = request_to_anthropic(apply_cache_plan(asked))
    assert markers(body) == ["system", "tool", "message 0", "message 2"]
    # The session planner, which sizes only what is new, places the same four.
    assert CachePlanner().plan(asked) == plan
    # A request whose only user message is the first: the message breakpoint is the opening one.
    alone = request(cache=hints, messages=[Message.user("fix the bug")])
    assert [b.segment for b in plan_cache(alone).breakpoints] == ["tools", "system", "messages"]
    assert markers(request_to_anthropic(apply_cache_plan(alone))) == ["system", "tool", "message 0"]
