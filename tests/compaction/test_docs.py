"""docs/compaction.md documents exactly the keys `_parse_compaction_config` reads, with their defaults."""

from __future__ import annotations

import json
import re
from dataclasses import fields
from pathlib import Path

from nova.settings import CompactionConfig, _parse_compaction_config

DOC = Path(__file__).resolve().parents[2] / "docs" / "compaction.md"


def _section(text: str) -> str:
    start = text.index("## Configuration")
    return text[start : text.index("\n## ", start + 5)]


def test_documented_keys_are_the_parsed_keys_with_their_defaults() -> None:
    section = _section(DOC.read_text(encoding="utf-8"))
    rows = dict(re.findall(r"^\| `(\w+)` \| `([^`]*)` \|", section, re.M))
    parsed = {f.name: getattr(CompactionConfig(), f.name) for f in fields(CompactionConfig) if f.name != "configured"}
    assert set(rows) == set(parsed)
    assert {k: str(v) for k, v in parsed.items()} == rows
    example = json.loads(re.search(r"```json\n(.*?)```", section, re.S).group(1))["compaction"]  # type: ignore[union-attr]
    assert example == parsed
    # every documented key is really read: setting it changes the parsed value
    for key, default in parsed.items():
        value = {"summarizer": "extractive", "schedule": "cost"}.get(key) or int(default) + 1024
        assert getattr(_parse_compaction_config({key: value}), key) == value
