"""The guard against real model requests in tests: while `forbid_model_requests` is active, every real
provider adapter refuses to send. It lives with the providers because the adapters check it."""

from __future__ import annotations

__all__ = ["RealModelRequestError", "check_real_request_allowed", "forbid_model_requests"]


class RealModelRequestError(AssertionError):
    pass


class forbid_model_requests:
    """While active, any real provider adapter refuses to send a request (it raises
    `RealModelRequestError`). Adapters built with an injected `http_client` (e.g. over
    `httpx2.MockTransport`) are allowed, since they cannot reach a network."""

    active = False

    def __enter__(self) -> forbid_model_requests:
        self._previous = forbid_model_requests.active
        forbid_model_requests.active = True
        return self

    def __exit__(self, *exc: object) -> None:
        forbid_model_requests.active = self._previous


def check_real_request_allowed(provider: str) -> None:
    if forbid_model_requests.active:
        raise RealModelRequestError(
            f"a test tried to send a real request to the {provider} API; use nova.testing fakes or "
            "an http_client over httpx2.MockTransport"
        )
