"""The frameworks are optional extras: an adapter imports its framework through `require`, so a missing
extra fails with the exact install line instead of a bare `ModuleNotFoundError`. `import nova` and
`import nova.integrations` import no framework."""

from __future__ import annotations

import importlib
from types import ModuleType

from nova.errors import MissingDependency
from nova.version import install_line

__all__ = ["require"]


def require(module: str, *, extra: str, adapter: str) -> ModuleType:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingDependency(
            f"{adapter} needs the {module!r} package; install it with: {install_line(extra)}"
        ) from exc
