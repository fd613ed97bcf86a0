"""`positions_after_repair`: an index counted in the recorded messages keeps its meaning in the repaired
history, whatever the repair merged, dropped or inserted (hand-worked cases and the property)."""

from __future__ import annotations

from hypothesis import given, settings

from nova.messages import Message, TextPart
from nova.sessions.repair import positions_after_repair, repair_history

from .conftest import assistant_call, results, user
from .test_repair import histories


def _held(m: Message) -> set[str]:
    merged = m.metadata.get("merged_from")
    return {m.id, *(merged if isinstance(merged, list) else ())}


def test_a_history_needing_no_repair_keeps_every_index() -> None:
    history = [user("fix it", "u1"), assistant_call("a1", "c1"), results("r1", "c1")]
    repaired, report = repair_history(history)
    assert not report.changed
    assert positions_after_repair(history, repaired) == [0, 1, 2, 3]


def test_merged_dropped_and_inserted_messages_shift_the_later_indexes() -> None:
    history = [
        user("the task", "u1"),
        user("and one more thing", "u2"),  # merged into u1
        assistant_call("a1", "c1"),  # its result is missing: a synthetic results message follows it
        Message(role="user", parts=(TextPart(""),), id="empty"),  # dropped
        assistant_call("a2", "c2"),
        results("r2", "c2"),
    ]
    repaired, report = repair_history(history)
    assert report.merged_messages == 1 and report.synthetic_results == ["c1"] and report.dropped_empty == 1
    assert [m.id for m in repaired] == ["u1", "a1", "a1.results", "a2", "r2"]
    positions = positions_after_repair(history, repaired)
    # Before u1: 0. Before u2: u2 is inside the merged u1 (position 0), which cannot be split, so the
    # index stops before the merge rather than fold words the caller kept. Before a1: 1; before the
    # dropped message: where the next kept one (a2) went, after a1's synthetic results; the end: the end.
    assert positions == [0, 0, 1, 3, 3, 4, 5]


def test_an_inserted_placeholder_moves_everything_one_on() -> None:
    history = [assistant_call("a1", "c1"), results("r1", "c1")]
    repaired, report = repair_history(history)
    assert report.added_placeholder
    assert positions_after_repair(history, repaired) == [1, 2, 3]


def test_a_reused_message_id_is_matched_to_its_own_occurrence() -> None:
    # Real recordings repeat ids; each occurrence keeps its place.
    history = [user("one", "dup"), assistant_call("a1"), user("two", "dup"), assistant_call("a2")]
    repaired, _ = repair_history(history)
    assert positions_after_repair(history, repaired) == [0, 1, 2, 3, 4]


@settings(max_examples=150, deadline=None)
@given(history=histories())
def test_nothing_from_index_i_on_lands_before_its_position(history: list[Message]) -> None:
    repaired, _ = repair_history(history)
    positions = positions_after_repair(history, repaired)
    assert len(positions) == len(history) + 1 and positions[-1] == len(repaired)
    assert positions == sorted(positions)
    where = {m.id: k for k, m in enumerate(history)}  # the generated ids are unique
    for i, at in enumerate(positions):
        before = {where[x] for m in repaired[:at] for x in _held(m) if x in where}
        assert all(k < i for k in before), (i, at)
        # And what came before i is before the position, unless it shares a message with something from i on.
        for k in range(i):
            holder = next((j for j, m in enumerate(repaired) if history[k].id in _held(m)), None)
            if holder is not None and holder >= at:
                assert any(where.get(x, -1) >= i for x in _held(repaired[holder])), (i, k)
