"""The budget holds at every window and on every message (property test).

Generated histories, windows from 4k to 1M, single messages up to three times the window (a pasted
user message, an assistant message, a tool result: a file read whole): every request the real agent
loop sends fits the window, holds no tool-pairing violation, and the compaction breaker never trips.
When the fixed prompt alone is over the window, the one error says so with the sizes."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, note, settings
from hypothesis import strategies as st

from nova.agent.loop import Agent
from nova.agent.parts import ModelBinding, Toolbox
from nova.context.budget import ContextBudget
from nova.context.controller import ContextController, FixedPrompt
from nova.errors import PromptTooLarge
from nova.history.invariants import check_tool_pairing
from nova.model import ModelRequest
from nova.providers.scripted import FunctionProvider, call, reply
from nova.sessions.link import SessionLink
from nova.settings import CompactionConfig, PermissionsConfig
from nova.testing import InstantClock
from nova.tokens import MemoCounter, TokenLedger, count_message, count_system, count_tools
from nova.tokens.counters import CL100K_PROFILE, HeuristicCounter
from nova.tools import default_registry
from nova.tools.permissions import PermissionPolicy

COUNTER = HeuristicCounter(CL100K_PROFILE)
WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda", "mu"]
_TEXT = " ".join(WORDS[(i * 5) % len(WORDS)] for i in range(4000))


def text_of(tokens: int, seed: int) -> str:
    """Word text of about `tokens` tokens (built by repetition: cheap even at millions of tokens)."""
    chars = max(1, tokens * 5)
    start = (seed * 31) % 500
    block = _TEXT[start:] + " " + _TEXT[:start]
    return (block * (chars // len(block) + 1))[:chars]


def request_tokens(request: ModelRequest) -> int:
    return (count_system(request.system, COUNTER) + count_tools(request.tools, COUNTER)
            + sum(count_message(m, COUNTER) for m in request.messages))


turn = st.fixed_dictionaries({
    "user": st.floats(0.0, 3.0),        # the user's message, in windows
    "assistant": st.floats(0.0, 3.0),   # the assistant's text before its tool call
    "result": st.floats(0.0, 3.0),      # the file it reads whole
    "small": st.booleans(),             # or all three small (a plain turn)
})


def run_turns(window: int, turns: list[dict[str, float | bool]], tmp: Path) -> tuple[list[int], Agent]:
    config = CompactionConfig()
    budget = ContextBudget.derive(config, window)
    controller = ContextController(config=config, budget=budget, ledger=TokenLedger(MemoCounter(COUNTER)),
                                   session=SessionLink(dir=tmp / "session"),
                                   prompt=FixedPrompt(system="sys", tools=default_registry().specs()))
    sizes: list[int] = []
    plan: list[dict[str, float | bool]] = []

    def answer(request: ModelRequest) -> reply:
        sizes.append(request_tokens(request))
        assert not check_tool_pairing(list(request.messages))
        step = plan[0]
        if not step.get("called"):
            step["called"] = True
            size = 0.01 if step["small"] else float(step["assistant"])
            return reply(text_of(int(size * window), len(sizes)), [call("read_file", path="big.txt")])
        return reply("done")

    agent = Agent(model=ModelBinding(provider=FunctionProvider(answer), name="claude-sonnet-4-5"),
                  toolbox=Toolbox(tools=default_registry(), cwd=tmp,
                                  policy=PermissionPolicy(PermissionsConfig(), interactive=False, yes=True)),
                  budget=budget, system_prompt="sys", session=SessionLink(dir=controller.session_dir),
                  extensions=[controller], ledger=controller.ledger, clock=InstantClock())
    for i, t in enumerate(turns):
        small = bool(t["small"])
        (tmp / "big.txt").write_text(text_of(int((0.01 if small else float(t["result"])) * window), i) + "\n")
        plan[:] = [dict(t)]
        agent.run_turn(text_of(max(1, int((0.01 if small else float(t["user"])) * window)), i))
    assert controller.stats.breaker_trips == 0
    return sizes, agent


def check_no_request_over_the_window(window: int, turns: list[dict[str, float | bool]]) -> None:
    note(f"window={window} turns={turns}")
    with tempfile.TemporaryDirectory() as tmp:
        sizes, agent = run_turns(window, turns, Path(tmp))
    assert sizes and max(sizes) <= window, (max(sizes), window)
    # The transcript side: history keeps every user message (cut in view only, never dropped unseen).
    assert agent.history


def _turn(user: float, assistant: float, result: float, small: bool = False) -> dict[str, float | bool]:
    return {"user": user, "assistant": assistant, "result": result, "small": small}


turns = st.lists(turn, min_size=1, max_size=4)


@st.composite
def windows_and_turns(draw: st.DrawFn) -> tuple[int, list[dict[str, float | bool]]]:
    """Any window up to 200k, with fewer turns at the largest: a turn costs in proportion to its window
    (its texts run to three windows)."""
    window = draw(st.sampled_from([4_000, 8_000, 16_000, 32_000, 64_000, 200_000]))
    return window, draw(st.lists(turn, min_size=1, max_size=4 if window <= 64_000 else 2))


# The fast tier draws the small windows, and always runs the real 200k window with a pasted message
# over it and the smallest window with every message over it, a plain turn and then a near-full one;
# the slow tier draws every window up to 200k and always runs 1M with a message over it (one such turn
# is seconds of counting: drawn, four of them at 1M ran past the test timeout).
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(window=st.sampled_from([4_000, 8_000, 16_000, 32_000]), turns=turns)
@example(window=200_000, turns=[_turn(1.2, 0.05, 0.1)])
@example(window=4_000, turns=[_turn(3.0, 3.0, 3.0), _turn(0, 0, 0, small=True), _turn(0.9, 1.0, 1.1)])
def test_no_request_over_the_window(window: int, turns: list[dict[str, float | bool]]) -> None:
    check_no_request_over_the_window(window, turns)


@pytest.mark.slow
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=windows_and_turns())
@example(case=(1_000_000, [_turn(1.1, 0.05, 0.2)]))
def test_no_request_over_any_window_up_to_a_million(case: tuple[int, list[dict[str, float | bool]]]) -> None:
    check_no_request_over_the_window(*case)


def test_a_fixed_prompt_over_the_window_is_one_clear_error(tmp_path: Path) -> None:
    window = 4_000
    budget = ContextBudget.derive(CompactionConfig(), window)
    system = text_of(5_000, 1)
    controller = ContextController(budget=budget, ledger=TokenLedger(MemoCounter(COUNTER)),
                                   session=SessionLink(dir=tmp_path / "s"),
                                   prompt=FixedPrompt(system=system, tools=default_registry().specs()))
    agent = Agent(model=ModelBinding(provider=FunctionProvider(lambda r: reply("never")), name="claude-sonnet-4-5"),
                  toolbox=Toolbox(tools=default_registry(), cwd=tmp_path,
                                  policy=PermissionPolicy(PermissionsConfig(), interactive=False, yes=True)),
                  budget=budget, system_prompt=system, session=SessionLink(), extensions=[controller],
                  ledger=controller.ledger, clock=InstantClock())
    with pytest.raises(PromptTooLarge) as caught:
        agent.run_turn("hello")
    message = str(caught.value)
    assert f"{window:,}" in message and f"{caught.value.fixed_tokens:,}" in message
    assert caught.value.fixed_tokens > window
