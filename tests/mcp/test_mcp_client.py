"""The MCP client against a real MCP server (tests/mcp/fixture_server.py, the `mcp` SDK) started by the
test as a subprocess, over stdio and over streamable HTTP, driven through a real agent loop."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="the `mcp` extra is not installed")

from nova.agent.loop import Agent
from nova.agent.parts import ModelBinding, RunLimits, Toolbox
from nova.context.budget import ContextBudget
from nova.context.cache_diagnosis import first_changed, request_segments
from nova.context.cache_sim import AnthropicCache, OpenAICache, hit_rate, request_usage
from nova.context.prompt_cache import PromptCache
from nova.mcp import McpCatalog, ServerConfig
from nova.messages import ToolUsePart, new_id
from nova.model import ModelRequest, Usage
from nova.providers.scripted import FunctionProvider, call, reply
from nova.sessions.link import SessionLink
from nova.settings import CompactionConfig, PermissionsConfig
from nova.tokens import TokenLedger, counter_for_model
from nova.tools import default_registry
from nova.tools.permissions import PermissionPolicy

SERVER = Path(__file__).with_name("fixture_server.py")
MODEL = "claude-sonnet-4-5"
COUNTER = counter_for_model(MODEL)
BUDGET = ContextBudget.derive(CompactionConfig(), 200_000)


def stdio_config(name: str = "fx") -> ServerConfig:
    return ServerConfig(name=name, command=sys.executable, args=(str(SERVER), "stdio"))


@pytest.fixture
def stdio_catalog() -> Iterator[McpCatalog]:
    catalog = McpCatalog([stdio_config()], window=200_000, counter=COUNTER).start()
    yield catalog
    catalog.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def http_url() -> Iterator[str]:
    port = _free_port()
    process = subprocess.Popen([sys.executable, str(SERVER), "http", str(port)], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.1)
    else:
        process.kill()
        pytest.fail("the fixture HTTP server did not start")
    yield f"http://127.0.0.1:{port}/mcp"
    process.terminate()
    process.wait(10)


class SimulatedCache:
    """A provider answering from a script, with usage from the simulated Anthropic cache over the requests
    the agent really sends (so the agent's own cache-break diagnosis sees real reads and misses)."""

    def __init__(self, script: list[reply]) -> None:
        self.script = list(script)
        self.cache = AnthropicCache(min_tokens=1024)
        self.provider = FunctionProvider(self.answer)

    def answer(self, request: ModelRequest) -> reply:
        usage = request_usage(self.cache, request, COUNTER)
        step = self.script.pop(0)
        return reply(step.text, step.tool_calls, usage=usage)


def make_agent(catalog: McpCatalog, provider: FunctionProvider, tmp_path: Path, *, allow: list[str],
               deny: list[str] | None = None, cache: PromptCache | None = None) -> Agent:
    tools = catalog.attach(default_registry())
    return Agent(model=ModelBinding(provider=provider, name=MODEL), budget=BUDGET,
                 toolbox=Toolbox(tools=tools, cwd=tmp_path,
                                 policy=PermissionPolicy(PermissionsConfig(allow=allow, deny=deny or []),
                                                         interactive=False)),
                 ledger=TokenLedger(counter_for_model(MODEL)), session=SessionLink(),
                 system_prompt="You are a test agent. " + "Follow the rules of the project carefully. " * 200,
                 extensions=[cache] if cache else [], limits=RunLimits(tool_timeout_s=20))


def use(tool: str, **input: object) -> ToolUsePart:
    """A scripted call whose input may hold a `name` key (`call` takes the tool's name positionally)."""
    return ToolUsePart(id=new_id("toolu"), name=tool, input=input)


def results(agent: Agent) -> list[tuple[str, bool]]:
    return [(p.content, p.is_error) for m in agent.history for p in m.parts if p.kind == "tool_result"]


def test_tools_are_named_per_server_and_placed_after_the_built_ins(stdio_catalog: McpCatalog, tmp_path: Path) -> None:
    names = [s.name for s in stdio_catalog.attach(default_registry()).specs()]
    mcp = [n for n in names if n.startswith("mcp")]
    assert mcp == ["mcp__fx__add_tool", "mcp__fx__crash", "mcp__fx__echo", "mcp__fx__fail", "mcp__fx__slow"]
    assert names[-len(mcp):] == mcp and names[0] == "bash"


def test_stdio_round_trip_and_error_result_through_the_agent_loop(stdio_catalog: McpCatalog, tmp_path: Path) -> None:
    script = [reply(tool_calls=[call("mcp__fx__echo", text="hello")]),
              reply(tool_calls=[call("mcp__fx__fail", message="the disk is full")]), reply("done")]
    provider = FunctionProvider(lambda _request: script.pop(0))
    agent = make_agent(stdio_catalog, provider, tmp_path, allow=["mcp__fx__*"])
    agent.run_turn("go")
    assert results(agent) == [("echo: hello", False), ("Error executing tool fail: the disk is full", True)]


def test_permission_rules_apply_to_mcp_tools_by_name_and_arguments(stdio_catalog: McpCatalog, tmp_path: Path) -> None:
    script = [reply(tool_calls=[call("mcp__fx__echo", text="my secret"), call("mcp__fx__echo", text="fine"),
                                call("mcp__fx__slow", seconds=0)]), reply("done")]
    provider = FunctionProvider(lambda _request: script.pop(0))
    agent = make_agent(stdio_catalog, provider, tmp_path, allow=["mcp__fx__echo"],
                       deny=['mcp__fx__echo(*"text":"*secret*)'])
    agent.run_turn("go")
    (denied, e1), (fine, e2), (slow, e3) = results(agent)
    assert e1 and "deny rule" in denied
    assert (fine, e2) == ("echo: fine", False)
    assert e3 and "needs approval" in slow  # no rule allows it and the run is headless


# Slow tier: a real MCP server's tool outlasting the client's time limit.
@pytest.mark.slow
def test_a_call_past_the_timeout_is_an_error_result(tmp_path: Path) -> None:
    from nova.mcp.config import McpOptions

    catalog = McpCatalog([stdio_config()], options=McpOptions(tool_timeout_s=1), window=200_000,
                         counter=COUNTER).start()
    try:
        outcome = catalog.call("fx", "slow", {"seconds": 5}, timeout_s=20)
        assert outcome.is_error and "did not answer within 1s" in outcome.text
        assert catalog.call("fx", "echo", {"text": "still here"}, 20).text == "echo: still here"
    finally:
        catalog.close()


def test_a_server_that_dies_is_reported_and_restarted_once(tmp_path: Path) -> None:
    events: list[tuple[str, dict[str, object]]] = []
    catalog = McpCatalog([stdio_config()], window=200_000, counter=COUNTER,
                         report=lambda name, data: events.append((name, dict(data)))).start()
    try:
        first = catalog.call("fx", "crash", {}, 20)
        assert first.is_error and "it was restarted" in first.text
        assert catalog.status()[0].state == "restarted"
        assert catalog.call("fx", "echo", {"text": "back"}, 20).text == "echo: back"
        second = catalog.call("fx", "crash", {}, 20)
        assert second.is_error and "could not be restarted" in second.text
        after = catalog.call("fx", "echo", {"text": "x"}, 20)
        assert after.is_error and "died twice" in after.text
        assert catalog.status()[0].state == "dead"
        assert [name for name, _ in events] == ["mcp_server_died", "mcp_server_restarted", "mcp_server_died"]
    finally:
        catalog.close()


def test_list_changed_costs_exactly_one_cache_break_named_by_the_diagnosis(tmp_path: Path) -> None:
    catalog = McpCatalog([stdio_config()], window=200_000, counter=COUNTER).start()
    try:
        sim = SimulatedCache([
            reply(tool_calls=[call("mcp__fx__echo", text="a")]), reply("one"),
            reply(tool_calls=[use("mcp__fx__add_tool", name="late")]),
            reply(tool_calls=[call("mcp__fx__late", value="v")]), reply("two"),
            reply(tool_calls=[call("mcp__fx__echo", text="b")]), reply("three"),
        ])
        monitor = PromptCache(model=MODEL, counter=COUNTER)
        agent = make_agent(catalog, sim.provider, tmp_path, allow=["mcp__fx__*"], cache=monitor)
        for prompt in ("first", "second", "third"):
            agent.run_turn(prompt)
        assert ("late: v", False) in results(agent)  # the new tool was sent and called at the next call
        requests = sim.provider.requests
        segments = [request_segments(r) for r in requests]
        breaks = [i for i in range(1, len(segments)) if first_changed(segments[i - 1], segments[i]) is not None]
        assert len(breaks) == 1
        at = breaks[0]
        assert "mcp__fx__late" not in [t.name for t in requests[at - 1].tools]
        assert "mcp__fx__late" in [t.name for t in requests[at].tools]
        assert [(b.call, b.cause) for b in monitor.monitor.breaks] == [(at + 1, "mcp tools changed")]
        # The prefix survives the change: from the second call after it on, 90 % is read from the cache.
        for model in (AnthropicCache(min_tokens=1024), OpenAICache()):
            later = [request_usage(model, r, COUNTER) for r in requests][at + 1:]
            assert later and (hit_rate(sum(later, Usage())) or 0.0) >= 0.9, type(model).__name__
    finally:
        catalog.close()


def test_http_round_trip_error_and_list_changed(http_url: str, tmp_path: Path) -> None:
    catalog = McpCatalog([ServerConfig(name="web", url=http_url, headers={"X-Nova-Test": "1"})], window=200_000,
                         counter=COUNTER).start()
    try:
        assert catalog.status()[0].state == "ready" and catalog.status()[0].transport == "http"
        assert catalog.call("web", "echo", {"text": "over http"}, 20).text == "echo: over http"
        failed = catalog.call("web", "fail", {"message": "nope"}, 20)
        assert failed.is_error and failed.text.endswith("nope")
        catalog.call("web", "add_tool", {"name": "fresh"}, 20)
        deadline = time.monotonic() + 10
        while not catalog.pending() and time.monotonic() < deadline:
            time.sleep(0.05)
        registry = default_registry()
        assert catalog.settle(registry) and "mcp__web__fresh" in [t.name for t in catalog.tools()]
    finally:
        catalog.close()


def test_a_large_catalog_is_sent_as_an_index_and_schemas_load_on_demand(tmp_path: Path) -> None:
    config = ServerConfig(name="big", command=sys.executable, args=(str(SERVER), "catalog", "120"))
    catalog = McpCatalog([config], window=200_000, counter=COUNTER).start()
    try:
        assert catalog.on_demand
        search, call_tool = catalog.tools()
        assert (search.name, call_tool.name) == ("mcp_search", "mcp_call")
        assert "- mcp__big__issues_op_000: Operation 0 on issues:" in search.description
        script = [reply(tool_calls=[call("mcp_search", query="mcp__big__pulls_op_001")]),
                  reply(tool_calls=[use("mcp_call", name="mcp__big__pulls_op_001", arguments={"target": "nova"})]),
                  reply(tool_calls=[use("mcp_call", name="mcp__big__pulls_op_009", arguments={"target": "x"})]),
                  reply("done")]
        provider = FunctionProvider(lambda _request: script.pop(0))
        agent = make_agent(catalog, provider, tmp_path, allow=["mcp_search", "mcp__big__pulls_op_001"])
        agent.run_turn("go")
        (found, e1), (ran, e2), (refused, e3) = results(agent)
        assert not e1 and json.loads(found.split("\n", 1)[1])[0]["input_schema"]["required"] == ["target"]
        assert (ran, e2) == ("pulls 1: nova limit=20 state=open", False)
        # mcp_call is checked as the tool it calls: no rule allows pulls_op_009.
        assert e3 and "mcp__big__pulls_op_009 needs approval" in refused
    finally:
        catalog.close()


def test_a_cancelled_turn_stops_waiting_for_the_server(stdio_catalog: McpCatalog) -> None:
    cancel = threading.Event()
    threading.Timer(0.5, cancel.set).start()
    # A call the cancel did not reach would end after the tool's 10 s with its answer, not "interrupted".
    outcome = stdio_catalog.call("fx", "slow", {"seconds": 10}, 20, cancel=cancel)
    assert outcome.is_error and outcome.text.startswith("interrupted")
    assert stdio_catalog.call("fx", "echo", {"text": "next"}, 20).text == "echo: next"
