"""Sub-agents (CTX-5): the `task` tool in isolated and fork mode, with scripted providers, real sessions
on disk and the real agent assembly."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from nova.agent.builder import AgentOptions, build_agent
from nova.cli.main import app
from nova.context.cache_sim import volatile_tail
from nova.messages import Message, to_dict
from nova.model import ModelRequest, Usage
from nova.sessions.session import Session
from nova.settings import load_settings
from nova.testing import FunctionProvider, ScriptedProvider, call, last_message, reply, rough_request_tokens


def _settings(home: Path):  # type: ignore[no-untyped-def]
    return load_settings(home=home, overrides={"provider": "demo"})


def _project(tmp_path: Path) -> Path:
    work = tmp_path / "repo"
    work.mkdir()
    (work / "notes.txt").write_text("the answer is 42\n")
    return work


def _request_bytes(request: ModelRequest) -> tuple[str, str, list[str]]:
    """What a provider hashes for its prompt cache: system, tools, each message (in Nova's one serializer)
    up to the message breakpoint: the observations block after it changes from call to call."""
    tools = json.dumps([[t.name, t.description, dict(t.input_schema)] for t in request.tools], sort_keys=True)
    cached = request.messages[: len(request.messages) - volatile_tail(request.messages)]
    return request.system, tools, [json.dumps(to_dict(m), sort_keys=True) for m in cached]


def _wire(request: ModelRequest) -> dict[str, Any]:
    from nova.providers.formats.anthropic import request_to_anthropic

    def bare(value: object) -> object:
        if isinstance(value, dict):
            return {k: bare(v) for k, v in value.items() if k != "cache_control"}
        if isinstance(value, list):
            return [bare(v) for v in value]
        return value

    body = bare(request_to_anthropic(request))
    assert isinstance(body, dict)
    return {"system": json.dumps(body.get("system"), sort_keys=True), "tools": json.dumps(body.get("tools"), sort_keys=True),
            "messages": [json.dumps(m, sort_keys=True)
                         for m in body["messages"][: len(body["messages"]) - volatile_tail(request.messages)]]}


def test_fork_shares_the_parents_prefix_byte_for_byte(tmp_path: Path, nova_home: Path) -> None:
    work = _project(tmp_path)
    settings = _settings(nova_home)
    script = [
        reply("reading first", [call("read_file", path="notes.txt")]),
        reply("delegating", [call("task", id="toolu_fork1", prompt="check notes.txt for the answer", mode="fork")]),
        # the child's one call
        reply("The answer in notes.txt is 42."),
        # the parent again, after the tool result
        reply("The sub-agent says 42."),
    ]
    provider = ScriptedProvider(script)
    with Session.create(nova_home, cwd=work, provider="demo", model=settings.model) as session:
        agent = build_agent(settings, provider, AgentOptions(cwd=work, yes=True), session=session,
                            session_id=session.id, session_dir=session.dir)
        result = agent.run_turn("what is the answer in notes.txt?")
    assert result.text == "The sub-agent says 42."
    parent_call, child_first = provider.requests[1], provider.requests[2]
    p_system, p_tools, p_messages = _request_bytes(parent_call)
    c_system, c_tools, c_messages = _request_bytes(child_first)
    # Everything the parent sent before the delegating call is the child's prefix, byte for byte.
    assert c_system == p_system and c_tools == p_tools
    assert c_messages[: len(p_messages)] == p_messages
    # ... and then the sub-task, in place of the delegating call.
    rest = [json.loads(m) for m in c_messages[len(p_messages):]]
    assert [m.get("origin") for m in rest] == ["task"]
    assert "check notes.txt for the answer" in rest[0]["parts"][0]["text"]
    assert child_first.cache.cache_key == parent_call.cache.cache_key
    # The same on the wire (Anthropic's request body), once the cache markers are set aside: they say
    # where each request's cached part ends, which is not content.
    parent_wire, child_wire = _wire(parent_call), _wire(child_first)
    assert child_wire["system"] == parent_wire["system"] and child_wire["tools"] == parent_wire["tools"]
    assert child_wire["messages"][: len(parent_wire["messages"])] == parent_wire["messages"]
    # Only the report comes back to the parent.
    tool_result = last_message(provider.requests[3]).tool_results()[0]
    assert "The answer in notes.txt is 42." in tool_result.content
    assert "the answer is 42\n" not in tool_result.content


def test_isolated_child_gets_a_fresh_brief_and_its_session_is_listed_under_the_parent(
        tmp_path: Path, nova_home: Path) -> None:
    work = _project(tmp_path)
    settings = _settings(nova_home)
    child_usage = Usage(input_tokens=1000, output_tokens=100)
    provider = ScriptedProvider([
        reply("delegating", [call("task", prompt="find the answer in notes.txt", tools=["read_file", "grep"],
                                  description="find the answer")]),
        reply("reading", [call("read_file", path="notes.txt")], usage=child_usage),
        reply("Found it: 42.", usage=child_usage),
        reply("42."),
    ])
    with Session.create(nova_home, cwd=work, provider="demo", model=settings.model) as session:
        agent = build_agent(settings, provider, AgentOptions(cwd=work, yes=True), session=session,
                            session_id=session.id, session_dir=session.dir)
        agent.run_turn("find the answer")
        parent_id = session.id
        parent_usage = session.meta.usage
    child_first = provider.requests[1]
    # A fresh context: one message, the brief, and the tool subset asked for.
    assert len(child_first.messages) <= 2  # the brief (+ the compiler's observations block)
    brief = child_first.messages[0].text
    assert "find the answer in notes.txt" in brief and "grep, read_file" in brief
    assert sorted(t.name for t in child_first.tools) == ["grep", "read_file"]
    assert "delegating" not in json.dumps([to_dict(m) for m in child_first.messages])

    children = Session.open(nova_home, parent_id, readonly=True)
    try:
        listed = children.store.list_children(parent_id)
    finally:
        children.close()
    assert len(listed) == 1
    child = Session.open(nova_home, listed[0].id, readonly=True)
    try:
        assert child.meta.parent_id == parent_id
        assert child.meta.usage.input_tokens == 2000  # its own two calls
        history = [m.text for m in child.load_history()]
    finally:
        child.close()
    assert any("Found it: 42." in text for text in history)
    # The child's cost is added to the parent's: its 2,000 input tokens are in the parent's total.
    own = rough_request_tokens(provider.requests[0]) + rough_request_tokens(provider.requests[3])
    assert parent_usage.input_tokens == own + 2000
    out = CliRunner().invoke(app, ["sessions", "show", parent_id], env={"NOVA_HOME": str(nova_home)})
    assert out.exit_code == 0, out.output
    assert "sub-agents (1)" in out.output and listed[0].id in out.output
    out = CliRunner().invoke(app, ["sessions", "show", listed[0].id], env={"NOVA_HOME": str(nova_home)})
    assert f"sub-agent of session {parent_id}" in out.output


def test_parallel_sub_agents_run_concurrently_each_with_its_own_budget(tmp_path: Path, nova_home: Path) -> None:
    work = _project(tmp_path)
    settings = _settings(nova_home)
    # Each child's model call waits at a barrier for the other child's: two children run one after the
    # other would leave the first waiting alone, and the barrier breaks (a generous bound: the point
    # is that they overlap, not how fast).
    both_inside = threading.Barrier(2, timeout=30)
    met: list[int] = []

    def answer(request: ModelRequest) -> reply:
        first = request.messages[0].text if request.messages else ""
        if "Sub-task:" in first:  # a child
            met.append(both_inside.wait())
            return reply("child report " + first.split("Sub-task: ")[1].split("\n")[0])
        last = last_message(request)
        if last.tool_results():
            return reply("both done: " + " | ".join(r.content.splitlines()[-1] for r in last.tool_results()))
        return reply("splitting", [call("task", prompt="alpha"), call("task", prompt="beta")])

    provider = FunctionProvider(answer)
    agent = build_agent(settings, provider, AgentOptions(cwd=work, yes=True))
    result = agent.run_turn("do two things")
    assert result.text == "both done: child report alpha | child report beta"
    assert sorted(met) == [0, 1], "the two sub-agents did not overlap"
    assert not both_inside.broken
    # Each child is a whole agent of its own: its own budget, ledger and compaction controller.
    from nova.agent.subagents import ChildStart, SubTask, TaskTool
    from nova.context.controller import ContextController

    task = agent.tools.get("task")
    assert isinstance(task, TaskTool)
    start = ChildStart(task=SubTask(prompt="x", mode="isolated", title="x"), history=(), tools=None, depth=1,
                       state=None, cache_key="")
    one, two = task.factory(start), task.factory(start)
    try:
        controllers = [a.extensions.get(ContextController) for a in (agent, one.agent, two.agent)]
        assert all(c is not None for c in controllers) and len({id(c) for c in controllers}) == 3
        assert one.agent.ledger is not two.agent.ledger is not agent.ledger
    finally:
        one.close()
        two.close()


def test_a_sub_agent_cannot_start_sub_agents(tmp_path: Path, nova_home: Path) -> None:
    work = _project(tmp_path)
    provider = ScriptedProvider([
        reply("delegating", [call("task", prompt="nested", mode="fork")]),
        reply("again", [call("task", prompt="deeper", mode="fork")]),
        reply("I could not delegate; done."),
        reply("ok"),
    ])
    agent = build_agent(_settings(nova_home), provider, AgentOptions(cwd=work, yes=True))
    agent.run_turn("go")
    child_results = last_message(provider.requests[2]).tool_results()
    assert child_results and child_results[0].is_error
    assert "cannot start sub-agents" in child_results[0].content


def test_fork_history_stops_before_the_delegating_message() -> None:
    from nova.agent.subagents import fork_history

    first = Message.user("hi")
    delegating = Message(role="assistant", parts=(call("task", id="toolu_x", prompt="p"),))
    assert fork_history([first, delegating], "toolu_x") == (first,)


def test_parallel_sub_agents_ask_the_person_one_at_a_time(tmp_path: Path, nova_home: Path) -> None:
    work = _project(tmp_path)
    asking = 0
    most = 0
    asked: list[str] = []
    lock = threading.Lock()

    def ask(request) -> bool:  # type: ignore[no-untyped-def]
        nonlocal asking, most
        with lock:
            asking += 1
            most = max(most, asking)
        time.sleep(0.2)
        with lock:
            asking -= 1
            asked.append(request.summary)
        return True

    def answer(request: ModelRequest) -> reply:
        first = request.messages[0].text if request.messages else ""
        last = last_message(request)
        if "Sub-task:" in first:
            if last.tool_results():
                return reply("wrote it")
            name = first.split("Sub-task: ")[1].split("\n")[0]
            return reply("writing", [call("write_file", path=f"{name}.txt", content=name)])
        if last.tool_results():
            return reply("both written")
        return reply("splitting", [call("task", prompt="alpha"), call("task", prompt="beta")])

    agent = build_agent(_settings(nova_home), FunctionProvider(answer),
                        AgentOptions(cwd=work, interactive=True, ask=ask))
    assert agent.run_turn("write two files").text == "both written"
    assert len(asked) == 2 and most == 1
    assert (work / "alpha.txt").read_text() == "alpha" and (work / "beta.txt").read_text() == "beta"
