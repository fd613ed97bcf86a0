"""The stream read by the real AI SDK client in Node (npm `ai`, pinned in tests/js/package.json)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from nova.demo import DEMO_PROMPT

from .helpers import Server, new_session, require_tool, which

JS_DIR = Path(__file__).resolve().parents[1] / "js"


def test_the_ai_sdk_rebuilds_a_session_with_a_compaction(server: Server) -> None:
    node = which("node")
    require_tool("node", node is not None, "install Node.js 18 or newer")
    require_tool("the npm package 'ai'", (JS_DIR / "node_modules" / "ai").is_dir(), f"run `npm ci` in {JS_DIR}")
    assert node is not None
    with server.client() as client:
        sid = new_session(client)
        run = subprocess.run([node, str(JS_DIR / "read_stream.mjs"), server.base, server.token, sid, DEMO_PROMPT],
                             capture_output=True, text=True, timeout=120, cwd=JS_DIR)
        assert run.returncode == 0, run.stderr
        result = json.loads(run.stdout)
        detail = client.get(f"/api/sessions/{sid}").json()
    assert result["errors"] == []
    seen = set(result["chunkTypes"])
    for kind in ("start", "start-step", "text-start", "text-delta", "text-end", "tool-input-available",
                 "tool-output-available", "data-nova-context", "data-nova-compaction-start",
                 "data-nova-compaction-end", "finish-step", "finish"):
        assert kind in seen, kind
    parts = result["parts"]
    # The same message text, part by part, as the session recorded.
    rebuilt = [p["text"] for p in parts if p["type"] == "text"]
    recorded = [m["text"] for m in detail["messages"] if m["role"] == "assistant" and m["text"]]
    assert rebuilt == recorded
    assert all(p["state"] == "done" for p in parts if p["type"] == "text")
    # Tool calls became finished dynamic tool parts with their input and output.
    tools = [p for p in parts if p["type"] == "dynamic-tool"]
    assert len(tools) == 12  # the demo script's tool calls
    # Done, with an output or (the first test run fails, as the demo means it to) an error.
    assert {p["state"] for p in tools} <= {"output-available", "output-error"}
    assert sum(p["state"] == "output-available" for p in tools) >= 7
    assert tools[0]["toolName"] == "glob" and tools[0]["input"] == {"pattern": "**/*.py"}
    # Nova's data parts: one context part (same id, replaced in place) holding the last figure.
    contexts = [p for p in parts if p["type"] == "data-nova-context"]
    assert len(contexts) == 1
    with server.client() as client:
        figure = client.get(f"/api/sessions/{sid}/context").json()
    assert contexts[0]["data"] == {k: figure[k] for k in ("used", "limit", "window", "percent")}
    assert any(p["type"] == "data-nova-compaction-start" for p in parts)
    assert any(p["type"] == "data-nova-compaction-end" and p["data"]["ok"] for p in parts)
