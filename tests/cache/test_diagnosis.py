"""Each cause of a cache break is detected and named, with its cost; the loop records breaks."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from nova import events as ev
from nova.agent.loop import Agent
from nova.agent.parts import ModelBinding, Toolbox
from nova.context.budget import ContextBudget
from nova.context.cache_diagnosis import RULES_HEADING, CacheMonitor, break_cost_usd
from nova.context.prompt_cache import PromptCache
from nova.messages import Message, SummaryPart, ToolResultPart
from nova.model import CacheHints, CallPurpose, ModelRequest, ToolSpec, Usage
from nova.sessions.link import SessionLink
from nova.settings import CompactionConfig, PermissionsConfig
from nova.testing import InstantClock, ScriptedProvider, call, reply
from nova.tokens import TokenLedger, counter_for_model
from nova.tools import default_registry
from nova.tools.permissions import PermissionPolicy

TOOLS = [ToolSpec("bash", "run", {"type": "object"}), ToolSpec("read_file", "read", {"type": "object"})]
SYSTEM = f"contract\n\n{RULES_HEADING} (follow them)\n\nuse tabs"
HISTORY = [Message.user("task", id="u1"), Message(role="assistant", parts=(call("bash", id="c1", command="ls"),),
                                                  id="a1"),
           Message(role="user", parts=(ToolResultPart("c1", "x" * 5000),), id="r1")]
WARM = Usage(input_tokens=10, cache_write_tokens=20_000)
CACHE = CacheHints(system=True, last_tool=True, last_user_message=True)


def req(**kw: Any) -> ModelRequest:
    base = dict(model="claude-sonnet-4-5", system=SYSTEM, tools=TOOLS, messages=HISTORY, cache=CACHE)
    return ModelRequest(**{**base, **kw})


def observe_break(second: ModelRequest, *, gap: float = 10.0, read: int = 0) -> tuple[str, str]:
    monitor = CacheMonitor(model="claude-sonnet-4-5")
    assert monitor.observe(req(), WARM, at=1000.0) is None
    report = monitor.observe(second, Usage(cache_read_tokens=read, cache_write_tokens=21_000), at=1000.0 + gap)
    assert report is not None
    return report.segment, report.cause


def test_tool_catalog_change() -> None:
    assert observe_break(req(tools=[*TOOLS, ToolSpec("web", "fetch", {})]))[1] == "tool catalog changed"
    changed = [TOOLS[0], ToolSpec("read_file", "read a file", {"type": "object"})]
    assert observe_break(req(tools=changed)) == ("tool read_file", "tool catalog changed")


def test_a_change_to_mcp_tools_only_is_named_as_such() -> None:
    mcp = [*TOOLS, ToolSpec("mcp__docs__search", "search", {"type": "object"})]
    first = CacheMonitor(model="claude-sonnet-4-5")
    first.observe(req(tools=mcp), WARM, at=1000.0)
    added = [*mcp, ToolSpec("mcp__docs__write", "write", {"type": "object"})]
    report = first.observe(req(tools=added), Usage(cache_write_tokens=21_000), at=1001.0)
    assert report is not None and report.cause == "mcp tools changed"
    # An MCP tool appearing where there was none, after the built-ins.
    assert observe_break(req(tools=mcp)) == ("tool mcp__docs__search", "mcp tools changed")
    # A built-in tool changing alongside is still a catalog change of its own.
    both = [ToolSpec("bash", "run it", {"type": "object"}), TOOLS[1], mcp[2]]
    assert observe_break(req(tools=both))[1] == "tool catalog changed"


def test_rule_file_edited_and_system_changed() -> None:
    assert observe_break(req(system=SYSTEM.replace("tabs", "spaces"))) == ("rules", "rules changed")
    assert observe_break(req(system=SYSTEM.replace("contract", "new contract"))) == ("system", "system changed")


def test_compaction() -> None:
    summary = Message(role="user", parts=(SummaryPart("[Previous conversation summary] ...", covers=("u1",)),),
                      origin="summary", id="s1")
    segment, cause = observe_break(req(messages=[summary, HISTORY[2].with_parts([ToolResultPart("c1", "y")])]))
    assert cause == "compaction" and segment.startswith("message 0 (summary")


def test_snip() -> None:
    snipped = HISTORY[2].with_parts([ToolResultPart("c1", "x[... 4000 chars snipped ...]")]).with_metadata(snipped=True)
    segment, cause = observe_break(req(messages=[*HISTORY[:2], snipped, Message.user("next")]), read=3000)
    assert cause == "snip" and segment == "message 2 (user r1)"


def test_memory_and_plain_rewrites() -> None:
    memory = Message.user("recalled: A", origin="memory", id="m")
    monitor = CacheMonitor(model="claude-sonnet-4-5")
    monitor.observe(req(messages=[*HISTORY, memory]), WARM, at=0.0)
    report = monitor.observe(req(messages=[*HISTORY, dataclasses.replace(memory, parts=Message.user("B").parts)]),
                             Usage(cache_read_tokens=100, cache_write_tokens=900), at=5.0)
    assert report is not None and report.cause == "memory changed"
    edited = [HISTORY[0].with_parts(Message.user("other task").parts), *HISTORY[1:]]
    assert observe_break(req(messages=edited))[1] == "history rewritten"


def test_ttl_expired_and_evicted() -> None:
    later = req(messages=[*HISTORY, Message.assistant("ok"), Message.user("more")])
    assert observe_break(later, gap=301.0) == ("(whole prefix)", "ttl expired")
    assert observe_break(later, gap=30.0) == ("(whole prefix)", "evicted")


def test_no_break_when_the_cache_was_read() -> None:
    monitor = CacheMonitor(model="claude-sonnet-4-5")
    monitor.observe(req(), WARM, at=0.0)
    assert monitor.observe(req(), Usage(cache_read_tokens=20_000, cache_write_tokens=50), at=1.0) is None
    assert monitor.breaks == []


def test_break_cost_hand_worked() -> None:
    # Sonnet 4.5: input $3/M, 5 min write $3.75/M, 1 h write $6/M, read $0.30/M.
    # 10,000 tokens re-written instead of read: 10,000 x (3.75 - 0.30) / 1e6 = $0.0345.
    assert break_cost_usd(10_000, Usage(cache_write_tokens=1), "claude-sonnet-4-5") == pytest.approx(0.0345)
    assert break_cost_usd(10_000, Usage(cache_write_tokens=1), "claude-sonnet-4-5", ttl="1h") == pytest.approx(0.057)
    # OpenAI writes nothing: missed tokens are plain input. gpt-4o: (2.50 - 1.25) x 10,000 / 1e6 = $0.0125.
    assert break_cost_usd(10_000, Usage(input_tokens=10_000), "gpt-4o") == pytest.approx(0.0125)
    assert break_cost_usd(10_000, Usage(), "unknown-model") is None
    monitor = CacheMonitor(model="claude-sonnet-4-5")
    monitor.observe(req(), WARM, at=0.0)
    report = monitor.observe(req(tools=TOOLS[:1]), Usage(cache_read_tokens=0, cache_write_tokens=19_000), at=1.0)
    assert report is not None and report.missed_tokens == 20_000
    assert report.cost_usd == pytest.approx(20_000 * 3.45 / 1e6)


class Sink:
    def __init__(self) -> None:
        self.events: list[tuple[str, Mapping[str, Any]]] = []

    def record_message(self, message: Message, usage: Usage | None = None) -> None: ...

    def record_event(self, name: str, data: Mapping[str, Any]) -> None:
        self.events.append((name, data))

    def add_cost(self, usage: Usage, cost_usd: float | None, purpose: CallPurpose = "turn", *,
                 calls: int = 1) -> None: ...

    def note_context_size(self, tokens: int) -> None: ...

    def flush(self) -> None: ...


def test_the_loop_emits_and_records_a_cache_break(tmp_path: Path) -> None:
    sink = Sink()
    seen: list[ev.Event] = []
    bus = ev.EventBus()
    bus.subscribe(seen.append)
    provider = ScriptedProvider([
        reply("one", usage=Usage(input_tokens=5, cache_write_tokens=5000)),
        reply("two", usage=Usage(input_tokens=5, cache_read_tokens=0, cache_write_tokens=5100)),
    ])
    agent = Agent(model=ModelBinding(provider=provider, name="claude-sonnet-4-5", cache=CACHE),
                  toolbox=Toolbox(tools=default_registry(), cwd=tmp_path,
                                  policy=PermissionPolicy(PermissionsConfig(), interactive=False, yes=True)),
                  system_prompt="contract " * 500, session=SessionLink(recorder=sink, bus=bus), clock=InstantClock(),
                  budget=ContextBudget.derive(CompactionConfig(), 200_000),
                  ledger=TokenLedger(counter_for_model("claude-sonnet-4-5")),
                  extensions=[PromptCache(model="claude-sonnet-4-5", bus=bus, session=sink)])
    agent.run_turn("first")
    agent.system_prompt = "a different contract " * 300  # e.g. the rules were reloaded
    agent.run_turn("second")
    breaks = [e for e in seen if isinstance(e, ev.CacheBreak)]
    assert len(breaks) == 1 and breaks[0].cause == "system changed" and breaks[0].segment == "system"
    assert breaks[0].cost_usd == pytest.approx(5000 * 3.45 / 1e6)
    recorded = [data for name, data in sink.events if name == "cache_break"]
    assert recorded and recorded[0]["cause"] == "system changed" and recorded[0]["missed_tokens"] == 5000


def test_rules_heading_is_what_the_app_writes(tmp_path: Path) -> None:
    from nova.agent.builder import SYSTEM_CONTRACT
    from nova.agent.context_runtime import build_context_sources
    from nova.settings import load_settings

    (tmp_path / "AGENTS.md").write_text("use tabs\n")
    (tmp_path / ".git").mkdir()
    sources = build_context_sources(settings=load_settings(env={"NOVA_HOME": str(tmp_path / "home")}), cwd=tmp_path,
                                    contract=SYSTEM_CONTRACT)
    rules = next(piece.text for piece in sources.head if piece.id.startswith("rules:"))
    assert rules.startswith(RULES_HEADING)
