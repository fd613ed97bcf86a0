"""What the adapters over a vendor SDK share: building the client, and a stream that honours the request
guard and turns the SDK's exceptions into Nova's provider errors."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, ClassVar

from nova.errors import ProviderError
from nova.model import ModelRequest, StreamEvent
from nova.providers._optional import require_sdk, sdk_client
from nova.providers.errors import translate_sdk_error
from nova.providers.guard import check_real_request_allowed

__all__ = ["SdkProvider", "as_dict"]


def as_dict(value: Any) -> Mapping[str, Any]:
    """An SDK event or object as a plain mapping (SDK models offer `to_dict()`; anything else is empty)."""
    if isinstance(value, Mapping):
        return value
    to_dict = getattr(value, "to_dict", None)
    return to_dict() if callable(to_dict) else {}


class SdkProvider:
    """A subclass names its SDK (`sdk`, also the extra that installs it), the client class and the SDK's
    base exception, and implements `_stream`. Without an injected `http_client` the adapter is "real": it
    refuses to send while `nova.providers.guard.forbid_model_requests` is active."""

    name: str
    sdk: ClassVar[str]
    client_class: ClassVar[str]
    error_class: ClassVar[str]

    def __init__(
        self,
        *,
        api_key: str,
        base_url: str | None = None,
        http_client: Any = None,
        max_retries: int = 2,
        timeout: float | None = None,
    ) -> None:
        self._sdk = require_sdk(self.sdk, extra=self.sdk)
        self._injected = http_client is not None
        self._client: Any = sdk_client(self.sdk, self.client_class, extra=self.sdk, api_key=api_key,
                                       base_url=base_url, http_client=http_client, max_retries=max_retries,
                                       timeout=timeout)

    def stream(self, request: ModelRequest) -> Iterator[StreamEvent]:
        if not self._injected:
            check_real_request_allowed(self.name)
        try:
            yield from self._stream(request)
        except ProviderError:
            raise
        except getattr(self._sdk, self.error_class) as exc:
            raise translate_sdk_error(self.name, exc) from exc

    def _stream(self, request: ModelRequest) -> Iterator[StreamEvent]:
        raise NotImplementedError
