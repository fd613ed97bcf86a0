"""MCP catalog benchmark: a 200-tool server, on-demand loading against all definitions loaded, and the
prompt cache across a `tools/list_changed`.

    python benchmarks/catalog.py [--tools 200] [--calls 30]

A real MCP server (tests/mcp/fixture_server.py, the `mcp` SDK) is started over stdio with `--tools`
generated tools plus its own five. Two measurements, each against a baseline run in this process:

1. Definition tokens per call: the MCP part of the tool definitions the agent sends on every call, with
   the catalog loaded on demand (`mcp_search` with every name and one line, and `mcp_call`) against all
   definitions loaded. Schemas fetched by `mcp_search` enter history once; they are shown beside.
2. Cache hit rate across a list change: the same `--calls`-call agent session (on demand, scripted model)
   twice, once with a call in the middle that makes the server add a tool and send
   `tools/list_changed`, once with a plain call in its place. Usage comes from Nova's simulated
   Anthropic cache (`nova.context.cache_sim`) over the requests the agent really sent, and the hit rate is
   the one `nova replay` reports: cache read / (uncached + cache read + cache write). The agent's own
   cache-break diagnosis is printed.

Targets: definitions on demand <= 0.2x all loaded; hit rate with the change >= 0.9x without it. The last
line is one JSON object: {"definition_tokens_ratio", "hit_rate_ratio_after_list_changed"}.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from nova.agent.builder import SYSTEM_CONTRACT
from nova.agent.loop import Agent
from nova.agent.parts import ModelBinding, RunLimits, Toolbox
from nova.context.budget import ContextBudget
from nova.context.cache_sim import AnthropicCache, request_usage
from nova.context.prompt_cache import PromptCache
from nova.mcp import McpCatalog, McpOptions, ServerConfig
from nova.messages import ToolUsePart, new_id
from nova.model import ModelRequest, ToolSpec, Usage
from nova.providers.scripted import FunctionProvider, reply
from nova.sessions.link import SessionLink
from nova.settings import CompactionConfig, PermissionsConfig
from nova.tokens import TokenLedger, count_tools, counter_for_model
from nova.tools import default_registry
from nova.tools.permissions import PermissionPolicy

MODEL = "claude-sonnet-4-5"
WINDOW = 200_000
SERVER = Path(__file__).resolve().parent.parent / "tests" / "mcp" / "fixture_server.py"
COUNTER = counter_for_model(MODEL)


def catalog(tools: int, on_demand: str) -> McpCatalog:
    config = ServerConfig(name="cat", command=sys.executable, args=(str(SERVER), "catalog", str(tools)))
    return McpCatalog([config], options=McpOptions(on_demand=on_demand),  # type: ignore[arg-type]
                      window=WINDOW, counter=COUNTER).start()


def use(tool: str, **input: object) -> ToolUsePart:
    return ToolUsePart(id=new_id("toolu"), name=tool, input=input)


def mcp_tokens(request: ModelRequest) -> int:
    return count_tools([t for t in request.tools if t.name.startswith("mcp")], COUNTER)


def session(cat: McpCatalog, calls: int, *, change: bool) -> dict[str, object]:
    """`calls` model calls in turns of two (a tool call, then an answer); the middle turn's tool call
    adds a tool on the server (`change`) or is a plain call."""
    cache = AnthropicCache(min_tokens=1024)
    totals = Usage()
    fetched: list[int] = []
    turns = calls // 2
    middle = turns // 2

    def step(request: ModelRequest) -> reply:
        nonlocal totals
        usage = request_usage(cache, request, COUNTER)
        totals = totals + usage
        number = len(provider.requests) - 1
        turn, answering = divmod(number, 2)
        if answering:
            return reply(f"Turn {turn} done: the result is as expected.", usage=usage)
        if turn == 0:
            tool = use("mcp_search", query="issues pulls builds", max_results=8)
        elif turn == middle and change:
            tool = use("mcp_call", name="mcp__cat__add_tool", arguments={"name": "release_notes"})
        else:
            target = f"mcp__cat__{('issues', 'pulls', 'files', 'builds')[turn % 4]}_op_{turn * 8 % 200:03d}"
            tool = use("mcp_call", name=target, arguments={"target": f"project-{turn}", "limit": 5})
        return reply(f"Looking at step {turn}.", tool_calls=[tool], usage=usage)

    provider = FunctionProvider(step)
    monitor = PromptCache(model=MODEL, counter=COUNTER)
    with tempfile.TemporaryDirectory() as tmp:
        policy = PermissionPolicy(PermissionsConfig(allow=["mcp_search", "mcp__cat__*"]), interactive=False)
        agent = Agent(model=ModelBinding(provider=provider, name=MODEL),
                      toolbox=Toolbox(tools=cat.attach(default_registry()), policy=policy, cwd=Path(tmp)),
                      budget=ContextBudget.derive(CompactionConfig(), WINDOW), ledger=TokenLedger(COUNTER),
                      session=SessionLink(), system_prompt=SYSTEM_CONTRACT, extensions=[monitor],
                      limits=RunLimits(tool_timeout_s=30))
        for turn in range(turns):
            agent.run_turn(f"Step {turn}: check the project's state with the MCP tools.")
        for message in agent.history:
            for part in message.parts:
                if part.kind == "tool_result" and part.content.startswith(("1 tool", "2 tool", "8 tool")):
                    fetched.append(COUNTER.count(part.content))
    seen = totals.input_tokens + totals.cache_read_tokens + totals.cache_write_tokens
    return {"calls": len(provider.requests), "hit_rate": totals.cache_read_tokens / seen if seen else 0.0,
            "read": totals.cache_read_tokens, "write": totals.cache_write_tokens, "uncached": totals.input_tokens,
            "breaks": [(b.call, b.segment, b.cause) for b in monitor.monitor.breaks],
            "tool_changes": cat.changes, "fetched_schema_tokens": sum(fetched),
            "mcp_definition_tokens": [mcp_tokens(r) for r in provider.requests]}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tools", type=int, default=200)
    parser.add_argument("--calls", type=int, default=30)
    args = parser.parse_args(argv)
    started = time.monotonic()

    loaded = catalog(args.tools, "never")
    try:
        all_tokens = count_tools([ToolSpec(t.name, t.description, t.input_schema) for t in loaded.tools()], COUNTER)
        count = len(loaded.all_tools())
    finally:
        loaded.close()
    runs = {}
    for change in (False, True):
        cat = catalog(args.tools, "auto")
        try:
            if not cat.on_demand:
                print("the catalog was not loaded on demand under `auto`", file=sys.stderr)
                return 1
            runs[change] = session(cat, args.calls, change=change)
        finally:
            cat.close()
    per_call = runs[False]["mcp_definition_tokens"]
    assert isinstance(per_call, list)
    on_demand_tokens = sum(per_call) / len(per_call)
    definition_ratio = on_demand_tokens / all_tokens
    hit_without, hit_with = float(runs[False]["hit_rate"]), float(runs[True]["hit_rate"])  # type: ignore[arg-type]
    hit_ratio = hit_with / hit_without if hit_without else 0.0

    print(f"MCP catalog: {count} tools over stdio, window {WINDOW:,}, counter of {MODEL}")
    print(f"\n{'tool definitions per call (MCP part)':<44}{'tokens':>10}")
    print(f"  {'all loaded':<42}{all_tokens:>10,}")
    print(f"  {'on demand (mcp_search index + mcp_call)':<42}{on_demand_tokens:>10,.0f}")
    print(f"  {'  + schemas fetched once into history':<42}{runs[False]['fetched_schema_tokens']:>10,}")
    print(f"  ratio on demand / all loaded: {definition_ratio:.3f}x (target <= 0.2x)")
    print(f"\n{args.calls}-call session, on demand{'':<8}{'hit rate':>10}{'read':>10}{'write':>9}{'uncached':>10}")
    for change, label in ((False, "without list_changed"), (True, "with list_changed")):
        run = runs[change]
        print(f"  {label:<33}{float(run['hit_rate']):>10.1%}{run['read']:>10,}{run['write']:>9,}"  # type: ignore[arg-type]
              f"{run['uncached']:>10,}")
        for call, segment, cause in run["breaks"]:  # type: ignore[attr-defined]
            print(f"    cache break at call {call}: {segment} ({cause})")
    print(f"  catalog changes applied: {runs[True]['tool_changes']}; hit-rate ratio {hit_ratio:.3f}x (target >= 0.9x)")
    ok_defs, ok_hits = definition_ratio <= 0.2, hit_ratio >= 0.9
    print(f"\ntargets: definitions {'met' if ok_defs else 'MISSED'}, hit rate {'met' if ok_hits else 'MISSED'} "
          f"({time.monotonic() - started:.1f}s)")
    print(json.dumps({"definition_tokens_ratio": round(definition_ratio, 4),
                      "hit_rate_ratio_after_list_changed": round(hit_ratio, 4)}))
    return 0 if ok_defs and ok_hits else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
