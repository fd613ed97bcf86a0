"""Bytes before the last breakpoint do not change between calls when nothing changed (DESIGN invariant),
through the real loop and the real Anthropic converter; a model summary request starts with the same
bytes as the agent's last request."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nova.agent.loop import Agent
from nova.agent.parts import ModelBinding, Toolbox
from nova.context.budget import ContextBudget
from nova.context.prompt_cache import PromptCache
from nova.context.summarize import ModelSummarizer, SummaryRequest
from nova.messages import Message
from nova.model import CacheHints, ModelRequest, Usage
from nova.providers.formats.anthropic import request_to_anthropic
from nova.sessions.link import SessionLink
from nova.settings import CompactionConfig, PermissionsConfig
from nova.testing import FunctionProvider, InstantClock, call, reply, rough_request_tokens
from nova.tokens import TokenLedger, counter_for_model
from nova.tools import default_registry
from nova.tools.permissions import PermissionPolicy

ALL = CacheHints(system=True, last_tool=True, last_user_message=True)
SYSTEM = "You are a careful coding agent. " * 200


def unmarked(request: ModelRequest) -> dict[str, Any]:
    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k != "cache_control"}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    body: dict[str, Any] = strip(request_to_anthropic(request))
    return body


def assert_extends(before: ModelRequest, after: ModelRequest) -> None:
    a, b = unmarked(before), unmarked(after)
    assert json.dumps(a["tools"]) == json.dumps(b["tools"])
    assert json.dumps(a["system"]) == json.dumps(b["system"])
    n = len(a["messages"])
    assert json.dumps(a["messages"]) == json.dumps(b["messages"][:n])


paths = st.sampled_from(["a.py", "src/b.py", "missing.txt", "docs/readme.md"])
step = st.lists(st.tuples(st.sampled_from(["read_file", "glob", "grep"]), paths), min_size=1, max_size=3)
turn = st.tuples(st.text(alphabet="abcdefgh .", min_size=1, max_size=40), st.lists(step, max_size=4))


def run_session(tmp: Path, turns: list[tuple[str, list[list[tuple[str, str]]]]]) -> tuple[Agent, FunctionProvider]:
    (tmp / "a.py").write_text("print('a')\n")
    script: Iterator[reply] = iter([
        item for _, steps in turns for item in [
            *(reply("working", tool_calls=[call(name, **({"path": p} if name == "read_file" else {"pattern": p}))
                                           for name, p in s]) for s in steps),
            reply("done")]
    ])
    cached = {"total": 0}

    def answer(request: ModelRequest) -> reply:
        # A provider whose cache always holds the previous request: it reads it and writes the rest.
        total = rough_request_tokens(request)
        item = next(script)
        usage = Usage(output_tokens=5, cache_read_tokens=cached["total"],
                      cache_write_tokens=max(0, total - cached["total"]))
        cached["total"] = total
        return reply(item.text, tool_calls=item.tool_calls, usage=usage)

    provider = FunctionProvider(answer)
    agent = Agent(model=ModelBinding(provider=provider, name="claude-sonnet-4-5", cache=ALL),
                  toolbox=Toolbox(tools=default_registry(), cwd=tmp,
                                  policy=PermissionPolicy(PermissionsConfig(), interactive=False, yes=True)),
                  system_prompt=SYSTEM, session=SessionLink(), clock=InstantClock(),
                  budget=ContextBudget.derive(CompactionConfig(), 200_000),
                  ledger=TokenLedger(counter_for_model("claude-sonnet-4-5")),
                  extensions=[PromptCache(model="claude-sonnet-4-5")])
    for prompt, _ in turns:
        agent.run_turn(prompt)
    return agent, provider


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(turns=st.lists(turn, min_size=1, max_size=3))
def test_each_request_starts_with_the_previous_one_byte_for_byte(tmp_path: Path, turns: Any) -> None:
    agent, provider = run_session(tmp_path, turns)
    requests = provider.requests
    for before, after in itertools.pairwise(requests):
        assert_extends(before, after)
        # Every request carries all three breakpoints: tools, system, last user message.
        body = request_to_anthropic(after)
        assert "cache_control" in body["system"][0] and "cache_control" in body["tools"][-1]
        assert "cache_control" in body["messages"][-1]["content"][-1]
    assert agent.extensions.require(PromptCache).monitor.breaks == []


def test_model_summary_request_reuses_the_agents_prefix(tmp_path: Path) -> None:
    agent, provider = run_session(tmp_path, [("look around", [[("read_file", "a.py")], [("glob", "*.py")]])])
    history = list(agent.history)
    last_sent = provider.requests[-1]
    summarizer = ModelSummarizer(FunctionProvider(lambda r: "summary"), model="claude-sonnet-4-5", cache=ALL)
    folded = history[:3]
    summary = summarizer.build_request(SummaryRequest(older=folded, context=history, system=SYSTEM,
                                                      tools=agent.tools.specs(), max_tokens=2000))
    assert_extends(last_sent, summary)
    body = request_to_anthropic(summary)
    # Its own breakpoint sits on the instruction, one block after the agent's last breakpoint: well
    # inside Anthropic's 20-block lookback, so the warm prefix is read.
    last = body["messages"][-1]
    assert last["role"] == "user" and "cache_control" in last["content"][-1]
    assert "Write a summary" in last["content"][-1]["text"]
    assert f"The last {len(history) - len(folded)} messages above stay" in last["content"][-1]["text"]
    assert len(body["messages"]) == len(history) + 1  # what came after the last call, then the instruction


def test_summary_without_context_falls_back_to_the_folded_part() -> None:
    older = [Message.user("task"), Message.assistant("ok")]
    summarizer = ModelSummarizer(FunctionProvider(lambda r: "s"), model="claude-sonnet-4-5")
    request = summarizer.build_request(SummaryRequest(older=older, system="s"))
    assert [m.text for m in request.messages[:2]] == ["task", "ok"] and len(request.messages) == 3
    assert request.cache.last_user_message and request.cache.system
