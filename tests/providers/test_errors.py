"""classify_http_error on recorded provider error bodies: status and code first, message text last."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx2
import pytest

from nova.errors import (
    AuthError,
    ContextOverflow,
    InvalidRequest,
    Overloaded,
    ProviderError,
    ProviderUnavailable,
    QuotaExceeded,
    RateLimited,
    RequestTooLarge,
)
from nova.providers.errors import (
    classify_http_error,
    classify_stream_error,
    parse_retry_after,
    translate_sdk_error,
)

CASES: list[tuple[str, type[ProviderError]]] = [
    ("anthropic_prompt_too_long", ContextOverflow),
    ("anthropic_context_limit_with_max_tokens", ContextOverflow),
    ("anthropic_max_tokens_invalid", InvalidRequest),
    ("anthropic_credit_balance", QuotaExceeded),
    ("anthropic_rate_limit", RateLimited),
    ("anthropic_request_too_large", RequestTooLarge),
    ("anthropic_overloaded", Overloaded),
    ("anthropic_authentication", AuthError),
    ("anthropic_permission", AuthError),
    ("openai_context_length_exceeded", ContextOverflow),
    ("responses_context_window", ContextOverflow),
    ("openai_tpm_request_too_large", RateLimited),
    ("openai_rate_limit_retry_after", RateLimited),
    ("openai_insufficient_quota", QuotaExceeded),
    ("openai_invalid_api_key", AuthError),
    ("openai_503_overloaded", Overloaded),
    ("openai_500", ProviderUnavailable),
    ("vllm_max_context", ContextOverflow),
    ("llamacpp_exceed_context", ContextOverflow),
]


@pytest.mark.parametrize(("name", "expected"), CASES, ids=[c[0] for c in CASES])
def test_recorded_bodies_classify(
    name: str, expected: type[ProviderError], recorded_error: Callable[[str], dict[str, Any]]
) -> None:
    data = recorded_error(name)
    error = classify_http_error("test", data["status"], data["body"], data["headers"])
    assert type(error) is expected
    assert error.status == data["status"]
    assert error.provider == "test"
    assert error.message


def test_anthropic_overflow_parses_tokens_and_limit(recorded_error: Callable[[str], dict[str, Any]]) -> None:
    data = recorded_error("anthropic_prompt_too_long")
    error = classify_http_error("anthropic", 400, data["body"], data["headers"])
    assert isinstance(error, ContextOverflow)
    assert (error.tokens, error.limit) == (212345, 200000)
    assert error.code == "invalid_request_error"


def test_overflow_numbers_from_each_provider(recorded_error: Callable[[str], dict[str, Any]]) -> None:
    expected = {
        "anthropic_context_limit_with_max_tokens": (189136 + 20000, 204648),
        "openai_context_length_exceeded": (130532, 128000),
        "vllm_max_context": (5120, 4096),
        "llamacpp_exceed_context": (5000, 4096),
        "responses_context_window": (None, None),
    }
    for name, numbers in expected.items():
        data = recorded_error(name)
        error = classify_http_error("p", data["status"], data["body"], data["headers"])
        assert isinstance(error, ContextOverflow), name
        assert (error.tokens, error.limit) == numbers, name


def test_tpm_request_too_large_is_a_rate_limit_not_an_overflow(
    recorded_error: Callable[[str], dict[str, Any]],
) -> None:
    data = recorded_error("openai_tpm_request_too_large")
    error = classify_http_error("openai", 429, data["body"], data["headers"])
    assert isinstance(error, RateLimited) and not isinstance(error, ContextOverflow)
    assert error.retryable
    # Even without the status (in a stream), the code decides.
    assert isinstance(classify_http_error("openai", None, data["body"]), RateLimited)


def test_insufficient_quota_is_never_retried(recorded_error: Callable[[str], dict[str, Any]]) -> None:
    data = recorded_error("openai_insufficient_quota")
    error = classify_http_error("openai", 429, data["body"], data["headers"])
    assert isinstance(error, QuotaExceeded)
    assert error.retryable is False


def test_retry_after_header_is_parsed(recorded_error: Callable[[str], dict[str, Any]]) -> None:
    data = recorded_error("anthropic_rate_limit")
    error = classify_http_error("anthropic", 429, data["body"], data["headers"])
    assert isinstance(error, RateLimited) and error.retry_after == 17.0
    data = recorded_error("openai_rate_limit_retry_after")
    error = classify_http_error("openai", 429, data["body"], data["headers"])
    assert isinstance(error, RateLimited) and error.retry_after == 1.0


def test_retry_after_variants() -> None:
    assert parse_retry_after({"Retry-After-Ms": "1500"}) == 1.5
    assert parse_retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0  # in the past
    assert parse_retry_after({}, "Please try again in 644ms.") == pytest.approx(0.644)
    assert parse_retry_after({}, "Please try again in 9.816s.") == pytest.approx(9.816)
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after(None) is None


def test_status_decides_before_message_text() -> None:
    body = {"error": {"message": "prompt is too long: 5 tokens > 4 maximum", "type": "rate_limit_error"}}
    assert isinstance(classify_http_error("anthropic", 429, body), RateLimited)
    assert isinstance(
        classify_http_error("anthropic", 413, {"error": {"message": "context window"}}), RequestTooLarge
    )
    assert isinstance(classify_http_error("anthropic", 529, "<html>overloaded</html>"), Overloaded)
    assert isinstance(classify_http_error("x", 401, None), AuthError)
    assert isinstance(classify_http_error("x", 403, b'{"error": {"message": "nope"}}'), AuthError)
    assert isinstance(
        classify_http_error("x", 404, {"error": {"message": "model not found"}}), InvalidRequest
    )
    assert isinstance(classify_http_error("x", 502, "Bad Gateway"), ProviderUnavailable)


def test_responses_overflow_as_stream_events() -> None:
    message = "Your input exceeds the context window of this model. Please adjust your input and try again."
    flat = {"type": "error", "sequence_number": 2, "code": "context_length_exceeded", "message": message}
    failed = {
        "type": "response.failed",
        "response": {
            "id": "resp_1",
            "status": "failed",
            "error": {"code": "context_length_exceeded", "message": message},
        },
    }
    nested = {
        "type": "error",
        "error": {"type": "invalid_request_error", "code": "context_length_exceeded", "message": message},
    }
    for payload in (flat, failed, nested):
        error = classify_stream_error("openai-responses", payload)
        assert isinstance(error, ContextOverflow), payload
        assert error.status is None
    # Wording alone is enough when a gateway drops the code (message text is the last resort).
    assert isinstance(classify_stream_error("x", {"type": "error", "message": message}), ContextOverflow)


def test_anthropic_stream_error_event_with_200_status() -> None:
    body = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    error = classify_http_error("anthropic", 200, body)
    assert isinstance(error, Overloaded) and error.status is None


def _request() -> httpx2.Request:
    return httpx2.Request("POST", "https://api.example.invalid/v1/messages")


def test_translate_sdk_status_errors(recorded_error: Callable[[str], dict[str, Any]]) -> None:
    anthropic = pytest.importorskip("anthropic")
    openai = pytest.importorskip("openai")
    data = recorded_error("anthropic_rate_limit")
    response = httpx2.Response(429, headers=data["headers"], request=_request())
    exc = anthropic.RateLimitError("rate limited", response=response, body=data["body"])
    error = translate_sdk_error("anthropic", exc)
    assert isinstance(error, RateLimited) and error.retry_after == 17.0

    data = recorded_error("openai_context_length_exceeded")
    response = httpx2.Response(400, request=_request())
    # The OpenAI SDK keeps only the inner error object as `body`.
    exc = openai.BadRequestError("bad", response=response, body=data["body"]["error"])
    error = translate_sdk_error("openai", exc)
    assert isinstance(error, ContextOverflow) and (error.tokens, error.limit) == (130532, 128000)


def test_translate_sdk_connection_and_timeout_errors() -> None:
    anthropic = pytest.importorskip("anthropic")
    openai = pytest.importorskip("openai")
    for exc in (
        anthropic.APIConnectionError(request=_request()),
        anthropic.APITimeoutError(request=_request()),
        openai.APIConnectionError(request=_request()),
        openai.APITimeoutError(request=_request()),
    ):
        error = translate_sdk_error("p", exc)
        assert isinstance(error, ProviderUnavailable) and error.retryable
    assert "timed out" in translate_sdk_error("p", openai.APITimeoutError(request=_request())).message


def test_translate_openai_in_stream_api_error() -> None:
    openai = pytest.importorskip("openai")
    exc = openai.APIError("boom", _request(), body={"message": "boom", "type": "server_error", "code": None})
    assert isinstance(translate_sdk_error("openai", exc), ProviderUnavailable)
    body = {
        "message": "Your input exceeds the context window of this model.",
        "code": "context_length_exceeded",
    }
    assert isinstance(
        translate_sdk_error("openai", openai.APIError("x", _request(), body=body)), ContextOverflow
    )
