"""OpenAI Chat Completions, Responses and compatible servers against recorded SSE streams."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

import httpx2
import pytest

from nova.errors import AuthError, ContextOverflow, ProviderUnavailable, QuotaExceeded, RateLimited
from nova.messages import ImagePart, Message, TextPart, ThinkingPart, ToolResultPart, ToolUsePart
from nova.model import (
    CacheHints,
    ModelRequest,
    ResponseDone,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    ToolSpec,
)
from nova.providers._optional import MissingDependency
from nova.providers.base import collect
from nova.providers.formats import INVALID_ARGUMENTS_KEY
from nova.providers.openai import OpenAIChatProvider, OpenAIResponsesProvider, usage_from_chat
from nova.testing import RealModelRequestError

Sse = Callable[[str], httpx2.Response]


def _chat(recorder: Any, **kw: Any) -> OpenAIChatProvider:
    return OpenAIChatProvider(api_key="test-key", http_client=recorder.client(), max_retries=0, **kw)


def _responses(recorder: Any) -> OpenAIResponsesProvider:
    return OpenAIResponsesProvider(api_key="test-key", http_client=recorder.client(), max_retries=0)


def _request(model: str = "gpt-4o", **kw: Any) -> ModelRequest:
    return ModelRequest(model=model, messages=[Message.user("Find main()")], **kw)


# -- Chat Completions ---------------------------------------------------------------------------------
def test_chat_tool_calls_across_deltas(recorder: Any, sse: Sse) -> None:
    rec = recorder(sse("openai_chat_tools.sse"))
    events = list(_chat(rec).stream(_request()))
    deltas = [e for e in events if isinstance(e, ToolCallDelta)]
    assert (deltas[0].index, deltas[0].id, deltas[0].name) == (
        0,
        "call_DdmO9pD3xa9XTPNJ32zg2hcA",
        "read_file",
    )
    assert "".join(d.arguments for d in deltas if d.index == 0) == '{"path": "src/app.py"}'
    response = events[-1].response  # type: ignore[union-attr]
    assert response.message.tool_uses() == [
        ToolUsePart("call_DdmO9pD3xa9XTPNJ32zg2hcA", "read_file", {"path": "src/app.py"}),
        ToolUsePart("call_7uP1yQ3bWmHnGvKqX2aF9sLe", "grep", {"pattern": "def main"}),
    ]
    assert response.stop_reason == "tool_use"
    assert response.model == "gpt-4o-2024-08-06"


def test_chat_usage_subtracts_cached_tokens(recorder: Any, sse: Sse) -> None:
    usage = collect(_chat(recorder(sse("openai_chat_tools.sse"))), _request()).usage
    assert usage.input_tokens == 2006 - 1920
    assert usage.cache_read_tokens == 1920
    assert usage.cache_write_tokens == 0
    assert usage.output_tokens == 300
    assert usage.context_tokens == 2006  # what the provider actually read


def test_chat_text_with_reasoning_tokens(recorder: Any, sse: Sse) -> None:
    events = list(_chat(recorder(sse("openai_chat_text.sse"))).stream(_request("o4-mini")))
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "The tests pass now."
    response = events[-1].response  # type: ignore[union-attr]
    assert response.stop_reason == "end_turn"
    assert response.usage.reasoning_tokens == 192
    assert "usage_missing" not in response.message.metadata


def test_chat_request_body(recorder: Any, sse: Sse) -> None:
    rec = recorder(sse("openai_chat_text.sse"))
    history = [
        Message.user("Look at this", metadata={}).with_parts(
            [TextPart("Look at this"), ImagePart(media_type="image/png", data="iVBORw0KGgo=")]
        ),
        Message(
            role="assistant",
            parts=(
                ThinkingPart("hidden", signature="sig"),
                TextPart("Reading."),
                ToolUsePart("call_1", "read_file", {"path": "a.py", "limit": 5}),
            ),
        ),
        Message(role="user", parts=(ToolResultPart("call_1", "print('hi')"), TextPart("Go on."))),
    ]
    request = ModelRequest(
        model="gpt-4o",
        system="You are Nova.",
        messages=history,
        tools=[ToolSpec("read_file", "Read a file", {"type": "object"})],
        cache=CacheHints(cache_key="nova:session-1"),
        max_output_tokens=1000,
    )
    collect(_chat(rec), request)
    body = rec.body()
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["prompt_cache_key"] == "nova:session-1"
    assert body["max_completion_tokens"] == 1000
    assert body["tools"] == [
        {
            "type": "function",
            "function": {"name": "read_file", "description": "Read a file", "parameters": {"type": "object"}},
        }
    ]
    messages = body["messages"]
    assert messages[0] == {"role": "system", "content": "You are Nova."}
    assert messages[1]["content"][1] == {
        "type": "image_url",
        "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="},
    }
    assert messages[2] == {
        "role": "assistant",
        "content": "Reading.",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "read_file", "arguments": '{"limit": 5, "path": "a.py"}'},
            }
        ],
    }
    assert messages[3] == {"role": "tool", "tool_call_id": "call_1", "content": "print('hi')"}
    assert messages[4] == {"role": "user", "content": "Go on."}


def test_chat_error_inside_stream(recorder: Any, sse: Sse) -> None:
    with pytest.raises(ProviderUnavailable):
        collect(_chat(recorder(sse("openai_chat_stream_error.sse"))), _request())


@pytest.mark.parametrize(
    ("fixture", "expected"),
    [
        ("openai_context_length_exceeded", ContextOverflow),
        ("openai_tpm_request_too_large", RateLimited),
        ("openai_insufficient_quota", QuotaExceeded),
        ("openai_invalid_api_key", AuthError),
    ],
)
def test_chat_http_errors(
    recorder: Any, http_error: Callable[[str], httpx2.Response], fixture: str, expected: type[Exception]
) -> None:
    with pytest.raises(expected) as info:
        collect(_chat(recorder(http_error(fixture))), _request())
    assert getattr(info.value, "provider", None) == "openai"


def test_chat_overflow_carries_numbers(recorder: Any, http_error: Callable[[str], httpx2.Response]) -> None:
    with pytest.raises(ContextOverflow) as info:
        collect(_chat(recorder(http_error("openai_context_length_exceeded"))), _request())
    assert (info.value.tokens, info.value.limit) == (130532, 128000)


# -- OpenAI-compatible servers ------------------------------------------------------------------------
def test_compatible_server_tolerates_missing_ids_usage_and_bad_json(recorder: Any, sse: Sse) -> None:
    rec = recorder(sse("ollama_malformed_tool.sse"))
    provider = _chat(rec, compatible=True, base_url="http://localhost:11434/v1")
    events = list(provider.stream(_request("qwen3:8b", cache=CacheHints(cache_key="k"))))
    assert (
        "".join(e.text for e in events if isinstance(e, ThinkingDelta)) == "I need to list the files first."
    )
    response = events[-1].response  # type: ignore[union-attr]
    (call,) = response.message.tool_uses()
    assert call.name == "bash"
    assert call.id  # made up, since the server sent none
    assert call.input == {INVALID_ARGUMENTS_KEY: '{"command": "ls -la"'}
    assert response.stop_reason == "tool_use"  # the server said "stop"
    assert response.usage.context_tokens == 0
    assert response.message.metadata["usage_missing"] is True
    body = rec.body()
    assert str(rec.requests[0].url) == "http://localhost:11434/v1/chat/completions"
    assert "prompt_cache_key" not in body and body["max_tokens"] == 8192
    assert provider.name == "compatible"


def test_malformed_arguments_go_back_verbatim(recorder: Any, sse: Sse) -> None:
    rec = recorder(sse("ollama_malformed_tool.sse"), sse("openai_chat_text.sse"))
    provider = _chat(rec, compatible=True, base_url="http://localhost:11434/v1")
    first = collect(provider, _request("qwen3:8b"))
    call = first.message.tool_uses()[0]
    follow_up = [
        Message.user("list files"),
        first.message,
        Message(role="user", parts=(ToolResultPart(call.id, "invalid JSON arguments", is_error=True),)),
    ]
    collect(provider, ModelRequest(model="qwen3:8b", messages=follow_up))
    sent = rec.body()["messages"][1]["tool_calls"][0]["function"]["arguments"]
    assert sent == '{"command": "ls -la"'


# -- Responses API -----------------------------------------------------------------------------------
def test_responses_reasoning_text_and_tool_call(recorder: Any, sse: Sse) -> None:
    rec = recorder(sse("responses_reasoning_tool.sse"))
    events = list(_responses(rec).stream(_request("gpt-5")))
    assert "".join(e.text for e in events if isinstance(e, ThinkingDelta)) == "**Running the tests**"
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Running the test suite."
    done = events[-1]
    assert isinstance(done, ResponseDone)
    parts = done.response.message.parts
    assert isinstance(parts[0], ThinkingPart) and parts[0].thinking == "**Running the tests**"
    assert parts[0].provider == "openai-responses"
    assert "rs_68af4030baa48193b0b43b4c2a176a1a" in parts[0].signature
    assert parts[1] == TextPart("Running the test suite.")
    assert parts[2] == ToolUsePart("call_Xq2pLrT8vM4nB6cD1eF3gH5j", "bash", {"command": "pytest -q"})
    assert done.response.stop_reason == "tool_use"
    usage = done.response.usage
    assert (usage.input_tokens, usage.cache_read_tokens, usage.output_tokens) == (5400 - 4096, 4096, 180)
    assert usage.reasoning_tokens == 128
    body = rec.body()
    assert body["store"] is False and body["include"] == ["reasoning.encrypted_content"]
    assert rec.requests[0].url.path == "/v1/responses"


def test_responses_reasoning_item_goes_back(recorder: Any, sse: Sse) -> None:
    rec = recorder(sse("responses_reasoning_tool.sse"), sse("responses_incomplete.sse"))
    provider = _responses(rec)
    first = collect(provider, _request("gpt-5"))
    results = Message(role="user", parts=(ToolResultPart("call_Xq2pLrT8vM4nB6cD1eF3gH5j", "3 passed"),))
    request = ModelRequest(
        model="gpt-5",
        system="You are Nova.",
        messages=[Message.user("run tests"), first.message, results],
        cache=CacheHints(cache_key="nova:s1"),
    )
    second = collect(provider, request)
    assert second.stop_reason == "max_tokens"
    body = rec.body()
    assert body["instructions"] == "You are Nova."
    assert body["prompt_cache_key"] == "nova:s1"
    items = body["input"]
    assert items[1] == {
        "type": "reasoning",
        "id": "rs_68af4030baa48193b0b43b4c2a176a1a",
        "summary": [{"type": "summary_text", "text": "**Running the tests**"}],
        "encrypted_content": "gAAAAABor0A1xQ2Zb3vXf7yHhM0kLq9R8sT",
    }
    assert items[2] == {"type": "message", "role": "assistant", "content": "Running the test suite."}
    assert items[3] == {
        "type": "function_call",
        "call_id": "call_Xq2pLrT8vM4nB6cD1eF3gH5j",
        "name": "bash",
        "arguments": '{"command": "pytest -q"}',
    }
    assert items[4] == {
        "type": "function_call_output",
        "call_id": "call_Xq2pLrT8vM4nB6cD1eF3gH5j",
        "output": "3 passed",
    }


@pytest.mark.parametrize(
    "fixture",
    [
        "responses_overflow_error_event.sse",
        "responses_overflow_failed.sse",
        "responses_overflow_nested_error.sse",
    ],
)
def test_responses_overflow_inside_200_stream(recorder: Any, sse: Sse, fixture: str) -> None:
    with pytest.raises(ContextOverflow) as info:
        collect(_responses(recorder(sse(fixture))), _request("gpt-5"))
    assert info.value.status is None
    assert "context window" in info.value.message


def test_responses_http_overflow(recorder: Any, http_error: Callable[[str], httpx2.Response]) -> None:
    with pytest.raises(ContextOverflow):
        collect(_responses(recorder(http_error("responses_context_window"))), _request("gpt-5"))


# -- guard, extras, normalization ---------------------------------------------------------------------
@pytest.mark.parametrize("cls", [OpenAIChatProvider, OpenAIResponsesProvider])
def test_guard_refuses_real_requests(cls: type[OpenAIChatProvider]) -> None:
    with pytest.raises(RealModelRequestError):
        next(iter(cls(api_key="k").stream(_request())))


def test_missing_sdk_names_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "openai", None)
    with pytest.raises(MissingDependency, match=r"pip install 'nova-context-engine\[openai\]'"):
        OpenAIChatProvider(api_key="k")


def test_usage_from_chat_tolerates_missing_details() -> None:
    assert usage_from_chat({"prompt_tokens": 10, "completion_tokens": 2}).input_tokens == 10
    assert usage_from_chat({"prompt_tokens": 10, "prompt_tokens_details": None}).cache_read_tokens == 0
    assert usage_from_chat({}).context_tokens == 0


def test_parallel_calls_all_numbered_zero(recorder: Any) -> None:
    # Some local servers number every parallel call 0; a new id under the same index is a new call.
    chunks = [
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": "a",
                                "function": {"name": "glob", "arguments": '{"p": "*.py"}'},
                            }
                        ]
                    },
                }
            ]
        },
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "tool_calls": [
                            {"index": 0, "id": "b", "function": {"name": "grep", "arguments": '{"q": '}}
                        ]
                    },
                }
            ]
        },
        {
            "choices": [
                {"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": '"x"}'}}]}}
            ]
        },
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    ]
    body = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
    response = httpx2.Response(200, content=body.encode(), headers={"content-type": "text/event-stream"})
    provider = _chat(recorder(response), compatible=True, base_url="http://127.0.0.1:8080/v1")
    result = collect(provider, _request("llama"))
    assert result.message.tool_uses() == [
        ToolUsePart("a", "glob", {"p": "*.py"}),
        ToolUsePart("b", "grep", {"q": "x"}),
    ]
