"""Property: whatever the history (parallel tool calls, thinking loops, huge outputs, earlier summaries),
after spill, snip and compact every view keeps tool pairing and thinking intact and loses nothing."""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nova.context.budget import ContextBudget
from nova.context.controller import ContextController
from nova.context.extensions import ViewRequest
from nova.history.invariants import check_nothing_lost, check_thinking_integrity, check_tool_pairing
from nova.messages import Message, Part, SummaryPart, TextPart, ThinkingPart, ToolResultPart, ToolUsePart
from nova.sessions.link import SessionLink
from nova.settings import CompactionConfig, SpillConfig
from nova.tokens import CL100K_PROFILE, HeuristicCounter, MemoCounter, TokenLedger

from .helpers import filler

SIZES = st.one_of(st.integers(0, 400), st.integers(400, 5000), st.integers(5000, 20000), st.just(70000))

step = st.fixed_dictionaries({
    "calls": st.lists(SIZES, min_size=1, max_size=3),  # parallel tool calls, output sizes
    "thinking": st.booleans(),
    "user_after": st.booleans(),
    "text": st.integers(0, 600),
})


def build(steps: list[dict], earlier_summary: bool) -> list[Message]:
    messages: list[Message] = []
    if earlier_summary:
        messages.append(Message(role="user", parts=(SummaryPart("[Previous conversation summary]\nold facts",
                                                                 covers=("gone_1", "gone_2")),),
                                origin="summary"))
    messages.append(Message.user("Fix the parser; do not change the public API."))
    n = 0
    for i, s in enumerate(steps):
        parts: list[Part] = []
        if s["thinking"]:
            parts.append(ThinkingPart(thinking=f"thinking {i} " + filler(200, i), signature=f"sig{i}"))
        parts.append(TextPart(f"step {i} " + filler(s["text"], i)))
        uses = []
        for size in s["calls"]:
            n += 1
            use = ToolUsePart(id=f"toolu_{n:05d}", name="bash", input={"command": f"cat src/mod_{n}.py"})
            uses.append((use, size))
            parts.append(use)
        messages.append(Message(role="assistant", parts=tuple(parts)))
        messages.append(Message(role="user", parts=tuple(
            ToolResultPart(use.id, filler(size, n), is_error=size % 7 == 0) for use, size in uses)))
        if s["user_after"]:
            messages.append(Message.user(f"user note {i}: keep going"))
    messages.append(Message(role="assistant", parts=(TextPart("done"),)))
    return messages


def play(steps: list[dict], earlier: bool, *, window: int, preserve: int, session_dir: Path
         ) -> tuple[list[Message], dict[str, Message], ContextController]:
    """The recorded history through a controller, a view before each model call, each checked as it is
    made; returns the final view, the raw messages by id and the controller."""
    recorded = build(steps, earlier)
    config = CompactionConfig(snip_preserve_last_n_messages=preserve, snip_tool_output_token_budget=1500,
                              hard_margin_tokens=500)
    budget = replace(ContextBudget.derive(config, window),
                     spill=SpillConfig(max_result_chars=50000, max_message_chars=100000))
    controller = ContextController(config=config, budget=budget, ledger=TokenLedger(MemoCounter(HeuristicCounter(
        CL100K_PROFILE))), session=SessionLink(dir=session_dir))
    raw = {m.id: m for m in recorded if m.origin is None}
    history: list[Message] = []
    calls: dict[str, ToolUsePart] = {}
    for message in recorded:
        if message.role == "assistant":
            history = controller.prepare_view(request=ViewRequest(history=history, system="sys"))
            assert not check_tool_pairing(history)
            assert not check_thinking_integrity(history, raw)
            calls.update({u.id: u for u in message.tool_uses()})
        if message.has("tool_result"):
            message = message.with_parts([controller.process_result(call=calls[p.tool_use_id], result=p)
                                          if isinstance(p, ToolResultPart) else p for p in message.parts])
        history.append(message)
    return controller.prepare_view(request=ViewRequest(history=history, system="sys")), raw, controller


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(step, min_size=1, max_size=14), earlier=st.booleans(),
       window=st.sampled_from([8000, 12000, 20000, 40000]), preserve=st.integers(0, 6))
def test_views_keep_invariants(steps: list[dict], earlier: bool, window: int, preserve: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        final, raw, controller = play(steps, earlier, window=window, preserve=preserve, session_dir=Path(tmp) / "s")
        assert not check_tool_pairing(final)
        # Nothing lost: every raw message is in view or covered, every cut text is on disk whole.
        assert not check_nothing_lost(final, raw)
        assert controller.stats.breaker_trips == 0

