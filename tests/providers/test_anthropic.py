"""AnthropicProvider against recorded SSE streams and error bodies through httpx2.MockTransport."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import httpx2
import pytest

from nova.errors import ContextOverflow, Overloaded, ProviderUnavailable, RateLimited
from nova.messages import Message, TextPart, ThinkingPart, ToolResultPart, ToolUsePart
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
from nova.providers.anthropic import AnthropicProvider
from nova.providers.base import collect
from nova.testing import RealModelRequestError

Sse = Callable[[str], httpx2.Response]


def _provider(recorder: Any) -> AnthropicProvider:
    return AnthropicProvider(api_key="test-key", http_client=recorder.client(), max_retries=0)


def _request(**kw: Any) -> ModelRequest:
    return ModelRequest(model="claude-haiku-4-5", messages=[Message.user("Summarize the README")], **kw)


def test_streams_text_and_usage(recorder: Any, sse: Sse) -> None:
    rec = recorder(sse("anthropic_text.sse"))
    events = list(_provider(rec).stream(_request()))
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Hello", "! How can", " I help today?"]
    done = events[-1]
    assert isinstance(done, ResponseDone)
    response = done.response
    assert response.message.text == "Hello! How can I help today?"
    assert response.stop_reason == "end_turn"
    assert response.model == "claude-haiku-4-5-20251001"
    assert response.usage.input_tokens == 25 and response.usage.output_tokens == 15
    assert response.message.metadata["response_id"] == "msg_013Zva2CMHLNnXjNJJKqJ2EF"
    assert rec.requests[0].url.path == "/v1/messages"


def test_thinking_signature_and_tool_calls_across_deltas(recorder: Any, sse: Sse) -> None:
    rec = recorder(sse("anthropic_thinking_tools.sse"))
    events = list(_provider(rec).stream(_request()))
    thinking = "".join(e.text for e in events if isinstance(e, ThinkingDelta))
    assert thinking == "The user wants the README summarized. I should read it and look for TODOs."
    calls = [e for e in events if isinstance(e, ToolCallDelta)]
    # The first delta of each call carries id and name; later ones only arguments.
    assert (calls[0].index, calls[0].id, calls[0].name) == (0, "toolu_01T1x1fJ34qAmk2tNTrN7Up6", "read_file")
    assert all(c.id == "" for c in calls[1:] if c.index == 0)
    assert {c.index for c in calls} == {0, 1}

    response = events[-1].response  # type: ignore[union-attr]
    parts = response.message.parts
    assert isinstance(parts[0], ThinkingPart) and parts[0].provider == "anthropic"
    assert parts[0].signature == "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds2Lr+cZt2ig9pA=="
    assert parts[1] == TextPart("Let me read the README and search for TODOs.")
    assert parts[2] == ToolUsePart(
        "toolu_01T1x1fJ34qAmk2tNTrN7Up6", "read_file", {"path": "README.md", "limit": 200}
    )
    assert parts[3] == ToolUsePart("toolu_01A09q90qw90lq917835lq9", "grep", {"pattern": "TODO"})
    assert response.stop_reason == "tool_use"


def test_usage_reports_cache_reads_and_writes_separately(recorder: Any, sse: Sse) -> None:
    response = collect(_provider(recorder(sse("anthropic_thinking_tools.sse"))), _request())
    usage = response.usage
    assert (usage.input_tokens, usage.cache_read_tokens, usage.cache_write_tokens) == (472, 8800, 1200)
    assert usage.output_tokens == 89
    assert usage.context_tokens == 472 + 8800 + 1200


def test_redacted_thinking_and_max_tokens(recorder: Any, sse: Sse) -> None:
    response = collect(_provider(recorder(sse("anthropic_redacted_max_tokens.sse"))), _request())
    thinking = response.message.parts[0]
    assert isinstance(thinking, ThinkingPart) and thinking.redacted
    assert thinking.signature.startswith("EmwKAhgBEgy3va3pzix")
    assert response.stop_reason == "max_tokens"


def test_thinking_goes_back_byte_identical_and_cache_breakpoints(recorder: Any, sse: Sse) -> None:
    rec = recorder(sse("anthropic_thinking_tools.sse"), sse("anthropic_text.sse"))
    provider = _provider(rec)
    first = collect(provider, _request())
    schema = {"type": "object", "properties": {"path": {"type": "string"}}}
    tools = [
        ToolSpec("grep", "Search files", {"type": "object"}),
        ToolSpec("read_file", "Read a file", schema),
    ]
    results = Message(
        role="user",
        parts=(
            ToolResultPart("toolu_01T1x1fJ34qAmk2tNTrN7Up6", "# Nova\nTODO: docs"),
            ToolResultPart("toolu_01A09q90qw90lq917835lq9", "README.md:2: TODO: docs", is_error=False),
        ),
    )
    request = ModelRequest(
        model="claude-haiku-4-5",
        system="You are Nova.",
        messages=[Message.user("Summarize the README"), first.message, results],
        tools=tools,
        cache=CacheHints(system=True, last_tool=True, last_user_message=True, ttl="1h"),
    )
    collect(provider, request)
    body = rec.body()
    marker = {"type": "ephemeral", "ttl": "1h"}
    assert body["system"] == [{"type": "text", "text": "You are Nova.", "cache_control": marker}]
    assert body["tools"][-1]["cache_control"] == marker
    assert "cache_control" not in body["tools"][0]
    assert "cache_control" not in schema and "cache_control" not in tools[-1].input_schema  # CCH-2
    assistant = body["messages"][1]["content"]
    assert assistant[0] == {
        "type": "thinking",
        "thinking": "The user wants the README summarized. I should read it and look for TODOs.",
        "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds2Lr+cZt2ig9pA==",
    }
    last_user = body["messages"][-1]["content"]
    assert last_user[-1]["cache_control"] == marker
    assert "cache_control" not in last_user[0]
    assert body["messages"][0]["content"][-1].get("cache_control") is None


def test_error_event_inside_stream_is_overloaded(recorder: Any, sse: Sse) -> None:
    with pytest.raises(Overloaded):
        collect(_provider(recorder(sse("anthropic_error_overloaded.sse"))), _request())


def test_truncated_stream_is_unavailable(recorder: Any, sse: Sse) -> None:
    with pytest.raises(ProviderUnavailable, match="message_stop"):
        collect(_provider(recorder(sse("anthropic_truncated.sse"))), _request())


def test_http_errors_are_translated(recorder: Any, http_error: Callable[[str], httpx2.Response]) -> None:
    with pytest.raises(ContextOverflow) as overflow:
        collect(_provider(recorder(http_error("anthropic_prompt_too_long"))), _request())
    assert (overflow.value.tokens, overflow.value.limit) == (212345, 200000)
    assert overflow.value.provider == "anthropic" and overflow.value.status == 400
    with pytest.raises(RateLimited) as limited:
        collect(_provider(recorder(http_error("anthropic_rate_limit"))), _request())
    assert limited.value.retry_after == 17.0
    with pytest.raises(Overloaded):
        collect(_provider(recorder(http_error("anthropic_overloaded"))), _request())


def test_connection_failure_is_unavailable() -> None:
    def refuse(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ConnectError("connection refused", request=request)

    client = httpx2.Client(transport=httpx2.MockTransport(refuse))
    provider = AnthropicProvider(api_key="k", http_client=client, max_retries=0)
    with pytest.raises(ProviderUnavailable):
        collect(provider, _request())


def test_guard_refuses_real_requests() -> None:
    provider = AnthropicProvider(api_key="k")
    with pytest.raises(RealModelRequestError):
        next(iter(provider.stream(_request())))


def test_missing_sdk_names_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "anthropic", None)
    with pytest.raises(MissingDependency, match=r"pip install 'nova-context-engine\[anthropic\]'"):
        AnthropicProvider(api_key="k")
