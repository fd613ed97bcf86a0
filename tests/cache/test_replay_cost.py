"""The replay cost model: simulated provider caches by hand, and sanity on a real trajectory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from nova.cli.commands.replay import replay_command
from nova.context.cache_sim import AnthropicCache, Block, OpenAICache
from nova.evaluation.replay import ReplayCall, replay_messages
from nova.sessions.importers import read_session_file
from nova.testing import mini_swe_trajectories

FILES = mini_swe_trajectories()
needs_data = pytest.mark.skipif(not FILES, reason="shared trajectories not available")


def blocks(*sizes: int, tag: str = "") -> list[Block]:
    return [Block(f"{tag}{i}:{s}".encode(), s) for i, s in enumerate(sizes)]


def test_anthropic_writes_then_reads_the_prefix() -> None:
    cache = AnthropicCache(min_tokens=1024)
    first = cache.call(blocks(2000, 500, 300), head=1, at=0.0)
    assert (first.cache_read_tokens, first.cache_write_tokens, first.input_tokens) == (0, 2800, 0)
    second = cache.call(blocks(2000, 500, 300, 400, 100), head=1, at=10.0)
    assert (second.cache_read_tokens, second.cache_write_tokens) == (2800, 500)


def test_anthropic_minimum_ttl_and_lookback() -> None:
    short = AnthropicCache(min_tokens=1024).call(blocks(300, 200), head=1, at=0.0)
    assert (short.cache_write_tokens, short.input_tokens) == (0, 500)  # under the minimum: nothing cached
    cache = AnthropicCache(min_tokens=1024)
    cache.call(blocks(2000, 100), head=1, at=0.0)
    expired = cache.call(blocks(2000, 100, 50), head=1, at=301.0)
    assert expired.cache_read_tokens == 0 and expired.cache_write_tokens == 2150
    far = AnthropicCache(min_tokens=1024)
    far.call(blocks(2000, 100), head=1, at=None)
    # 25 new blocks after the last breakpoint: past the 20-block lookback the message entry is not found,
    # but the breakpoint on the first message still reads the head and that message.
    grown = far.call(blocks(2000, 100, *([10] * 25)), head=1, at=None)
    assert grown.cache_read_tokens == 2100


def test_openai_caches_from_1024_in_128_token_steps() -> None:
    cache = OpenAICache()
    assert cache.call(blocks(1000), head=0, at=0.0).cache_read_tokens == 0
    assert cache.call(blocks(1000, 50), head=0, at=1.0).cache_read_tokens == 0  # 1,000 < 1,024
    cache.call(blocks(1000, 300), head=0, at=2.0)
    again = cache.call(blocks(1000, 300, 20), head=0, at=3.0)
    assert again.cache_read_tokens == 1280 and again.input_tokens == 1320 - 1280  # 1,300 -> 10 x 128
    assert again.cache_write_tokens == 0


@needs_data
def test_naive_baselines_on_a_real_trajectory() -> None:
    session = read_session_file(FILES[0])
    kw = dict(system=session.system, window=200_000, price_model="claude-sonnet-4-5")
    uncached = replay_messages(session.messages, policy="naive-uncached", **kw)  # type: ignore[arg-type]
    cached = replay_messages(session.messages, policy="naive-cached", **kw)  # type: ignore[arg-type]
    assert uncached.cache_hit_rate == 0.0 and uncached.uncached_input_tokens == uncached.input_tokens
    # Every call is priced at the model the recording names (this trajectory ran on Gemini), not --price.
    assert uncached.cost_usd == pytest.approx(uncached.input_tokens * 2 / 1e6)
    assert cached.cache_hit_rate > 0.9
    assert cached.cache_read_tokens + cached.cache_write_tokens + cached.uncached_input_tokens == cached.input_tokens
    assert cached.cost_usd is not None and cached.cost_usd < 0.3 * uncached.cost_usd
    assert cached.output_cost_usd == uncached.output_cost_usd  # the agent's output is priced apart


@needs_data
def test_nova_counts_a_summary_call_per_compaction() -> None:
    session = read_session_file(FILES[0])
    report = replay_messages(session.messages, system=session.system, window=32_000, policy="nova",
                             provider_cache="anthropic", summarizer_estimate=True, price_model="claude-sonnet-4-5")
    assert report.compactions >= 1 and report.summary_calls == report.compactions
    assert report.summary_output_tokens > 0
    # The summary call reads the prefix the previous call cached.
    assert report.summary_input_tokens > 0 and report.cache_hit_rate > 0.8


@needs_data
def test_replay_json_adds_the_cost_keys_when_asked() -> None:
    app = typer.Typer()
    app.command("replay")(replay_command)
    app.callback()(lambda: None)
    result = CliRunner().invoke(app, ["replay", str(FILES[0]), "--window", "64000", "--policy", "naive-cached",
                                      "--provider-cache", "anthropic", "--summarizer", "model-estimate",
                                      "--price", "claude-sonnet-4-5", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output.strip().splitlines()[-1])
    for key in ("cache_read_tokens", "cache_write_tokens", "uncached_input_tokens", "cache_hit_rate", "cost_usd",
                "input_tokens", "per_call", "compactions"):
        assert key in data
    assert data["policy"] == "naive-cached" and data["cache_hit_rate"] > 0.9 and data["cost_usd"] > 0
    bad = CliRunner().invoke(app, ["replay", str(FILES[0]), "--provider-cache", "gemini"])
    assert bad.exit_code == 2


def test_unknown_price_model_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no price"):
        replay_messages([], window=1000, price_model="nope")


@needs_data
def test_uncalibrated_the_prefix_model_reads_what_the_view_keeps() -> None:
    # The Gemini runs' recorded cache is a prefix cache: a replay against it is calibrated to Gemini's real,
    # best-effort hits, which scale every simulated read down alike. Without the calibration the prefix
    # model reads what Nova's view really keeps: every call after a compaction but the first reads all the
    # previous call sent except its observations block (the one part that moves; to OpenAI's 128-token
    # steps), so what it does not read is only what is new.
    from nova.context.cache_sim import OpenAICache, hit_rate, post_compaction_usage
    from nova.tokens import counter_for_model

    session = read_session_file(FILES[0])
    runs = {calibrate: replay_messages(session.messages, system=session.system, window=64_000, policy="nova",
                                       counter=counter_for_model("gemini-3-pro"), provider_cache="openai",
                                       summarizer_estimate=True, price_model="claude-sonnet-4-5", calibrate=calibrate)
            for calibrate in (True, False)}
    calls = runs[False].per_call
    assert runs[False].compactions >= 1
    first = next(i for i, c in enumerate(calls) if c.event == "compaction")
    later = [i for i in range(first + 1, len(calls)) if not calls[i].event]  # not a call that changed the view
    assert later
    def counter_units(call: ReplayCall, tokens: int) -> float:
        # Each call's figures are scaled to what the provider would have counted, by the ratio at that
        # call (nova.evaluation.recorded_scale); the cache decides in the counter's units.
        return tokens * call.counted / call.input_tokens

    for i in later:
        previous = calls[i - 1]
        kept = int(counter_units(previous, previous.cache.context_tokens - previous.composition.get("observations", 0)))
        read = counter_units(calls[i], calls[i].cache.cache_read_tokens)
        assert read >= kept // OpenAICache.STEP * OpenAICache.STEP - 2, i  # 2: the scaling's rounding
    rates = {c: hit_rate(post_compaction_usage([(x.event == "compaction", x.cache) for x in r.per_call]))
             for c, r in runs.items()}
    assert rates[True] is not None and rates[False] is not None and rates[True] < rates[False]
