"""Names a package exports but imports only on first use, so importing the package stays cheap.

    __getattr__, __dir__ = lazy_exports(__name__, {"nova.sessions.meta": ("SessionMeta",)}, __all__)

A name, once loaded, is stored in the package's namespace, so later lookups do not come back here.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, homes: Mapping[str, Iterable[str]], public: Iterable[str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module-level `__getattr__` and `__dir__` of `package`: each name of `homes` (module → names)
    loads from its module when first asked for; `public` is what `dir()` lists."""
    module_of = {name: module for module, names in homes.items() for name in names}
    listed = list(public)

    def __getattr__(name: str) -> Any:
        module = module_of.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        vars(sys.modules[package])[name] = value
        return value

    def __dir__() -> list[str]:
        return list(listed)

    return __getattr__, __dir__
