"""CMP-12 key by key, the config file's error messages, and where values come from."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from nova.context.budget import ContextBudget, budget_for
from nova.errors import ConfigError
from nova.settings import (
    COMPACTION_KEYS,
    CompactionConfig,
    _parse_compaction_config,
    describe_settings,
    load_settings,
)


def parse(raw: dict[str, object]) -> tuple[CompactionConfig, list[str]]:
    warnings: list[str] = []
    return _parse_compaction_config(raw, warn=warnings.append), warnings


def test_defaults_are_the_documented_eight_plus_hard_margin() -> None:
    config, warnings = parse({})
    assert warnings == []
    assert {k: getattr(config, k) for k in COMPACTION_KEYS} == {
        "output_reserve_tokens": 16000,
        "summary_reserve_tokens": 8000,
        "snip_max_chars": 2000,
        "snip_tool_output_token_budget": 50000,
        "snip_preserve_last_n_messages": 12,
        "summary_keep_tokens": 20000,
        "max_consecutive_failures": 3,
        "default_context_window": 128000,
    }
    assert config.hard_margin_tokens == 3000


@pytest.mark.parametrize("key", COMPACTION_KEYS)
def test_every_key_is_read_and_converted_with_int(key: str) -> None:
    config, _ = parse({key: "4096"})
    assert getattr(config, key) == 4096
    config, _ = parse({key: 4096.9})
    assert getattr(config, key) == 4096  # int() truncates, as the docs say


def test_alias_is_read_only_when_the_real_key_is_missing() -> None:
    config, warnings = parse({"snip_preserve_last_n_turns": 7})
    assert config.snip_preserve_last_n_messages == 7
    assert any("snip_preserve_last_n_turns" in w for w in warnings)
    config, _ = parse({"snip_preserve_last_n_turns": 7, "snip_preserve_last_n_messages": 20})
    assert config.snip_preserve_last_n_messages == 20


def test_deprecated_keep_ratio_is_converted_against_default_window() -> None:
    config, warnings = parse({"summary_keep_ratio": 0.25, "default_context_window": 64000})
    assert config.summary_keep_tokens == 16000
    assert any("deprecated" in w for w in warnings)
    config, _ = parse({"summary_keep_ratio": 0.25})
    assert config.summary_keep_tokens == 32000
    # The real key wins over the deprecated one.
    config, _ = parse({"summary_keep_ratio": 0.25, "summary_keep_tokens": 5000})
    assert config.summary_keep_tokens == 5000


@pytest.mark.parametrize(("given", "expected"), [(1, 1024), (500, 1024), (1023, 1024), (1024, 1024), (1500, 1500)])
def test_keep_tokens_under_1024_are_rounded_up(given: int, expected: int) -> None:
    assert parse({"summary_keep_tokens": given})[0].summary_keep_tokens == expected


def test_ratio_conversion_below_1024_is_rounded_up_too() -> None:
    assert parse({"summary_keep_ratio": 0.001})[0].summary_keep_tokens == 1024


@pytest.mark.parametrize("dead", ["token_ratio", "max_messages", "max_turns_between_compact"])
def test_dead_keys_warn_and_change_nothing(dead: str) -> None:
    config, warnings = parse({dead: 99})
    assert config == CompactionConfig()
    assert len(warnings) == 1 and dead in warnings[0] and "no effect" in warnings[0]


def test_unknown_keys_are_ignored_silently() -> None:
    config, warnings = parse({"frobnicate": 3})
    assert config == CompactionConfig() and warnings == []


def test_threshold_reserve_is_capped_at_half_the_window() -> None:
    config = CompactionConfig()
    assert ContextBudget.derive(config, 200_000).threshold == 200_000 - 24_000
    # Unset, the reserve scales with the window (the seeds' 16k + 8k are for 200k).
    small = ContextBudget.derive(config, 32_000)
    assert small.reserve == 2_560 + 1_280 and small.threshold == 32_000 - 3_840
    # Set in the config file, the seeds' reserve is clamped to half the window, with a warning naming the key.
    warned: list[str] = []
    seeded = ContextBudget.derive(replace(config, configured=frozenset({"output_reserve_tokens", "summary_reserve_tokens"})),
                                  32_000, warn=warned.append)
    assert seeded.reserve == 16_000 and seeded.threshold == 16_000
    assert any("compaction.output_reserve_tokens = 16,000" in w for w in warned)
    # keep budget capped at a quarter of the threshold (the view after a compaction is at most half)
    assert small.keep_tokens == 3_200 and seeded.keep_tokens <= seeded.threshold // 4
    assert ContextBudget.derive(config, 200_000).keep_tokens == 20_000


def test_max_consecutive_failures_zero_or_negative_is_kept() -> None:
    assert parse({"max_consecutive_failures": 0})[0].max_consecutive_failures == 0
    assert parse({"max_consecutive_failures": -1})[0].max_consecutive_failures == -1


@pytest.mark.parametrize("bad", ["lots", [1], {"a": 1}, True, None])
def test_wrong_typed_value_names_file_key_value_and_type(bad: object) -> None:
    with pytest.raises(ConfigError) as info:
        _parse_compaction_config({"snip_max_chars": bad}, source="/x/config.json")
    message = str(info.value)
    assert "/x/config.json" in message
    assert "snip_max_chars" in message
    assert json.dumps(bad) in message
    assert "expected an integer" in message


def write_config(home: Path, data: object) -> Path:
    home.mkdir(parents=True, exist_ok=True)
    path = home / "config.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def test_load_settings_reads_the_compaction_section(nova_home: Path) -> None:
    write_config(nova_home, {"compaction": {"snip_max_chars": 4000}, "model": "gpt-5", "provider": "openai"})
    settings = load_settings(home=nova_home)
    assert settings.compaction.snip_max_chars == 4000
    assert settings.model == "gpt-5"
    assert budget_for(settings).window == 400_000
    assert budget_for(replace(settings, context_window=50_000)).window == 50_000  # the config wins


def test_malformed_json_says_where(nova_home: Path) -> None:
    path = write_config(nova_home, '{"compaction": {"snip_max_chars": 10,}}')
    with pytest.raises(ConfigError) as info:
        load_settings(home=nova_home)
    assert str(path) in str(info.value)
    assert "line 1" in str(info.value)


def test_top_level_must_be_an_object(nova_home: Path) -> None:
    write_config(nova_home, [1, 2])
    with pytest.raises(ConfigError, match="JSON object"):
        load_settings(home=nova_home)


def test_section_of_wrong_type(nova_home: Path) -> None:
    write_config(nova_home, {"compaction": 5})
    with pytest.raises(ConfigError, match="'compaction' has value 5, expected an object"):
        load_settings(home=nova_home)


def test_unknown_provider_is_refused_with_the_choices(nova_home: Path) -> None:
    write_config(nova_home, {"provider": "skynet"})
    with pytest.raises(ConfigError, match="anthropic, openai"):
        load_settings(home=nova_home)


def test_layering_and_sources(nova_home: Path) -> None:
    path = write_config(nova_home, {"model": "claude-opus-4-1", "compaction": {"snip_max_chars": 3000}})
    settings = load_settings(home=nova_home, env={"NOVA_PROVIDER": "openai"}, overrides={"max_output_tokens": 1000})
    assert settings.provider == "openai"
    assert settings.sources["provider"] == "env:NOVA_PROVIDER"
    assert settings.sources["model"] == str(path)
    assert settings.sources["max_output_tokens"] == "flag"
    rows = {key: (value, source) for key, value, source in describe_settings(settings)}
    assert rows["compaction.snip_max_chars"] == (3000, str(path))
    assert rows["compaction.output_reserve_tokens"] == (16000, "default")


def test_nova_home_env_is_respected(tmp_path: Path) -> None:
    settings = load_settings(env={"NOVA_HOME": str(tmp_path / "h")})
    assert settings.home == tmp_path / "h"
