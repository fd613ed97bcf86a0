"""The stream read by the real AI SDK client in Node (npm `ai`, pinned in tests/js/package.json)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from nova.agent.demo import DEMO_PROMPT

from .helpers import Server, new_session, require_tool, running_server, which

# Slow tier: Node and the AI SDK client against a real server.
pytestmark = pytest.mark.slow

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


def test_the_ai_sdk_rebuilds_an_approval_round_trip(nova_home: Path, project: Path) -> None:
    """The SDK's own tool-approval-request and tool-output-denied chunks: the client answers through
    POST …/approvals/{toolCallId} while the stream waits, and rebuilds approved and denied calls."""
    node = which("node")
    require_tool("node", node is not None, "install Node.js 18 or newer")
    require_tool("the npm package 'ai'", (JS_DIR / "node_modules" / "ai").is_dir(), f"run `npm ci` in {JS_DIR}")
    assert node is not None
    with running_server(nova_home, project, yes=False) as server, server.client() as client:
        sid = new_session(client)
        run = subprocess.run([node, str(JS_DIR / "read_stream.mjs"), server.base, server.token, sid, DEMO_PROMPT,
                              "session,deny"], capture_output=True, text=True, timeout=120, cwd=JS_DIR)
        assert run.returncode == 0, run.stderr
        result = json.loads(run.stdout)
    assert result["errors"] == []
    assert {"tool-approval-request", "tool-output-denied"} <= set(result["chunkTypes"])
    # Two questions: the first bash call (allowed for the session, so the second is not asked) and the edit.
    assert [(a["decision"], a["status"]) for a in result["approvals"]] == [("session", 200), ("deny", 200)]
    tools = {p["toolCallId"]: p for p in result["parts"] if p["type"] == "dynamic-tool"}
    bash_id, edit_id = (a["toolCallId"] for a in result["approvals"])
    approved, denied = tools[bash_id], tools[edit_id]
    assert approved["toolName"] == "bash" and approved["state"] in ("output-available", "output-error")
    assert approved["approval"]["id"] == result["approvals"][0]["approvalId"]
    assert approved["approval"]["descriptor"]["summary"] == "bash: python -m unittest -v 2>&1"
    assert denied["toolName"] == "edit_file" and denied["state"] == "output-denied"
    assert denied["approval"]["descriptor"]["summary"] == "edit_file: calc/stats.py"
    # The last bash call ran without a question, under the session grant.
    last_bash = [p for p in tools.values() if p["toolName"] == "bash"][-1]
    assert last_bash["toolCallId"] != bash_id and "approval" not in last_bash
    assert last_bash["state"] in ("output-available", "output-error")
