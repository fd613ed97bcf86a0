"""Lazy imports of the provider SDKs, which are optional extras."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

from nova.errors import MissingDependency
from nova.version import install_line

__all__ = ["MissingDependency", "require_sdk", "sdk_client"]


def require_sdk(module: str, extra: str) -> ModuleType:
    """Import `module`, or fail with the pip line for the extra that provides it. Importing here rather
    than at module level keeps `import nova` working without either SDK installed."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingDependency(
            f"the {module!r} package is needed for this provider; install it with: {install_line(extra)}"
        ) from exc


def sdk_client(
    module: str,
    client_class: str,
    *,
    extra: str,
    api_key: str,
    base_url: str | None,
    http_client: Any,
    max_retries: int,
    timeout: float | None,
) -> Any:
    """Construct an SDK client (`anthropic.Anthropic`, `openai.OpenAI`) passing only what was set, so the
    SDK's own defaults (base URL, timeout) apply otherwise."""
    sdk = require_sdk(module, extra=extra)
    kwargs: dict[str, Any] = {"api_key": api_key, "max_retries": max_retries}
    if base_url:
        kwargs["base_url"] = base_url
    if http_client is not None:
        kwargs["http_client"] = http_client
    if timeout is not None:
        kwargs["timeout"] = timeout
    return getattr(sdk, client_class)(**kwargs)
