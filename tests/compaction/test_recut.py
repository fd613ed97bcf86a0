"""A text cut before (a snipped tool output) that must be cut again to fit the window is cut again from
its original: the older note and its pointer are never sliced in two, so every cut output still names a
file that holds the original. Found by the history property; whether the old note is sliced depends on
message ids, so the history is replayed several times."""

from __future__ import annotations

import tempfile
from pathlib import Path

from nova.history.invariants import check_nothing_lost, check_tool_pairing

from .test_property import play

STEPS = [{"calls": [0], "thinking": False, "user_after": True, "text": 0},
         {"calls": [400, 6209, 1727], "thinking": False, "user_after": True, "text": 0},
         {"calls": [9815, 70000, 70000], "thinking": False, "user_after": True, "text": 0},
         {"calls": [1361, 2036, 5006], "thinking": True, "user_after": False, "text": 184},
         {"calls": [20], "thinking": True, "user_after": False, "text": 413},
         {"calls": [492, 6756], "thinking": False, "user_after": False, "text": 478}]


def test_outputs_cut_twice_still_point_at_their_original() -> None:
    for _ in range(12):
        with tempfile.TemporaryDirectory() as tmp:
            final, raw, _ = play(STEPS, False, window=8000, preserve=1, session_dir=Path(tmp) / "s")
            assert not check_tool_pairing(final)
            assert not check_nothing_lost(final, raw)
