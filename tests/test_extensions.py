"""The extension seam: declared order, chained and single hooks, typed lookup, closing."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from nova.agent.builder import AgentOptions, build_agent
from nova.agent.context_runtime import ContextRuntime
from nova.agent.loop import Agent
from nova.agent.parts import ModelBinding, Toolbox
from nova.context.budget import ContextBudget
from nova.context.controller import ContextController
from nova.context.extensions import (
    CompileRequest,
    Extension,
    ExtensionError,
    Extensions,
    TurnResult,
    ViewRequest,
)
from nova.context.prompt_cache import PromptCache
from nova.memory.provenance import ProvenanceGuard
from nova.memory.runtime import MemoryRuntime
from nova.messages import Message
from nova.model import ModelRequest, Usage
from nova.sessions.link import SessionLink
from nova.settings import CompactionConfig, PermissionsConfig, load_settings
from nova.skills.runtime import SkillRuntime
from nova.testing import InstantClock, ScriptedProvider, call, reply
from nova.tokens import Anchor, TokenLedger, counter_for_model
from nova.tools import default_registry
from nova.tools.permissions import PermissionPolicy

BUDGET = ContextBudget.derive(CompactionConfig(), 200_000)


def make_agent(tmp_path: Path, provider: ScriptedProvider, extensions: Sequence[Extension]) -> Agent:
    return Agent(model=ModelBinding(provider=provider, name="claude-sonnet-4-5"),
                 toolbox=Toolbox(tools=default_registry(), cwd=tmp_path,
                                 policy=PermissionPolicy(PermissionsConfig(), interactive=False, yes=True)),
                 budget=BUDGET, ledger=TokenLedger(counter_for_model("claude-sonnet-4-5")), session=SessionLink(),
                 extensions=extensions, clock=InstantClock())


class Tagger(Extension):
    """Appends its tag to the system text of each request and notes each hook it saw."""

    def __init__(self, tag: str, log: list[str]) -> None:
        self.tag = tag
        self.log = log

    def prepare_request(self, *, request: ModelRequest) -> ModelRequest:
        self.log.append(f"{self.tag}:request")
        return ModelRequest(model=request.model, messages=request.messages, system=request.system + self.tag,
                            tools=request.tools, cache=request.cache)

    def on_turn_end(self, *, result: TurnResult) -> None:
        self.log.append(f"{self.tag}:end")

    def close(self) -> None:
        self.log.append(f"{self.tag}:close")


class Early(Tagger):
    order = 10


class Late(Tagger):
    order = 900


def test_hooks_run_in_declared_order_whatever_the_given_order(tmp_path: Path) -> None:
    log: list[str] = []
    provider = ScriptedProvider([reply("ok")])
    agent = make_agent(tmp_path, provider, [Late("L", log), Tagger("M", log), Early("E", log)])
    agent.run_turn("hi")
    agent.close()
    assert provider.requests[0].system == "EML"  # chained: each saw the one before
    assert log == ["E:request", "M:request", "L:request", "E:end", "M:end", "L:end",
                   "E:close", "M:close", "L:close"]


def test_a_hook_only_one_extension_may_have_is_refused_twice() -> None:
    class CompilerA(Extension):
        def compile_view(self, *, request: CompileRequest) -> None:
            return None

    class CompilerB(CompilerA):
        pass

    with pytest.raises(ExtensionError, match="only one extension may implement compile_view"):
        Extensions([CompilerA(), CompilerB()])


def test_a_failing_close_does_not_stop_the_others(tmp_path: Path) -> None:
    log: list[str] = []

    class Broken(Extension):
        order = 1

        def close(self) -> None:
            raise RuntimeError("boom")

    agent = make_agent(tmp_path, ScriptedProvider([]), [Broken(), Tagger("T", log)])
    agent.close()
    assert log == ["T:close"]


def test_the_first_overflow_answer_wins(tmp_path: Path) -> None:
    class Declines(Extension):
        order = 1

        def on_overflow(self, *, request: ViewRequest) -> None:
            return None

    class Shrinks(Extension):
        def on_overflow(self, *, request: ViewRequest) -> list[Message]:
            return list(request.history[-1:])

    exts = Extensions([Shrinks(), Declines()])
    history = [Message.user("a"), Message.user("b")]
    assert exts.on_overflow(ViewRequest(history=history, system="")) == history[-1:]


def test_build_agent_wires_every_extension_once_with_one_ledger_and_budget(tmp_path: Path) -> None:
    settings = load_settings(home=tmp_path / "home", env={}, overrides={"provider": "demo", "model": "demo",
                                                                        "context_window": 64_000})
    agent = build_agent(settings, ScriptedProvider([]), AgentOptions(cwd=tmp_path))
    kinds = [type(e) for e in agent.extensions]
    # The provenance guard (50) scrubs revoked memories before compaction (100) reads history.
    assert kinds == [ProvenanceGuard, ContextController, ContextRuntime, SkillRuntime, PromptCache, MemoryRuntime]
    controller = agent.extensions.require(ContextController)
    runtime = agent.extensions.require(ContextRuntime)
    # One budget and one ledger: the compaction decision, the compiler and the loop agree.
    assert controller.budget is agent.budget is runtime.budget
    assert agent.budget.window == 64_000 and agent.threshold == agent.budget.threshold
    assert controller.ledger is agent.ledger is runtime.ledger
    assert agent.extensions.get(Early) is None
    with pytest.raises(ExtensionError, match="no Early extension"):
        agent.extensions.require(Early)


def test_each_reply_is_recorded_in_the_sessions_ledger_once(tmp_path: Path) -> None:
    settings = load_settings(home=tmp_path / "home", env={}, overrides={"provider": "demo", "model": "demo"})
    provider = ScriptedProvider([reply("", [call("glob", pattern="*")]), reply("done")])
    agent = build_agent(settings, provider, AgentOptions(cwd=tmp_path, yes=True))
    recorded: list[tuple[str, bool]] = []
    record = agent.ledger.record

    def counting(message_id: str, usage: Usage, **kw: Any) -> Anchor | None:
        recorded.append((message_id, kw.get("sent") is not None))
        return record(message_id, usage, **kw)

    agent.ledger.record = counting  # type: ignore[method-assign]
    agent.run_turn("list the files")
    replies = [m.id for m in agent.history if m.role == "assistant"]
    # Once per call, by the loop, with the request it answered (the ledger learns growth from it).
    assert len(replies) == 2 and recorded == [(reply_id, True) for reply_id in replies]
