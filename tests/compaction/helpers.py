"""Builders shared by the compaction tests: histories of tool exchanges and a controller on a small window."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nova import events as ev
from nova.agent.loop import Agent
from nova.agent.parts import ModelBinding, Toolbox
from nova.context.budget import ContextBudget
from nova.context.controller import ContextController, FixedPrompt
from nova.context.summarize import Summarizer
from nova.messages import Message, ToolResultPart, ToolUsePart
from nova.providers.base import assistant_message
from nova.sessions.link import SessionLink
from nova.sessions.recorder import SessionRecorder
from nova.settings import CompactionConfig, PermissionsConfig
from nova.testing import InstantClock, ScriptedProvider
from nova.tokens import CL100K_PROFILE, HeuristicCounter, MemoCounter, TokenLedger
from nova.tools import default_registry
from nova.tools.permissions import PermissionPolicy

WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda", "mu", "nu", "xi", "omicron", "pi", "rho", "sigma"]


_BASE = " ".join(WORDS[(i * 7) % len(WORDS)] for i in range(60000))


def filler(n_chars: int, seed: int = 0) -> str:
    """Word-like text of exactly `n_chars` characters (different seeds start at different words)."""
    start = (seed * 37) % 5000
    text = _BASE[start : start + n_chars]
    while len(text) < n_chars:
        text += " " + _BASE[: n_chars - len(text) - 1]
    return text[:n_chars]


def exchange(i: int, *, output_chars: int = 3000, command: str | None = None) -> list[Message]:
    use = ToolUsePart(id=f"toolu_{i:04d}", name="bash", input={"command": command or f"cat file_{i}.py"})
    return [
        assistant_message(f"Step {i}: I will look at file_{i}.py.", [use]),
        Message(role="user", parts=(ToolResultPart(use.id, filler(output_chars, i)),)),
    ]


def history(n: int, *, output_chars: int = 3000, first: str = "Please fix the bug in parser.py; keep the API.") -> list[Message]:
    out = [Message.user(first)]
    for i in range(n):
        out.extend(exchange(i, output_chars=output_chars))
    return out


# As if the config file set the seeds' reserves: at these small windows they are clamped to half the
# window, which gives the tests a threshold of half the window and a hard line 3,000 tokens from it.
SEED_RESERVES = frozenset({"output_reserve_tokens", "summary_reserve_tokens", "hard_margin_tokens"})


def small_config(**kw: Any) -> CompactionConfig:
    base: dict[str, Any] = {"snip_preserve_last_n_messages": 4, "snip_tool_output_token_budget": 2000,
                            "configured": SEED_RESERVES}
    base.update(kw)
    return CompactionConfig(**base)


def make_controller(tmp_path: Path, *, window: int = 20000, summarizer: Summarizer | None = None,
                    config: CompactionConfig | None = None, recorder: SessionRecorder | None = None
                    ) -> tuple[ContextController, list[ev.Event]]:
    bus = ev.EventBus()
    seen: list[ev.Event] = []
    bus.subscribe(seen.append)
    config = config or small_config()
    session = SessionLink(id="ses_test", recorder=recorder, dir=tmp_path / "session", bus=bus)
    controller = ContextController(config=config, budget=ContextBudget.derive(config, window), summarizer=summarizer,
                                   ledger=TokenLedger(MemoCounter(HeuristicCounter(CL100K_PROFILE))), session=session,
                                   prompt=FixedPrompt(tools=default_registry().specs()))
    return controller, seen


def make_agent(tmp_path: Path, provider: ScriptedProvider, controller: ContextController,
               prior: list[Message]) -> Agent:
    agent = Agent(
        model=ModelBinding(provider=provider, name="claude-sonnet-4-5"),
        toolbox=Toolbox(tools=default_registry(), policy=PermissionPolicy(PermissionsConfig(), interactive=False,
                                                                          yes=True), cwd=tmp_path),
        budget=controller.budget,
        ledger=controller.ledger,
        session=SessionLink(id="ses_test", dir=controller.session_dir, bus=controller.bus),
        history=prior,
        extensions=[controller],
        clock=InstantClock(),
    )
    return agent


def of_type(events: list[ev.Event], kind: type) -> list[Any]:
    return [e for e in events if isinstance(e, kind)]
