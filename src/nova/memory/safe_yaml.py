"""Loading hand-editable YAML frontmatter without letting a hostile file cost memory, time or a traceback.

Three things a plain `yaml.safe_load` lets through are refused here:
- anchors and aliases: a few hundred bytes of nested aliases ("billion laughs") become a structure that
  any later walk (str(), a copy, a dump) expands exponentially. Memory files never need them, so the
  event stream is checked first and a file using them is refused before anything is built;
- size: frontmatter over `MAX_FRONTMATTER_BYTES` is refused unparsed;
- impossible dates (`created: 2025-02-30`): YAML's timestamp constructor raises a bare ValueError; here
  the value is kept as a marker and reported with the field it belongs to.
Deep nesting (which recurses in the constructor) is reported too, never raised as RecursionError.
"""

from __future__ import annotations

from typing import Any

import yaml

from nova.errors import MemoryStoreError

__all__ = ["MAX_FRONTMATTER_BYTES", "load_frontmatter"]

MAX_FRONTMATTER_BYTES = 64 * 1024

# libyaml's loader is ~20x faster than the pure-Python one; frontmatter parsing dominates scans.
_BASE_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _InvalidTimestamp(str):
    """A scalar YAML would type as a date or time that is not a real one (February 30th, hour 25)."""

    __slots__ = ()


class _FrontmatterLoader(_BASE_LOADER):  # type: ignore[misc]  # the base is chosen at import time
    pass


def _timestamp(loader: Any, node: yaml.ScalarNode) -> Any:
    try:
        return yaml.SafeLoader.construct_yaml_timestamp(loader, node)
    except (ValueError, OverflowError):
        return _InvalidTimestamp(node.value)


_FrontmatterLoader.add_constructor("tag:yaml.org,2002:timestamp", _timestamp)


def _refuse_anchors(text: str, where: str) -> None:
    # Cheap test first: without '&' or '*' there can be no anchor or alias.
    if "&" not in text and "*" not in text:
        return
    for event in yaml.parse(text, Loader=_BASE_LOADER):
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            line = event.start_mark.line + 2 if event.start_mark is not None else 0  # +1 for the opening ---
            raise MemoryStoreError(
                f"{where}: YAML anchors and aliases are not allowed in memory frontmatter (line {line}); "
                "write the values out in full"
            )


def load_frontmatter(text: str, *, where: str) -> Any:
    """The YAML value of `text` (the lines between the `---` markers). `where` names the file in errors."""
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_FRONTMATTER_BYTES:
        raise MemoryStoreError(
            f"{where}: frontmatter is {size} bytes, over the {MAX_FRONTMATTER_BYTES}-byte limit; "
            "move the long text into the body below the closing ---"
        )
    try:
        _refuse_anchors(text, where)
        value = yaml.load(text, Loader=_FrontmatterLoader)  # a SafeLoader subclass
    except yaml.YAMLError as exc:
        raise MemoryStoreError(f"{where}: frontmatter is not valid YAML ({_one_line(exc)})") from None
    except RecursionError:
        raise MemoryStoreError(f"{where}: frontmatter is nested too deeply; flatten it") from None
    except (ValueError, TypeError, OverflowError) as exc:
        raise MemoryStoreError(f"{where}: frontmatter has a value YAML cannot build ({exc})") from None
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, _InvalidTimestamp):
                raise MemoryStoreError(
                    f"{where}: field {str(key)!r} has value {str(item)!r}, which is not a real date or time; "
                    "expected an ISO date such as 2025-01-02T10:00:00Z (fix it or remove the field)"
                )
    return value


def _one_line(exc: yaml.YAMLError) -> str:
    return " ".join(str(exc).split())
