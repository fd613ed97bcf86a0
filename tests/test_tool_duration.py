"""A tool call's duration is the time the tool ran, not the time it waited for someone to approve it:
the timeline's "in 0.13s" and the recorded event would otherwise count a coffee break as bash time.

Time here is `InstantClock`'s: the approver waits 300 s and the tool works 2 s on that clock, so the
figures are exact and no test measures real time."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nova import events as ev
from nova.agent.loop import Agent
from nova.agent.parts import ModelBinding, RunLimits, Toolbox
from nova.context.budget import ContextBudget
from nova.sessions.link import SessionLink
from nova.settings import CompactionConfig, PermissionsConfig
from nova.testing import InstantClock, ScriptedProvider, call, reply
from nova.tokens import TokenLedger, counter_for_model
from nova.tools import default_registry
from nova.tools.approval import Answer, RememberingApprover
from nova.tools.base import ToolContext, ToolOutput
from nova.tools.permissions import PermissionPolicy, PermissionRequest

APPROVAL_WAIT_S = 300.0
TOOL_WORK_S = 2.0


class SlowTool:
    """A write-like tool (so it needs approval) that works `TOOL_WORK_S` on the test clock."""

    name = "slow_write"
    description = "Writes slowly."
    input_schema: Mapping[str, Any] = {"type": "object", "properties": {}}
    read_only = False

    def __init__(self, clock: InstantClock) -> None:
        self.clock = clock

    def run(self, input: Mapping[str, Any], ctx: ToolContext) -> ToolOutput:
        self.clock.wait(TOOL_WORK_S, threading.Event())
        return ToolOutput(content="written")


def _agent(tmp_path: Path, clock: InstantClock, approve: Answer, seen: list[ev.Event]) -> Agent:
    asked: list[PermissionRequest] = []

    def person(request: PermissionRequest) -> Answer:
        asked.append(request)
        clock.wait(APPROVAL_WAIT_S, threading.Event())  # five minutes before the key is pressed
        return approve

    registry = default_registry()
    registry.register(SlowTool(clock))
    bus = ev.EventBus()
    bus.subscribe(seen.append)
    provider = ScriptedProvider([reply("Writing.", [call("slow_write")]), reply("Done.")])
    return Agent(
        model=ModelBinding(provider=provider, name="claude-sonnet-4-5"),
        toolbox=Toolbox(tools=registry, cwd=tmp_path,
                        policy=PermissionPolicy(PermissionsConfig(), interactive=True, cwd=tmp_path,
                                                ask=RememberingApprover(person))),
        budget=ContextBudget.derive(CompactionConfig(), 200_000),
        ledger=TokenLedger(counter_for_model("claude-sonnet-4-5")),
        session=SessionLink(recorder=None, bus=bus),
        limits=RunLimits(max_steps=5),
        clock=clock,
    )


def test_the_duration_of_an_approved_call_leaves_out_the_wait_for_approval(tmp_path: Path) -> None:
    clock = InstantClock()
    seen: list[ev.Event] = []
    agent = _agent(tmp_path, clock, Answer.ONCE, seen)
    result = agent.run_turn("write it")
    assert result.text == "Done."
    [finished] = [e for e in seen if isinstance(e, ev.ToolCallFinished)]
    assert finished.output == "written"
    assert finished.duration_s == TOOL_WORK_S
    assert clock.now() >= APPROVAL_WAIT_S + TOOL_WORK_S  # the wait did happen, on the same clock


def test_a_denied_call_ran_for_no_time_however_long_the_question_waited(tmp_path: Path) -> None:
    clock = InstantClock()
    seen: list[ev.Event] = []
    agent = _agent(tmp_path, clock, Answer.DENY, seen)
    agent.run_turn("write it")
    [finished] = [e for e in seen if isinstance(e, ev.ToolCallFinished)]
    assert finished.is_error and finished.duration_s == 0.0
