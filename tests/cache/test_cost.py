"""Cost arithmetic against hand-worked cases; normalized usage counts OpenAI's cached tokens once."""

from __future__ import annotations

from pathlib import Path

import pytest

from nova.model import Usage
from nova.providers.openai import usage_from_chat, usage_from_responses
from nova.providers.pricing import cost_usd, model_info
from nova.sessions.session import Session


def test_anthropic_cost_with_5m_and_1h_writes() -> None:
    usage = Usage(input_tokens=1_000, output_tokens=500, cache_read_tokens=10_000, cache_write_tokens=2_000)
    # Sonnet 4.5: 1,000 x 3 + 500 x 15 + 10,000 x 0.30 + 2,000 x 3.75 = 21,000 micro-dollars.
    assert cost_usd(usage, "claude-sonnet-4-5") == pytest.approx(0.021)
    # 1 h writes cost 2x input: 2,000 x 6 = 12,000 instead of 7,500.
    assert cost_usd(usage, "claude-sonnet-4-5", cache_ttl="1h") == pytest.approx(0.0255)
    # A dated id resolves to its entry.
    assert cost_usd(usage, "claude-sonnet-4-5-20250929") == pytest.approx(0.021)


def test_openai_cached_tokens_are_counted_once() -> None:
    usage = usage_from_chat({"prompt_tokens": 10_000, "completion_tokens": 100,
                             "prompt_tokens_details": {"cached_tokens": 8_000}})
    assert (usage.input_tokens, usage.cache_read_tokens, usage.context_tokens) == (2_000, 8_000, 10_000)
    # gpt-4o: 2,000 x 2.50 + 8,000 x 1.25 + 100 x 10 = 16,000 micro-dollars (not 10,000 x 2.50 on top).
    assert cost_usd(usage, "gpt-4o") == pytest.approx(0.016)
    same = usage_from_responses({"input_tokens": 10_000, "output_tokens": 100,
                                 "input_tokens_details": {"cached_tokens": 8_000}})
    assert same == usage


def test_unknown_model_cost_is_unknown_not_guessed() -> None:
    assert cost_usd(Usage(input_tokens=10), "my-local-llama") is None


def test_minimum_cacheable_lengths_live_in_the_model_table() -> None:
    assert model_info("claude-sonnet-4-5").min_cacheable_tokens == 1024  # type: ignore[union-attr]
    assert model_info("claude-haiku-4-5").min_cacheable_tokens == 4096  # type: ignore[union-attr]
    assert model_info("gpt-4o").min_cacheable_tokens == 1024  # type: ignore[union-attr]


def test_session_meta_keeps_totals(tmp_path: Path) -> None:
    session = Session.create(tmp_path, title="t", model="claude-sonnet-4-5")
    a = Usage(input_tokens=100, output_tokens=10, cache_read_tokens=1_000, cache_write_tokens=50)
    session.add_cost(a, cost_usd(a, "claude-sonnet-4-5") or 0.0)
    session.add_cost(a, cost_usd(a, "claude-sonnet-4-5") or 0.0)
    session.flush()
    meta = Session.open(tmp_path, session.id, readonly=True).meta
    assert (meta.usage.input_tokens, meta.usage.cache_read_tokens, meta.usage.cache_write_tokens) == (200, 2_000, 100)
    assert meta.cost_usd == pytest.approx(2 * (100 * 3 + 10 * 15 + 1_000 * 0.3 + 50 * 3.75) / 1e6)
    session.close()


def test_codex_cli_default_model_of_2026_has_its_price_and_window() -> None:
    # Codex CLI 0.104 rollouts name gpt-5.3-codex on every turn; unknown, a replay left them out.
    info = model_info("gpt-5.3-codex")
    assert info is not None and info.window == 400_000
    usage = Usage(input_tokens=1_000_000, cache_read_tokens=1_000_000, output_tokens=1_000_000)
    assert cost_usd(usage, "gpt-5.3-codex") == pytest.approx(1.75 + 0.175 + 14.0)


def test_claude_names_as_gateways_and_agent_configs_write_them_have_their_price() -> None:
    # OpenRouter ("anthropic/claude-sonnet-4.5"), a Cline OpenAI-compatible profile ("claude_4_5_opus"),
    # and the family after the version ("claude-4-sonnet"): unpriced, their sessions' cost was unknown
    # and they replayed at the default window.
    assert model_info("anthropic/claude-sonnet-4.5") == model_info("claude-sonnet-4-5")
    assert model_info("claude_4_5_opus") == model_info("claude-opus-4-5")
    assert model_info("claude-4-opus-20250514") == model_info("claude-opus-4")
    # Claude 3.x puts the version first in Anthropic's own names: a dot is all that differs.
    assert model_info("claude-3.7-sonnet") == model_info("claude-3-7-sonnet")
    assert model_info("claude-3-5-haiku-20241022") == model_info("claude-3-5-haiku")
    # Other families keep their dots.
    info = model_info("gpt-4.1-mini")
    assert info is not None and info.name == "gpt-4.1-mini"


def test_models_of_late_2026_recordings_are_priced() -> None:
    """Claude Code on Opus 4.7 and Codex on GPT-5.4 printed "cost unknown" and fell back to a 128k window,
    which made a real session read as dozens of requests a provider would refuse."""
    usage = Usage(input_tokens=1_000, output_tokens=100, cache_read_tokens=100_000, cache_write_tokens=2_000)
    # Opus 4.7: 1,000 x 5 + 100 x 25 + 100,000 x 0.50 + 2,000 x 6.25 = 70,000 micro-dollars.
    assert cost_usd(usage, "claude-opus-4-7") == pytest.approx(0.070)
    # A gateway's "-thinking" name is the same model.
    assert cost_usd(usage, "claude-opus-4-6-thinking") == cost_usd(usage, "claude-opus-4-6")
    info = model_info("gpt-5.4")
    assert info is not None and info.window == 400_000
    small = Usage(input_tokens=10_000, output_tokens=1_000, cache_read_tokens=100_000)
    # GPT-5.4: 10,000 x 2.50 + 100,000 x 0.25 + 1,000 x 15 = 65,000 micro-dollars.
    assert cost_usd(small, "gpt-5.4") == pytest.approx(0.065)


def test_a_prompt_over_the_long_context_line_bills_every_token_at_the_long_rates() -> None:
    under = Usage(input_tokens=2_000, output_tokens=1_000, cache_read_tokens=270_000)
    over = Usage(input_tokens=4_000, output_tokens=1_000, cache_read_tokens=270_000)
    # Under 272k: 2,000 x 2.50 + 270,000 x 0.25 + 1,000 x 15 = 87,500 micro-dollars.
    assert cost_usd(under, "gpt-5.4") == pytest.approx(0.0875)
    # Over it, the whole request at 2x input and 1.5x output: 4,000 x 5 + 270,000 x 0.50 + 1,000 x 22.50.
    assert cost_usd(over, "gpt-5.4") == pytest.approx(0.1775)
    # Claude Haiku 5.5 bills a prompt over 100k at 5x.
    haiku = Usage(input_tokens=150_000, output_tokens=1_000)
    assert cost_usd(haiku, "claude-haiku-5-5") == pytest.approx((150_000 * 0.5 + 1_000 * 2.5) / 1e6)
