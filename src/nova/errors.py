"""Nova's one exception tree. Lower-level errors (HTTP, SDK, SQLite, OS) are translated at the boundary.

    NovaError
    ├── ConfigError                 a config file or value is wrong (names file, key, value, expected)
    ├── StorageError                the session store or a session directory cannot be used
    ├── SessionNotFound             no recorded session has that id
    ├── SessionBusy                 the session is running a turn (or closing) and cannot take this now
    ├── ToolError                   a tool failed; the loop turns it into an error result for the model
    └── ProviderError               anything a model provider answered or failed to answer
        ├── ContextOverflow         the request is larger than the model's context window (CMP-9)
        ├── RequestTooLarge         HTTP 413: the body is over a byte limit (not a token overflow)
        ├── RateLimited             429 / rate_limit_error, including "request too large … per min"
        ├── QuotaExceeded           insufficient_quota / billing: never retried
        ├── Overloaded              529 / overloaded_error / 503
        ├── AuthError               401 / 403
        ├── InvalidRequest          any other 4xx the provider rejected
        ├── ProviderUnavailable     network failure, timeout, 5xx
        └── MissingCredentials      no key configured: says which variable to set
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "AuthError",
    "ConfigError",
    "ContextOverflow",
    "InvalidRequest",
    "MissingCredentials",
    "NovaError",
    "Overloaded",
    "ProviderError",
    "ProviderUnavailable",
    "QuotaExceeded",
    "RateLimited",
    "RequestTooLarge",
    "SessionBusy",
    "SessionNotFound",
    "StorageError",
    "ToolError",
]


class NovaError(Exception):
    """Root of every error Nova raises on purpose."""


class ConfigError(NovaError):
    """A configuration problem, with the file, key, bad value and expected type in the message."""


class StorageError(NovaError):
    pass


class SessionNotFound(NovaError):
    """No recorded session has that id (or the id is not a valid one)."""


class SessionBusy(NovaError):
    """The session is running a turn or a compaction, or is being closed; try again after it."""


class ToolError(NovaError):
    pass


class ProviderError(NovaError):
    """An error from a model provider. `retryable` says whether the same request may succeed later."""

    retryable = False

    def __init__(
        self,
        message: str,
        *,
        provider: str = "",
        status: int | None = None,
        code: str | None = None,
        body: Any = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.provider = provider
        self.status = status
        self.code = code
        self.body = body


class ContextOverflow(ProviderError):
    """The provider says the prompt does not fit. `tokens` / `limit` are filled when it says by how much."""

    def __init__(self, message: str, *, tokens: int | None = None, limit: int | None = None, **kw: Any):
        super().__init__(message, **kw)
        self.tokens = tokens
        self.limit = limit


class RequestTooLarge(ProviderError):
    pass


class RateLimited(ProviderError):
    retryable = True

    def __init__(self, message: str, *, retry_after: float | None = None, **kw: Any):
        super().__init__(message, **kw)
        self.retry_after = retry_after


class QuotaExceeded(ProviderError):
    pass


class Overloaded(ProviderError):
    retryable = True


class AuthError(ProviderError):
    pass


class InvalidRequest(ProviderError):
    pass


class ProviderUnavailable(ProviderError):
    retryable = True


class MissingCredentials(ProviderError):
    pass
