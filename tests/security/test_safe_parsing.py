"""Hostile or broken files a user might be handed (memory frontmatter, config.json) are refused with a
message naming the file, the field and why (aliases, a size limit, nesting depth), and never expanded,
crashed on or silently dropped; a parser that ran away would hit the test's timeout."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from nova.errors import ConfigError
from nova.memory.store import MemoryStore
from nova.settings import load_settings

GOOD = "---\nname: good\ndescription: fine\ntype: user\n---\nbody\n"


def _laughs() -> str:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for level in "bcdefg":
        prev = chr(ord(level) - 1)
        lines.append(f"{level}: &{level} [" + ",".join([f"*{prev}"] * 10) + "]")
    return "---\nname: laughs\ndescription: *g\ntype: user\n" + "\n".join(lines) + "\n---\nbody\n"


HOSTILE = {
    "billion-laughs": (_laughs(), "aliases"),
    "oversized": ("---\nname: big\ntype: user\ndescription: '" + "x" * 70_000 + "'\n---\nb\n", "limit"),
    "bad-date": ("---\nname: dated\ntype: user\ncreated: 2025-02-30\n---\nb\n", "'created'"),
    "deep-nesting": ("---\nname: deep\ntype: user\nx: " + "[" * 20_000 + "]" * 20_000 + "\n---\nb\n", "deep"),
}


@pytest.mark.timeout(20)
@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_hostile_memory_frontmatter_is_skipped_with_a_warning_naming_the_file(
    tmp_path: Path, kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    text, hint = HOSTILE[kind]
    home = tmp_path / "home"
    home.mkdir()
    (home / "good.md").write_text(GOOD, encoding="utf-8")
    bad = home / f"{kind}.md"
    bad.write_text(text, encoding="utf-8")
    store = MemoryStore(home_dir=home, project_dir=tmp_path / "project")
    with caplog.at_level(logging.WARNING):
        names = [m.name for m in store.memories()]
    assert names == ["good"]
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert any(str(bad) in w and hint in w for w in warnings), warnings


def _config(home: Path, text: str) -> Path:
    home.mkdir(parents=True, exist_ok=True)
    path = home / "config.json"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("text", ['{"a": ' + "[" * 100_000 + "]" * 100_000 + "}",
                                  '{"max_output_tokens": 1' + "0" * 5000 + "}"],
                         ids=["deep-nesting", "huge-integer"])
def test_unreadable_config_is_a_config_error_naming_the_file(tmp_path: Path, text: str) -> None:
    path = _config(tmp_path / "home", text)
    with pytest.raises(ConfigError) as info:
        load_settings(home=path.parent)
    assert str(path) in str(info.value)


@pytest.mark.parametrize(("data", "key", "value"), [
    ({"max_output_tokens": -100}, "max_output_tokens", "-100"),
    ({"max_output_tokens": 0}, "max_output_tokens", "0"),
    ({"context_window": 10**12}, "context_window", str(10**12)),
    ({"compaction": {"default_context_window": 10**12}}, "default_context_window", str(10**12)),
    ({"compaction": {"snip_preserve_last_n_turns": -3}}, "snip_preserve_last_n_turns", "-3"),
])
def test_out_of_range_numbers_name_file_key_value_and_range(
    tmp_path: Path, data: dict[str, object], key: str, value: str
) -> None:
    path = _config(tmp_path / "home", json.dumps(data))
    with pytest.raises(ConfigError) as info:
        load_settings(home=path.parent)
    message = str(info.value)
    assert str(path) in message and repr(key) in message and value in message
    assert "between" in message or "non-negative" in message
