"""The `recorded` policy replays what the recording sent, and the real bill is its recorded usage priced
per call at that call's model."""

from __future__ import annotations

import pytest

from nova.evaluation.replay import ALL_POLICIES, billed_usd, replay_messages
from nova.messages import Message, SummaryPart, ToolResultPart, ToolUsePart
from nova.model import Usage
from nova.providers.pricing import model_info, usage_cost

SONNET = "claude-sonnet-4-5-20250929"
HAIKU = "us.anthropic.claude-haiku-4-5-20251001-v1:0"


def _reply(text: str, usage: Usage, model: str, at: float) -> Message:
    return Message.assistant(text, created_at=at, metadata={"usage": usage.to_dict(), "model": model})


def _recording() -> list[Message]:
    first = Message.user("fix the parser " + "word " * 3000, created_at=1.0)
    reply1 = _reply("looking", Usage(input_tokens=10, cache_write_tokens=19_000, output_tokens=50), SONNET, 2.0)
    user2 = Message.user("more " * 2000, created_at=3.0)
    # Another model's first call reads nothing the first model's call wrote: each model has its own cache.
    reply2 = _reply("done", Usage(input_tokens=5, cache_write_tokens=21_100, output_tokens=40), HAIKU, 4.0)
    summary = Message(role="user", parts=(SummaryPart("the parser was fixed", covers=(first.id, reply1.id, user2.id,
                                                                                       reply2.id)),),
                      created_at=5.0, metadata={"compaction": {"source": "claude-code"}})
    user3 = Message.user("now the tests", created_at=6.0)
    reply3 = _reply("ok", Usage(input_tokens=3, cache_write_tokens=1_200, output_tokens=20), SONNET, 7.0)
    return [first, reply1, user2, reply2, summary, user3, reply3]


def test_bedrock_and_vertex_names_have_their_models_prices() -> None:
    assert model_info(HAIKU) == model_info("claude-haiku-4-5")
    assert model_info("converse/jp.anthropic.claude-haiku-4-5-20251001-v1:0") == model_info("claude-haiku-4-5")
    assert model_info("claude-sonnet-4-5@20250929") == model_info("claude-sonnet-4-5")
    assert model_info("google/gemini-2.5-flash") is not None
    assert model_info("no-such-model-7") is None


def test_one_hour_writes_are_priced_at_their_rate() -> None:
    info = model_info("claude-sonnet-4-5")
    assert info is not None
    five = usage_cost(Usage(cache_write_tokens=1_000_000), info)
    hour = usage_cost(Usage(cache_write_tokens=1_000_000, cache_write_1h_tokens=1_000_000), info)
    assert (five, hour) == (pytest.approx(3.75), pytest.approx(6.0))


def test_billed_is_each_calls_usage_at_its_own_model() -> None:
    messages = _recording()
    sonnet, haiku = model_info(SONNET), model_info(HAIKU)
    assert sonnet is not None and haiku is not None
    expected = (usage_cost(Usage(input_tokens=10, cache_write_tokens=19_000, output_tokens=50), sonnet)
                + usage_cost(Usage(input_tokens=5, cache_write_tokens=21_100, output_tokens=40), haiku)
                + usage_cost(Usage(input_tokens=3, cache_write_tokens=1_200, output_tokens=20), sonnet))
    billed, unpriced = billed_usd(messages)
    assert billed == pytest.approx(expected) and unpriced == ()
    unknown = [m.with_metadata(model="house-model-1") if m.role == "assistant" else m for m in messages]
    assert billed_usd(unknown) == (None, ("house-model-1",))


def test_recorded_replays_its_own_compaction_and_usage_and_reproduces_the_bill() -> None:
    messages = _recording()
    assert ALL_POLICIES[0] == "recorded"
    report = replay_messages(messages, window=200_000, policy="recorded")
    assert [c.input_tokens for c in report.per_call] == [19_010, 21_105, 1_203]
    assert report.peak_context_tokens == 21_105 and report.recorded_calls == 3
    assert report.compactions == 1 and report.per_call[2].event == "compaction"
    # The summary replaced what it covered: the last view is the summary and what came after it.
    shown = {m.id for m in report.final_view}
    assert report.final_view[0].has("summary") and not shown & {m.id for m in messages[:4]}
    assert report.billed_usd is not None and report.cost_usd is not None and report.output_cost_usd is not None
    assert (report.cost_usd + report.output_cost_usd) / report.billed_usd == pytest.approx(1.0, abs=0.05)
    data = report.to_json()
    assert data["billed_usd"] == pytest.approx(report.billed_usd) and data["cost_usd"] is not None
    # `naive` keeps everything before the boundary and the summary too, and is priced without --price.
    naive = replay_messages(messages, window=200_000, policy="naive")
    assert naive.peak_context_tokens > report.peak_context_tokens and naive.cost_usd is not None


def test_an_unknown_model_is_unknown_not_free() -> None:
    messages = [m.with_metadata(model="house-model-1") if m.role == "assistant" else m for m in _recording()]
    report = replay_messages(messages, window=200_000, policy="recorded")
    assert report.cost_usd is None and report.billed_usd is None
    assert report.to_json()["unpriced_models"] == ["house-model-1"]


def test_a_result_merged_into_the_recorded_summary_goes_with_the_call_it_answers() -> None:
    # Claude Code and Codex often compact right after a tool result: the recording has the call, its
    # result, then the summary, and the resume repair merges the result and the summary (both user).
    call = Message(role="assistant", parts=(ToolUsePart(id="t1", name="bash", input={"command": "ls"}),),
                   created_at=2.0, metadata={"usage": Usage(input_tokens=10, cache_write_tokens=9_000,
                                                            output_tokens=5).to_dict(), "model": SONNET})
    result = Message(role="user", parts=(ToolResultPart(tool_use_id="t1", content="a.py"),), created_at=3.0)
    summary = Message(role="user", parts=(SummaryPart("listed the files", covers=()),), created_at=4.0,
                      metadata={"compaction": {"source": "claude-code"}})
    after = _reply("next", Usage(input_tokens=3, cache_write_tokens=800, output_tokens=5), SONNET, 5.0)
    messages = [Message.user("list the files", created_at=1.0), call, result, summary, after]
    report = replay_messages(messages, window=200_000, policy="recorded")
    assert report.compactions == 1
    assert report.invariant_violations == 0, report.violations
    assert not any(m.has("tool_result") for m in report.final_view)
    assert report.final_view[0].has("summary")


def test_a_recording_that_mixes_1h_and_5m_writes_is_priced_in_its_own_mix() -> None:
    """Claude Code writes part of its cache for an hour and part for 5 minutes. Pricing every simulated
    write at the 1-hour rate once a recording showed any made `recorded` cost 1.04x the real bill."""
    first = Message.user("fix the parser " + "word " * 3000, created_at=1.0)
    calls = [first]
    for i in range(6):
        # Each call writes what is new, two thirds of it for an hour.
        usage = Usage(input_tokens=3, cache_read_tokens=3_000 + 4_000 * i, cache_write_tokens=3_000,
                      cache_write_1h_tokens=2_000, output_tokens=30)
        calls += [_reply(f"step {i}", usage, SONNET, 2.0 + 2 * i), Message.user("more " * 2500, created_at=3.0 + 2 * i)]
    report = replay_messages(calls[:-1], window=200_000, policy="recorded")
    assert report.billed_usd is not None and report.cost_usd is not None and report.output_cost_usd is not None
    assert (report.cost_usd + report.output_cost_usd) / report.billed_usd == pytest.approx(1.0, abs=0.01)
