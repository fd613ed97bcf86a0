"""Thinking carries the provider that signed it and goes back only to that provider.

Each case runs the real adapters over recorded streams (httpx2.MockTransport): one provider answers with
signed thinking, and the next request goes to another provider, live (history still in memory) or
after `nova resume ID --provider …` (history read back from the session record).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2

from nova.messages import Message, TextPart, ThinkingPart, ToolResultPart
from nova.model import ModelRequest, ModelResponse
from nova.providers.anthropic import AnthropicProvider
from nova.providers.base import collect
from nova.providers.formats import input_to_responses, request_to_anthropic
from nova.providers.formats.openai_responses import reasoning_signature
from nova.providers.openai import OpenAIChatProvider, OpenAIResponsesProvider
from nova.sessions.export import resume
from nova.sessions.session import Session

Sse = Callable[[str], httpx2.Response]


def _answered(response: ModelResponse) -> list[Message]:
    """The prompt, the model's turn and a result for each of its calls: a history mid tool loop."""
    results = tuple(ToolResultPart(u.id, f"result of {u.name}") for u in response.message.tool_uses())
    return [Message.user("Summarize the README"), response.message, Message(role="user", parts=results)]


def _anthropic_turn(recorder: Any, sse: Sse) -> list[Message]:
    rec = recorder(sse("anthropic_thinking_tools.sse"))
    provider = AnthropicProvider(api_key="test-key", http_client=rec.client(), max_retries=0)
    response = collect(provider, ModelRequest(model="claude-haiku-4-5", messages=[Message.user("Summarize the README")]))
    thinking = [p for p in response.message.parts if isinstance(p, ThinkingPart)]
    assert thinking and all(p.provider == "anthropic" and p.signature for p in thinking)
    return _answered(response)


def _responses_turn(recorder: Any, sse: Sse) -> list[Message]:
    rec = recorder(sse("responses_reasoning_tool.sse"))
    provider = OpenAIResponsesProvider(api_key="test-key", http_client=rec.client(), max_retries=0)
    response = collect(provider, ModelRequest(model="gpt-5", messages=[Message.user("Run the tests")]))
    thinking = [p for p in response.message.parts if isinstance(p, ThinkingPart)]
    assert thinking and all(p.provider == "openai-responses" for p in thinking)
    return _answered(response)


def _assert_chat_body_valid(body: dict[str, Any]) -> None:
    """Every assistant tool call is answered by tool messages right after it; nothing signed is sent."""
    messages = body["messages"]
    for i, m in enumerate(messages):
        if m["role"] == "assistant" and m.get("tool_calls"):
            ids = [c["id"] for c in m["tool_calls"]]
            answers = [x["tool_call_id"] for x in messages[i + 1 : i + 1 + len(ids)] if x["role"] == "tool"]
            assert answers == ids
    assert "signature" not in json.dumps(body) and "reasoning" not in json.dumps(messages)


def _assert_responses_body_valid(body: dict[str, Any], *, own_reasoning: int = 0) -> None:
    items = body["input"]
    calls = [i["call_id"] for i in items if i.get("type") == "function_call"]
    outputs = [i["call_id"] for i in items if i.get("type") == "function_call_output"]
    assert calls == outputs
    assert sum(1 for i in items if i.get("type") == "reasoning") == own_reasoning
    assert "EqQB" not in json.dumps(body)  # the Anthropic signature in the recorded stream starts so


def test_anthropic_thinking_does_not_go_to_openai_live(recorder: Any, sse: Sse) -> None:
    history = [*_anthropic_turn(recorder, sse)]
    chat = recorder(sse("openai_chat_text.sse"))
    collect(OpenAIChatProvider(api_key="k", http_client=chat.client(), max_retries=0),
            ModelRequest(model="gpt-4o", messages=history))
    _assert_chat_body_valid(chat.body())
    responses = recorder(sse("responses_reasoning_tool.sse"))
    collect(OpenAIResponsesProvider(api_key="k", http_client=responses.client(), max_retries=0),
            ModelRequest(model="gpt-5", messages=history))
    _assert_responses_body_valid(responses.body())


def test_openai_reasoning_does_not_go_to_anthropic_live(recorder: Any, sse: Sse) -> None:
    history = _responses_turn(recorder, sse)
    rec = recorder(sse("anthropic_text.sse"))
    collect(AnthropicProvider(api_key="k", http_client=rec.client(), max_retries=0),
            ModelRequest(model="claude-haiku-4-5", messages=history))
    assistant = rec.body()["messages"][1]
    assert [b["type"] for b in assistant["content"]] == ["text", "tool_use"]
    assert "encrypted_content" not in json.dumps(rec.body())


def test_each_provider_gets_back_exactly_its_own_thinking(recorder: Any, sse: Sse) -> None:
    """A history that went anthropic -> openai-responses -> anthropic: each sees only its own blocks."""
    anthropic_history = _anthropic_turn(recorder, sse)
    responses_history = _responses_turn(recorder, sse)
    history = [*anthropic_history, Message.assistant("noted"), *responses_history[1:]]
    wire = request_to_anthropic(ModelRequest(model="claude-haiku-4-5", messages=history))
    thinking = [b for m in wire["messages"] for b in m["content"] if b["type"] in ("thinking", "redacted_thinking")]
    assert [b["signature"][:4] for b in thinking] == ["EqQB"]
    rec = recorder(sse("responses_reasoning_tool.sse"))
    collect(OpenAIResponsesProvider(api_key="k", http_client=rec.client(), max_retries=0),
            ModelRequest(model="gpt-5", messages=history))
    _assert_responses_body_valid(rec.body(), own_reasoning=1)
    # The provider decides, not the look of the signature: a JSON one is not a reasoning item unless
    # OpenAI made it, and an unsigned part goes nowhere.
    lookalike = ThinkingPart("", signature=reasoning_signature("rs_1", "x"), provider="anthropic")
    unsigned = ThinkingPart("reasoning_content from a local server")
    turn = [Message.user("hi"), Message(role="assistant", parts=(lookalike, unsigned, TextPart("ok")))]
    assert input_to_responses(turn)[1:] == [{"type": "message", "role": "assistant", "content": "ok"}]
    assert request_to_anthropic(ModelRequest(model="m", messages=[*turn[:1], turn[1].with_parts(
        [unsigned, TextPart("ok")])]))["messages"][1]["content"] == [{"type": "text", "text": "ok"}]


def test_resume_on_another_provider_sends_a_valid_request(tmp_path: Path, recorder: Any, sse: Sse) -> None:
    """`nova resume ID --provider openai` after an Anthropic tool loop: the history read back is sent as
    a well-formed Chat Completions (and Responses) request."""
    history = _anthropic_turn(recorder, sse)
    session = Session.create(tmp_path, title="t", provider="anthropic", model="claude-haiku-4-5")
    for message in history:
        session.record_message(message)
    session.close()

    resumed = resume(session.id, home=tmp_path)
    try:
        assert [m.id for m in resumed.history] == [m.id for m in history]
        request = ModelRequest(model="gpt-4o", messages=[*resumed.history, Message.user("go on")])
        chat = recorder(sse("openai_chat_text.sse"))
        collect(OpenAIChatProvider(api_key="k", http_client=chat.client(), max_retries=0), request)
        body = chat.body()
        _assert_chat_body_valid(body)
        assert [m["role"] for m in body["messages"]] == ["user", "assistant", "tool", "tool", "user"]
        responses = recorder(sse("responses_reasoning_tool.sse"))
        collect(OpenAIResponsesProvider(api_key="k", http_client=responses.client(), max_retries=0), request)
        _assert_responses_body_valid(responses.body())
    finally:
        resumed.session.close()
