"""The one check every part of a case file makes: no key it does not know, named with the ones it does."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from nova.errors import NovaError

__all__ = ["reject_unknown_keys"]


def reject_unknown_keys(entry: Mapping[str, Any], known: Sequence[str], where: str, error: type[NovaError]) -> None:
    """Raise `error` naming `where`, the keys of `entry` not in `known`, and `known` in the order given."""
    unknown = sorted(set(entry) - set(known))
    if unknown:
        raise error(f"{where}: unknown key(s) {', '.join(unknown)}; known: {', '.join(known)}")
