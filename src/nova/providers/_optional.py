"""Lazy imports of the provider SDKs, which are optional extras."""

from __future__ import annotations

import importlib
from types import ModuleType

from nova.errors import NovaError

__all__ = ["MissingDependency", "require_sdk"]


class MissingDependency(NovaError, ImportError):
    """An optional package is not installed; the message is the exact command that installs it."""


def require_sdk(module: str, extra: str) -> ModuleType:
    """Import `module`, or fail with the pip line for the extra that provides it. Importing here rather
    than at module level keeps `import nova` working without either SDK installed."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingDependency(
            f"the {module!r} package is needed for this provider; install it with: pip install 'nova-agent[{extra}]'"
        ) from exc
