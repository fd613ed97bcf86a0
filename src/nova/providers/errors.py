"""Provider failures translated into Nova's error tree (`nova.errors`), at the adapter boundary.

`classify_http_error` decides from the HTTP status and the error's `type` / `code` first and reads the
message text only when those leave a question open, because wording changes and codes do not. The
order of the checks is the point of this module:

    1. code `context_length_exceeded` (or llama.cpp's `exceed_context_size_error`)  -> ContextOverflow
    2. code or type `insufficient_quota`, type `billing_error`, status 402          -> QuotaExceeded
    3. status 429, type `rate_limit_error`, code `rate_limit_exceeded`               -> RateLimited
       ("Request too large for gpt-4o ... tokens per min" is a 429: a rate limit, never an overflow)
    4. status 413, type `request_too_large`                                         -> RequestTooLarge
    5. status 529 / 503, type `overloaded_error`                                    -> Overloaded
    6. status 401 / 403, type `authentication_error` / `permission_error`           -> AuthError
    7. a 400 (or an in-stream error) whose message says the prompt does not fit     -> ContextOverflow
    8. other 5xx, `api_error` / `server_error`                                      -> ProviderUnavailable
    9. other 4xx                                                                    -> InvalidRequest

Errors that arrive inside a 200 stream (Anthropic's `error` event, the Responses API's `error` and
`response.failed` events) go through the same function with `status=None`.
"""

from __future__ import annotations

import email.utils
import json
import re
import time
from collections.abc import Mapping
from typing import Any

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

__all__ = ["classify_http_error", "classify_stream_error", "parse_retry_after", "translate_sdk_error"]

# Message texts that mean "the prompt does not fit the window", from Anthropic, OpenAI and the common
# compatible servers. Consulted only after status and code (step 7).
_OVERFLOW_TEXT = re.compile(
    r"prompt is too long"
    r"|exceeds? the context window"
    r"|maximum context length"
    r"|context length exceeded"
    r"|exceed(?:s|ed)? (?:the )?context limit"
    r"|context_length_exceeded"
    r"|too many tokens in (?:the )?prompt",
    re.IGNORECASE,
)
_QUOTA_TEXT = re.compile(r"credit balance is too low|exceeded your current quota", re.IGNORECASE)

# (tokens, limit) extractors, tried in order.
_ANTHROPIC_TOO_LONG = re.compile(r"prompt is too long:\s*(\d+)\s*tokens\s*>\s*(\d+)", re.IGNORECASE)
_ANTHROPIC_WITH_OUTPUT = re.compile(r"context limit:\s*(\d+)\s*\+\s*(\d+)\s*>\s*(\d+)", re.IGNORECASE)
_OPENAI_MAX_CONTEXT = re.compile(
    r"maximum context length is\s*(\d+)\s*tokens.*?(?:resulted in|requested)\s*(\d+)\s*tokens",
    re.IGNORECASE | re.DOTALL,
)
_TRY_AGAIN = re.compile(r"try again in\s*(\d+(?:\.\d+)?)\s*(ms|s)\b", re.IGNORECASE)


def _error_object(body: Any) -> dict[str, Any]:
    """The `{type, code, message}` object from any of the body shapes seen in practice: Anthropic's
    `{"type": "error", "error": {...}}`, OpenAI's `{"error": {...}}`, the inner object alone (what the
    OpenAI SDK keeps), a raw JSON string or bytes, or plain text."""
    if isinstance(body, bytes | bytearray):
        body = body.decode("utf-8", "replace")
    if isinstance(body, str):
        try:
            body = json.loads(body)
        except ValueError:
            return {"message": body}
    if not isinstance(body, Mapping):
        return {}
    inner = body.get("error")
    if isinstance(inner, Mapping):
        return dict(inner)
    if isinstance(inner, str):
        return {**body, "message": inner}
    return dict(body)


def _str_or_none(value: Any) -> str | None:
    return None if value is None or value == "" else str(value)


def parse_retry_after(headers: Mapping[str, str] | None, message: str = "") -> float | None:
    """Seconds to wait: `retry-after-ms`, then `retry-after` (seconds or an HTTP date), then a
    "try again in 9.8s" hint in the message."""
    lowered = {k.lower(): v for k, v in (headers or {}).items()}
    if "retry-after-ms" in lowered:
        try:
            return max(0.0, float(lowered["retry-after-ms"]) / 1000)
        except ValueError:
            pass
    value = lowered.get("retry-after")
    if value:
        try:
            return max(0.0, float(value))
        except ValueError:
            pass
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            when = None
        if when is not None:
            return max(0.0, when.timestamp() - time.time())
    match = _TRY_AGAIN.search(message)
    if match:
        amount = float(match.group(1))
        return amount / 1000 if match.group(2).lower() == "ms" else amount
    return None


def _overflow_numbers(message: str, error: Mapping[str, Any]) -> tuple[int | None, int | None]:
    if isinstance(error.get("n_prompt_tokens"), int) and isinstance(error.get("n_ctx"), int):
        return error["n_prompt_tokens"], error["n_ctx"]  # llama.cpp says it in fields
    if m := _ANTHROPIC_TOO_LONG.search(message):
        return int(m.group(1)), int(m.group(2))
    if m := _ANTHROPIC_WITH_OUTPUT.search(message):
        # "input length and `max_tokens` exceed context limit: input + max_tokens > limit"
        return int(m.group(1)) + int(m.group(2)), int(m.group(3))
    if m := _OPENAI_MAX_CONTEXT.search(message):
        return int(m.group(2)), int(m.group(1))
    return None, None


def classify_http_error(
    provider: str,
    status: int | None,
    body: Any,
    headers: Mapping[str, str] | None = None,
) -> ProviderError:
    """The Nova error for a provider's failed answer. `status` is None for an error inside a stream."""
    if status is not None and 200 <= status < 300:
        status = None  # an error event inside a successful stream: the status says nothing
    error = _error_object(body)
    kind = _str_or_none(error.get("type"))
    code = _str_or_none(error.get("code"))
    message = str(error.get("message") or "") or (f"HTTP {status}" if status else "provider error")
    tags = {t for t in (kind, code) if t}
    kw: dict[str, Any] = {"provider": provider, "status": status, "code": code or kind, "body": body}

    if tags & {"context_length_exceeded", "exceed_context_size_error"}:
        tokens, limit = _overflow_numbers(message, error)
        return ContextOverflow(message, tokens=tokens, limit=limit, **kw)
    if tags & {"insufficient_quota", "billing_error"} or status == 402:
        return QuotaExceeded(message, **kw)
    if status == 429 or tags & {"rate_limit_error", "rate_limit_exceeded", "tokens", "requests"}:
        return RateLimited(message, retry_after=parse_retry_after(headers, message), **kw)
    if status == 413 or "request_too_large" in tags:
        return RequestTooLarge(message, **kw)
    if status in (503, 529) or tags & {"overloaded_error", "overloaded"}:
        return Overloaded(message, **kw)
    if status in (401, 403) or tags & {"authentication_error", "permission_error", "invalid_api_key"}:
        return AuthError(message, **kw)
    if (status is None or status == 400) and _OVERFLOW_TEXT.search(message):
        tokens, limit = _overflow_numbers(message, error)
        return ContextOverflow(message, tokens=tokens, limit=limit, **kw)
    if _QUOTA_TEXT.search(message) and (status is None or 400 <= status < 500):
        return QuotaExceeded(message, **kw)
    if (status is not None and status >= 500) or tags & {"api_error", "server_error"}:
        return ProviderUnavailable(message, **kw)
    if status is not None and 400 <= status < 500:
        return InvalidRequest(message, **kw)
    # An in-stream error with nothing to go on: assume the service failed, which the loop may retry.
    return ProviderUnavailable(message, **kw)


def classify_stream_error(provider: str, payload: Mapping[str, Any]) -> ProviderError:
    """An error that arrived as an event inside a 200 stream: the Responses API's `error` event
    (`{"type": "error", "code", "message"}`) or `response.failed` (`response.error`), Anthropic's
    `error` event, or a Chat Completions chunk carrying `error`."""
    if payload.get("type") == "response.failed":
        response = payload.get("response")
        inner = response.get("error") if isinstance(response, Mapping) else None
        return classify_http_error(provider, None, {"error": inner or {}})
    if payload.get("type") == "error" and "error" not in payload:
        # The Responses `error` event is the error object itself, with "error" as its event type.
        return classify_http_error(
            provider, None, {"error": {k: v for k, v in payload.items() if k != "type"}}
        )
    return classify_http_error(provider, None, payload)


def translate_sdk_error(provider: str, exc: BaseException) -> ProviderError:
    """An exception from the anthropic or openai SDK (or httpx2 under them) as a Nova error.

    Matched by class name rather than by importing either SDK, so this module works with whichever
    of them is installed, and both SDKs name their classes alike."""
    if isinstance(exc, ProviderError):
        return exc
    names = {cls.__name__ for cls in type(exc).__mro__}
    message = str(getattr(exc, "message", None) or exc) or type(exc).__name__
    if names & {"APITimeoutError", "TimeoutException"}:
        return ProviderUnavailable(f"{provider}: request timed out: {message}", provider=provider)
    if names & {"APIConnectionError", "TransportError", "NetworkError"}:
        return ProviderUnavailable(f"{provider}: could not connect: {message}", provider=provider)
    response = getattr(exc, "response", None)
    status = getattr(exc, "status_code", None)
    body = getattr(exc, "body", None)
    if isinstance(status, int):
        headers = getattr(response, "headers", None)
        return classify_http_error(provider, status, body, dict(headers) if headers is not None else None)
    if "APIError" in names:
        # An error without a status: the OpenAI SDK raises these for an `error` inside a stream.
        return classify_http_error(provider, None, body if body is not None else {"message": message})
    return ProviderUnavailable(f"{provider}: {type(exc).__name__}: {message}", provider=provider)
