"""Anthropic context editing as a request option of the adapter: the `clear_tool_uses` edit in the SDK's own
shape, on the beta Messages API with its beta header, against a recorded stream through httpx2.MockTransport."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, get_args, get_type_hints

import httpx2
import pytest

from nova.messages import Message
from nova.model import ModelRequest, ResponseDone
from nova.providers.anthropic import CONTEXT_MANAGEMENT_BETA, AnthropicProvider, ClearToolUses

Sse = Callable[[str], httpx2.Response]
anthropic = pytest.importorskip("anthropic")
sdk_types = pytest.importorskip("anthropic.types.beta")


def _request() -> ModelRequest:
    return ModelRequest(model="claude-haiku-4-5", messages=[Message.user("Summarize the README")])


def test_the_edit_has_the_sdk_types_shape() -> None:
    param = sdk_types.BetaClearToolUses20250919EditParam
    edit = ClearToolUses(keep=5, trigger_tokens=80_000, clear_at_least=10_000, exclude_tools=("web_search",),
                         clear_tool_inputs=True).to_edit()
    assert set(edit) <= set(get_type_hints(param))
    assert get_args(get_type_hints(param)["type"]) == (edit["type"],)
    assert set(edit["keep"]) == set(get_type_hints(sdk_types.BetaToolUsesKeepParam))
    assert get_args(get_type_hints(sdk_types.BetaToolUsesKeepParam)["type"]) == (edit["keep"]["type"],)
    assert get_args(get_type_hints(sdk_types.BetaInputTokensTriggerParam)["type"]) == (edit["trigger"]["type"],)
    assert set(edit["clear_at_least"]) == set(get_type_hints(sdk_types.BetaInputTokensClearAtLeastParam))
    assert CONTEXT_MANAGEMENT_BETA in get_args(get_args(anthropic.types.AnthropicBetaParam)[1])


def test_a_request_with_clear_tool_uses_carries_the_edit_and_the_beta(recorder: Any, sse: Sse) -> None:
    rec = recorder(sse("anthropic_text.sse"))
    provider = AnthropicProvider(api_key="test-key", http_client=rec.client(), max_retries=0,
                                 clear_tool_uses=ClearToolUses(keep=4, trigger_tokens=90_000))
    events = list(provider.stream(_request()))
    done = events[-1]
    assert isinstance(done, ResponseDone) and done.response.message.text == "Hello! How can I help today?"
    sent = rec.requests[0]
    assert CONTEXT_MANAGEMENT_BETA in sent.headers["anthropic-beta"].split(",")
    assert rec.body()["context_management"] == {"edits": [{
        "type": "clear_tool_uses_20250919",
        "trigger": {"type": "input_tokens", "value": 90_000},
        "keep": {"type": "tool_uses", "value": 4},
    }]}
    assert rec.body()["messages"][0]["role"] == "user" and rec.body()["stream"] is True


def test_without_the_option_nothing_of_it_is_sent(recorder: Any, sse: Sse) -> None:
    rec = recorder(sse("anthropic_text.sse"))
    list(AnthropicProvider(api_key="test-key", http_client=rec.client(), max_retries=0).stream(_request()))
    assert "anthropic-beta" not in rec.requests[0].headers
    assert "context_management" not in rec.body()


def test_a_negative_setting_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="keep"):
        ClearToolUses(keep=-1)
