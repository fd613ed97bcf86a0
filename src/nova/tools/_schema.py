"""Checking a model's tool arguments against the tool's JSON schema before anything runs.

Models get arguments wrong in small ways (a missing key, `"10"` for an integer, `file_path` for
`path`). Each mistake must come back as one message that names the key and says what was expected, so
the model can fix its call; a TypeError deep inside a tool would teach it nothing. Only the subset of
JSON Schema the built-in tools use is understood: an object with `properties`, `required`,
`additionalProperties`, property `type` (string, integer, number, boolean) `minimum` and `maximum`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from nova.errors import ArgumentError

__all__ = ["INVALID_ARGUMENTS_KEY", "ArgumentError", "object_schema", "param", "validate_arguments"]

INVALID_ARGUMENTS_KEY = "__invalid_arguments__"
"""Providers put arguments that were not parseable JSON under this key, as the raw text."""



def param(type_name: str, description: str | None = None, **constraints: Any) -> dict[str, Any]:
    """One property of a tool's input: its JSON `type`, then `constraints` (`enum`, `items`, `minimum`,
    `maximum`, `default`) in the order given, then its `description`. Every tool declares its properties
    this way so they share that key order: the schema's bytes are part of the cached tool catalog."""
    schema: dict[str, Any] = {"type": type_name, **constraints}
    if description is not None:
        schema["description"] = description
    return schema


def object_schema(properties: Mapping[str, Any], *, required: Sequence[str]) -> Mapping[str, Any]:
    """A tool's input schema: an object of `properties`, the `required` ones, and no other keys (so a
    misspelt argument is refused by name rather than ignored)."""
    return {"type": "object", "properties": dict(properties), "required": list(required),
            "additionalProperties": False}


_TYPE_NAMES = {"string": "a string", "integer": "an integer", "number": "a number", "boolean": "true or false"}


def _fits(value: Any, type_name: str) -> bool:
    # bool is a subclass of int in Python but not an integer in JSON: `true` is not a line number.
    if type_name == "string":
        return isinstance(value, str)
    if type_name == "boolean":
        return isinstance(value, bool)
    if type_name == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if type_name == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    return True


def _coerce(value: Any, type_name: str) -> Any:
    """Accept the lossless near-misses models produce (`5.0` for 5); refuse anything that loses meaning."""
    if type_name == "integer" and isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _describe(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def validate_arguments(tool_name: str, schema: Mapping[str, Any], raw: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments with defaults left absent and lossless coercions applied, or `ArgumentError`."""
    if INVALID_ARGUMENTS_KEY in raw:
        text = str(raw[INVALID_ARGUMENTS_KEY])
        shown = text if len(text) <= 300 else text[:300] + "..."
        raise ArgumentError(
            f"the arguments for {tool_name} were not valid JSON: {shown!r}. "
            "Call the tool again with a JSON object matching its input schema."
        )
    if not isinstance(raw, Mapping):
        raise ArgumentError(f"the arguments for {tool_name} must be a JSON object")
    properties: Mapping[str, Any] = schema.get("properties", {})
    expected = ", ".join(properties) or "none"
    problems: list[str] = []
    for key in schema.get("required", ()):
        if key not in raw:
            prop = properties.get(key, {})
            kind = _TYPE_NAMES.get(prop.get("type", ""), "a value")
            problems.append(f"missing required argument {key!r} ({kind})")
    args: dict[str, Any] = {}
    for key, value in raw.items():
        prop = properties.get(key)
        if prop is None:
            if schema.get("additionalProperties", True) is False:
                problems.append(f"unknown argument {key!r}")
            continue
        type_name = prop.get("type", "")
        value = _coerce(value, type_name)
        if not _fits(value, type_name):
            problems.append(
                f"argument {key!r} must be {_TYPE_NAMES.get(type_name, type_name)}, got {_describe(value)}"
            )
            continue
        minimum = prop.get("minimum")
        if minimum is not None and value < minimum:
            problems.append(f"argument {key!r} must be at least {minimum}, got {_describe(value)}")
            continue
        maximum = prop.get("maximum")
        if maximum is not None and value > maximum:
            problems.append(f"argument {key!r} must be at most {maximum}, got {_describe(value)}")
            continue
        args[key] = value
    if problems:
        listing = "; ".join(problems)
        raise ArgumentError(f"invalid arguments for {tool_name}: {listing}. Expected arguments: {expected}.")
    return args
