"""The `anthropic-clear-tool-uses` replay policy: Anthropic's context editing, simulated from its
documented behaviour (trigger, keep the newest tool uses, placeholder)."""

from __future__ import annotations

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
    assert whole == ["t9", "t10", "t11"]
    assert [u.id for m in report.final_view for u in m.tool_uses()] == [f"t{i}" for i in range(12)]
    assert report.requests_over_window == 0 and report.invariant_violations == 0
    naive = replay_messages(_session(12), window=16_000, policy="naive")
    assert report.peak_context_tokens < naive.peak_context_tokens


def test_under_the_trigger_nothing_is_cleared() -> None:
    report = replay_messages(_session(2), window=200_000, policy="anthropic-clear-tool-uses")
    assert all(r.content != CLEARED_PLACEHOLDER for m in report.final_view for r in m.tool_results())
