"""Small helpers every wire format shares: tool-argument JSON and data URLs."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from nova.messages import ImagePart

__all__ = [
    "INVALID_ARGUMENTS_KEY",
    "dump_arguments",
    "image_from_url",
    "image_to_url",
    "parse_arguments",
    "sorted_keys",
]

INVALID_ARGUMENTS_KEY = "__invalid_arguments__"
"""Where the raw text of tool arguments that are not a JSON object goes, so the agent loop can answer the
model with an error result instead of crashing on its output."""


def parse_arguments(raw: str | Mapping[str, Any] | None) -> dict[str, Any]:
    """Tool-call arguments as a dict. Never raises: anything that is not a JSON object is wrapped."""
    if raw is None:
        return {}
    if isinstance(raw, Mapping):
        return dict(raw)
    if not raw.strip():
        # Some local servers send "" for a call without arguments; that is an empty object, not an error.
        return {}
    try:
        parsed = json.loads(raw)
    except (ValueError, RecursionError):
        parsed = None
    if not isinstance(parsed, dict):
        return {INVALID_ARGUMENTS_KEY: raw}
    return parsed


def dump_arguments(arguments: Mapping[str, Any]) -> str:
    """The arguments as the JSON string OpenAI expects. Sorted keys keep the cached prefix byte-stable; a
    call whose arguments never parsed goes back exactly as the model wrote it."""
    if set(arguments) == {INVALID_ARGUMENTS_KEY} and isinstance(arguments[INVALID_ARGUMENTS_KEY], str):
        return str(arguments[INVALID_ARGUMENTS_KEY])
    return json.dumps(dict(arguments), sort_keys=True, ensure_ascii=False)


def image_to_url(image: ImagePart) -> str:
    """A URL for formats that only take URLs: the image's own, or a base64 data URL."""
    if image.url:
        return image.url
    return f"data:{image.media_type or 'image/png'};base64,{image.data}"


def image_from_url(url: str) -> ImagePart:
    """The inverse of `image_to_url`: a base64 data URL becomes inline data again."""
    if url.startswith("data:") and ";base64," in url:
        header, _, data = url.partition(";base64,")
        return ImagePart(media_type=header[len("data:") :], data=data)
    return ImagePart(url=url)


def sorted_keys(value: Any) -> Any:
    """A copy with every mapping's keys sorted: the SDK serializes dicts in insertion order, and a schema
    or tool input rebuilt in another order (resume, an MCP server) would otherwise change the cached
    prefix's bytes."""
    if isinstance(value, Mapping):
        return {str(k): sorted_keys(value[k]) for k in sorted(value, key=str)}
    if isinstance(value, list | tuple):
        return [sorted_keys(v) for v in value]
    return value
