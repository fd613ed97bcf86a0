"""A text cut before (a snipped tool output) that must be cut again to fit the window is cut again from
its original: the older note and its pointer are never sliced in two, so every cut output still names a
file that holds the original. Found by the history property; whether the old note is sliced depends on
message ids, so the history is replayed several times."""

from __future__ import annotations

import tempfile
from pathlib import Path

from nova.context.budget import ContextBudget
from nova.context.controller import ContextController
from nova.extensions import ViewRequest
from nova.invariants import check_nothing_lost, check_tool_pairing
from nova.messages import Message, ToolResultPart, ToolUsePart
from nova.settings import CompactionConfig, SpillConfig

from .test_property import build

STEPS = [{"calls": [0], "thinking": False, "user_after": True, "text": 0},
         {"calls": [400, 6209, 1727], "thinking": False, "user_after": True, "text": 0},
         {"calls": [9815, 70000, 70000], "thinking": False, "user_after": True, "text": 0},
         {"calls": [1361, 2036, 5006], "thinking": True, "user_after": False, "text": 184},
         {"calls": [20], "thinking": True, "user_after": False, "text": 413},
         {"calls": [492, 6756], "thinking": False, "user_after": False, "text": 478}]


def _final_view(tmp: str) -> tuple[list[Message], dict[str, Message]]:
    recorded = build(STEPS, False)
    config = CompactionConfig(snip_preserve_last_n_messages=1, snip_tool_output_token_budget=1500,
                              hard_margin_tokens=500)
    controller = ContextController(config=config, spill=SpillConfig(max_result_chars=50000, max_message_chars=100000),
                                   budget=ContextBudget.derive(config, 8000), session_dir=Path(tmp) / "s")
    raw = {m.id: m for m in recorded if m.origin is None}
    history: list[Message] = []
    calls: dict[str, ToolUsePart] = {}
    for message in recorded:
        if message.role == "assistant":
            history = controller.prepare_view(request=ViewRequest(history=history, system="sys"))
            calls.update({u.id: u for u in message.tool_uses()})
        if message.has("tool_result"):
            message = message.with_parts([controller.process_result(call=calls[p.tool_use_id], result=p)
                                          if isinstance(p, ToolResultPart) else p for p in message.parts])
        history.append(message)
    return controller.prepare_view(request=ViewRequest(history=history, system="sys")), raw


def test_outputs_cut_twice_still_point_at_their_original() -> None:
    for _ in range(12):
        with tempfile.TemporaryDirectory() as tmp:
            final, raw = _final_view(tmp)
            assert not check_tool_pairing(final)
            assert not check_nothing_lost(final, raw)
