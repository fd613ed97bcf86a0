"""Every request a model server sees is one call in the session's ledger, with its purpose: `nova run`
against a real OpenAI-compatible server on loopback, which counts what it was asked (a turn's steps,
memory recall, memory extraction, a sub-agent) and answers each as a model would. No network."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from collections import Counter
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from nova.memory.store import Memory, MemoryStore

PROMPT_TOKENS = {"turn": 900, "memory_recall": 120, "memory_extraction": 400, "subagent": 600}


def purpose_of(body: dict[str, Any]) -> str:
    """What the request is for, read as a model reads it: its system prompt and what the user asked."""
    messages = body.get("messages") or []
    system = next((str(m.get("content")) for m in messages if m.get("role") == "system"), "")
    asked = [json.dumps(m.get("content")) for m in messages if m.get("role") == "user"]
    if system.startswith("You choose which saved memories"):
        return "memory_recall"
    if system.startswith("You maintain a coding assistant's long-term memory"):
        return "memory_extraction"
    if any("You are a sub-agent" in text for text in asked):
        return "subagent"
    return "turn"


class CountingModel:
    """An OpenAI-compatible chat completions server that streams one answer per request and counts the
    requests by purpose. The first turn step delegates to a sub-agent; the second answers."""

    def __init__(self) -> None:
        self.seen: Counter[str] = Counter()
        self.lock = threading.Lock()
        model = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)))
                purpose = purpose_of(body)
                with model.lock:
                    model.seen[purpose] += 1
                payload = model.answer(purpose, body)
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def answer(self, purpose: str, body: dict[str, Any]) -> bytes:
        base = {"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": "stub-model"}
        delta: dict[str, Any]
        finish = "stop"
        if purpose == "memory_recall":
            delta = {"role": "assistant", "content": '["build-command"]'}
        elif purpose == "memory_extraction":
            delta = {"role": "assistant", "content": "Nothing worth remembering."}
        elif purpose == "subagent":
            delta = {"role": "assistant", "content": "The notes say 42."}
        elif not any(m.get("role") == "tool" for m in body.get("messages") or []):
            arguments = json.dumps({"prompt": "read notes.txt and report the number", "mode": "isolated"})
            delta = {"role": "assistant", "tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                                                          "function": {"name": "task", "arguments": arguments}}]}
            finish = "tool_calls"
        else:
            delta = {"role": "assistant", "content": "The number is 42."}
        chunks = [
            {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
            {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
            {**base, "choices": [], "usage": {"prompt_tokens": PROMPT_TOKENS[purpose], "completion_tokens": 7,
                                              "total_tokens": PROMPT_TOKENS[purpose] + 7}},
        ]
        return ("".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n").encode()

    def __enter__(self) -> CountingModel:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def nova_command() -> list[str]:
    exe = shutil.which("nova", path=str(Path(sys.executable).parent))
    return [exe] if exe else [sys.executable, "-m", "nova.cli.main"]


def _nova(args: list[str], nova_home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*nova_command(), *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "NOVA_HOME": str(nova_home)})


def test_every_request_the_server_saw_is_one_recorded_call_with_its_purpose(nova_home: Path, tmp_path: Path) -> None:
    project = tmp_path / "repo"
    (project / ".git").mkdir(parents=True)
    (project / "notes.txt").write_text("the answer is 42\n")
    now = datetime.now(UTC)
    MemoryStore.for_workspace(home=nova_home, cwd=project).write(Memory(
        name="build-command", description="how to build this project", type="project",
        body="Build with `make all`.", created=now, updated=now))
    with CountingModel() as server:
        run = _nova(["run", "--provider", "compatible", "--model", "stub-model", "--base-url", server.url,
                     "--cwd", str(project), "--yes", "--json", "what number do the notes hold?"], nova_home)
        assert run.returncode == 0, run.stderr
        seen = dict(server.seen)
    printed = json.loads(run.stdout)
    assert seen == {"turn": 2, "subagent": 1, "memory_recall": 1, "memory_extraction": 1}
    # What the run reports and what the session recorded: one call per request, by purpose.
    assert {p: c["calls"] for p, c in printed["calls"].items()} == seen
    shown = _nova(["sessions", "show", printed["session_id"], "--json"], nova_home)
    assert shown.returncode == 0, shown.stderr
    recorded = json.loads(shown.stdout)
    assert {p: c["calls"] for p, c in recorded["calls"].items()} == seen
    assert sum(c["calls"] for c in recorded["calls"].values()) == sum(seen.values())
    for purpose, count in recorded["calls"].items():
        assert count["usage"]["input_tokens"] == PROMPT_TOKENS[purpose] * seen[purpose]
        assert count["cost_usd"] is None  # a local model has no price: unknown, never $0
    # The session's billed tokens are every request's, side calls included.
    assert recorded["tokens_billed"] == sum((PROMPT_TOKENS[p] + 7) * n for p, n in seen.items())
    assert recorded["cost_usd"] is None and printed["cost_usd"] is None
    assert printed["usage"]["input_tokens"] == sum(PROMPT_TOKENS[p] * n for p, n in seen.items())
