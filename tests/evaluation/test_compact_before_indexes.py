"""`compact_before` counts the messages as recorded (the order `nova sessions show` lists them), before the
repair that merges or drops some: `{len(messages)}` compacts the final view, and index `k` folds what was
recorded before message `k`, on a recording the repair renumbers."""

from __future__ import annotations

import pytest

from nova.evaluation.replay import replay_messages
from nova.messages import Message, TextPart, ToolResultPart, ToolUsePart
from nova.sessions.repair import repair_history
from nova.tokens.counters import CL100K_PROFILE, HeuristicCounter

COUNTER = HeuristicCounter(CL100K_PROFILE)
SYSTEM = "You are a careful coding agent."


def _recording() -> list[Message]:
    """A task typed as two user messages (the repair merges them), then exchanges where each result is
    followed by an empty user record (dropped): every recorded index after the first two shifts."""
    messages = [Message.user("Fix f3.py so the tests pass.", id="task"),
                Message.user("Keep the public API unchanged.", id="task-2")]
    for i in range(8):
        call = ToolUsePart(id=f"c{i}", name="bash", input={"command": f"cat f{i}.py"})
        messages.append(Message(role="assistant", parts=(call,), id=f"a{i}", created_at=1000.0 + i))
        messages.append(Message(role="user", parts=(ToolResultPart(f"c{i}", f"line{i} " * 400),), id=f"r{i}",
                                created_at=1000.5 + i))
        messages.append(Message(role="user", parts=(TextPart(""),), id=f"empty{i}", created_at=1000.6 + i))
    messages.append(Message.assistant("Done.", id="final", created_at=2000.0))
    return messages


def test_the_recording_is_renumbered_by_its_repair() -> None:
    messages = _recording()
    repaired, report = repair_history(messages)
    assert report.merged_messages == 1 and report.dropped_empty == 8
    assert len(repaired) == len(messages) - 9


def test_compacting_before_the_final_view_counts_the_recorded_messages() -> None:
    messages = _recording()
    plain = replay_messages(messages, system=SYSTEM, window=128_000, policy="nova", counter=COUNTER)
    assert plain.compactions == 0
    report = replay_messages(messages, system=SYSTEM, window=128_000, policy="nova", counter=COUNTER,
                             compact_before={len(messages)})
    assert report.compactions == 1
    assert report.view_changes[-1].forced and report.view_changes[-1].call == report.calls + 1


def test_an_index_folds_exactly_what_was_recorded_before_it() -> None:
    messages = _recording()
    at = next(i for i, m in enumerate(messages) if m.id == "a5")  # 17 as recorded; 12 once repaired
    assert at == 17
    report = replay_messages(messages, system=SYSTEM, window=128_000, policy="nova", counter=COUNTER,
                             compact_before={at})
    assert report.compactions == 1
    change = report.view_changes[0]
    assert change.forced
    # The compaction came before the call answered by a5, the sixth: its view is the first to show it.
    assert change.call == 6
    # Nothing recorded from a5 on was there to fold, and the results before it were (those the policy
    # did not keep whole).
    seen = {e.id for e in (*change.dropped, *change.kept)}
    assert seen.isdisjoint({"a5", "r5", "a6", "r6", "a7", "r7", "final"})
    assert {"a0", "r0", "a4", "r4"} <= seen


def test_an_index_outside_the_recording_is_an_error_naming_it() -> None:
    messages = _recording()
    with pytest.raises(ValueError, match=rf"message index {len(messages) + 1} is outside the recording's 0-"
                                         rf"{len(messages)}"):
        replay_messages(messages, system=SYSTEM, window=128_000, policy="nova", counter=COUNTER,
                        compact_before={len(messages) + 1})
    with pytest.raises(ValueError, match="message index -1"):
        replay_messages(messages, system=SYSTEM, window=128_000, policy="nova", counter=COUNTER,
                        compact_before={-1})
