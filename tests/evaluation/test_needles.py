"""Needle survival: planting facts in a recorded run, forcing compactions, and what must survive them."""

from __future__ import annotations

import pytest

from nova.context.summarize import is_user_message
from nova.evaluation.needles import DEPTHS, FACT_CLASSES, force_points, plant, survive
from nova.messages import Message, ToolResultPart, ToolUsePart
from nova.providers.base import assistant_message
from nova.sessions.importers import read_session_file
from nova.sessions.repair import repair_history
from nova.testing import mini_swe_trajectories
from nova.tokens import counter_for_model

FILES = mini_swe_trajectories()
needs_data = pytest.mark.skipif(not FILES, reason="shared trajectories not available")


def _run(exchanges: int) -> list[Message]:
    out = [Message.user("Fix the bug in pkg/mod.py.", id="task")]
    for i in range(exchanges):
        use = ToolUsePart(id=f"t{i}", name="bash", input={"command": f"cat f{i}.py"})
        out += [assistant_message(f"Let me look at f{i}.py.", [use]),
                Message(role="user", parts=(ToolResultPart(use.id, f"<returncode>0</returncode>\nline {i}"),),
                        id=f"r{i}")]
    return out


def test_planting_puts_one_episode_per_depth_between_exchanges() -> None:
    base = _run(40)
    planted = plant(base)
    assert len(planted.needles) == len(DEPTHS) * len(FACT_CLASSES)
    messages, repair = repair_history(planted.messages)
    assert not repair.changed  # nothing merged or moved: the episodes sit between whole exchanges
    assert len(messages) == len(base) + 6 * len(DEPTHS)
    users = {m.text for m in messages if is_user_message(m)}
    text = "\n".join(str(m.parts) for m in messages)
    for needle in planted.needles:
        assert needle.text in text
        if needle.kind == "constraint":
            assert needle.text in users  # a user message of its own, not text inside a tool result
    assert messages[planted.first_index].id.endswith("-ask")
    assert plant(base).needles == planted.needles  # same seed, same facts


def test_forced_points_end_at_the_final_view_and_never_split_a_call_from_its_result() -> None:
    planted = plant(_run(40))
    for n in (1, 3, 5, 10):
        points = force_points(planted, n)
        assert len(points) == n and points[-1] == len(planted.messages)
        assert all(planted.messages[p].role == "assistant" for p in points[:-1])
        assert points[0] > planted.first_index


@needs_data
@pytest.mark.parametrize("index", [0, 7])
def test_constraints_decisions_and_paths_survive_ten_forced_compactions_of_a_real_run(index: int) -> None:
    session = read_session_file(FILES[index])
    planted = plant(session.messages, seed=index)
    run = survive(planted, system=session.system, compactions=10, window=32_000,
                  counter=counter_for_model("gemini-3-pro"))
    # A forced compaction right after one of the controller's own has nothing to fold and is skipped.
    assert run.compactions >= 8
    lost = [(n.kind, n.depth, n.text) for n, ok in run.survived
            if not ok and n.kind in ("constraint", "decision", "path")]
    assert lost == []
