"""The `anthropic-clear-tool-uses` replay policy: Anthropic's context editing, simulated from its
documented behaviour (trigger, keep the newest tool uses, placeholder)."""

from __future__ import annotations

from itertools import pairwise

from nova.evaluation.replay import ALL_POLICIES, CLEARED_PLACEHOLDER, replay_messages
from nova.messages import Message, ToolResultPart, ToolUsePart


def _session(steps: int) -> list[Message]:
    messages = [Message.user("find the bug", id="u0", created_at=1.0)]
    for i in range(steps):
        messages.append(Message(role="assistant", parts=(ToolUsePart(f"t{i}", "read_file", {"path": f"f{i}.py"}),),
                                id=f"a{i}", created_at=2.0 + i))
        messages.append(Message(role="user", parts=(ToolResultPart(f"t{i}", f"line {i}\n" * 400),), id=f"r{i}",
                                created_at=2.5 + i))
    messages.append(Message.assistant("done", id="end", created_at=100.0))
    return messages


def test_clear_tool_uses_keeps_the_three_newest_results_and_the_calls() -> None:
    assert "anthropic-clear-tool-uses" in ALL_POLICIES
    report = replay_messages(_session(12), window=16_000, policy="anthropic-clear-tool-uses")
    results = [r for m in report.final_view for r in m.tool_results()]
    whole = [r.tool_use_id for r in results if r.content != CLEARED_PLACEHOLDER]
    # The newest results stay whole (at least the three the last clearing kept, and any that came after
    # it); every older one is cleared.
    assert whole[-3:] == ["t9", "t10", "t11"] and whole == [f"t{i}" for i in range(12 - len(whole), 12)]
    assert len(whole) < 12
    assert [u.id for m in report.final_view for u in m.tool_uses()] == [f"t{i}" for i in range(12)]
    assert report.requests_over_window == 0 and report.invariant_violations == 0
    naive = replay_messages(_session(12), window=16_000, policy="naive")
    assert report.peak_context_tokens < naive.peak_context_tokens


def test_under_the_trigger_nothing_is_cleared() -> None:
    report = replay_messages(_session(2), window=200_000, policy="anthropic-clear-tool-uses")
    assert all(r.content != CLEARED_PLACEHOLDER for m in report.final_view for r in m.tool_results())


def test_the_cleared_prefix_stays_until_the_view_passes_the_trigger_again() -> None:
    # Documented: each clearing invalidates the cache from the first result it cleared, and the requests
    # after it reuse the new prefix. Clearing the fourth newest result on every call over the trigger
    # instead would rewrite the cache from the oldest cleared result on each of them.
    report = replay_messages(_session(40), window=16_000, policy="anthropic-clear-tool-uses",
                             provider_cache="anthropic", price_model="claude-sonnet-4-5")
    assert report.requests_over_window == 0
    first = next(i for i, c in enumerate(report.per_call) if c.input_tokens < report.per_call[i - 1].input_tokens)
    after = report.per_call[first:]
    rewrites = [c for c in after if c.cache.cache_write_tokens > 2_000]
    assert 1 <= len(rewrites) <= len(after) // 3
    # A call that clears nothing reads everything the call before it sent.
    for before, call in pairwise(after):
        if call.cache.cache_write_tokens <= 2_000:
            assert call.cache.cache_read_tokens >= before.input_tokens - 50
