"""A real uvicorn on loopback for the server tests, and a reader for the SSE stream."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest
import uvicorn

from nova.agent.builder import AgentOptions
from nova.agent.provider_factory import make_provider
from nova.providers.base import Provider
from nova.server.app import create_app
from nova.server.config import ServerConfig
from nova.server.token import load_or_create_token
from nova.settings import Settings, load_settings

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def require_tool(name: str, found: bool, how: str) -> None:
    """CI must have every tool (a missing one fails the run); a developer may skip, with the reason."""
    if found:
        return
    message = f"{name} is not available ({how})"
    if IN_CI:
        pytest.fail(message + " — CI installs it in .ci/run")
    pytest.skip(message)


def which(name: str) -> str | None:
    return shutil.which(name)


JS_DIR = Path(__file__).resolve().parents[1] / "js"
CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")


def require_browser() -> str:
    """Node, Debian's chromium and the npm package playwright-core (the page tests drive chromium with
    it), or the test is skipped naming what to install. Returns node's path."""
    node = which("node")
    require_tool("node", node is not None, "install Node.js 18 or newer")
    require_tool("chromium", Path(CHROMIUM).exists(), "apt-get install chromium")
    require_tool("the npm package 'playwright-core'", (JS_DIR / "node_modules" / "playwright-core").is_dir(),
                 f"run `npm ci` in {JS_DIR}")
    assert node is not None
    return node


@dataclass
class Server:
    base: str
    token: str
    settings: Settings
    project: Path
    app: Any
    headers: dict[str, str] = field(default_factory=dict)

    def client(self, *, auth: bool = True, timeout: float = 60.0) -> httpx.Client:
        headers = {"authorization": f"Bearer {self.token}"} if auth else {}
        return httpx.Client(base_url=self.base, headers=headers, timeout=timeout)

    @property
    def hub(self) -> Any:
        return self.app.state.hub


def free_socket() -> socket.socket:
    """A socket bound to a free loopback port. Made as IPPROTO_TCP: asyncio sets TCP_NODELAY only on
    connections accepted from such a socket, and without it every response handed to uvicorn this way
    waited out the client's delayed ACK (about 40 ms a request)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    return sock


@contextmanager
def running_server(
    home: Path,
    project: Path,
    *,
    config: ServerConfig | None = None,
    provider: Callable[[Settings], Provider] | None = None,
    overrides: dict[str, Any] | None = None,
    yes: bool = True,
) -> Iterator[Server]:
    """A real uvicorn in a thread on a free loopback port, stopped on exit. With `yes=False` a call that
    needs approval waits for an answer (POST …/approvals/{call_id})."""
    env = {"NOVA_HOME": str(home)}
    settings = load_settings(env=env, overrides={"provider": "demo", "model": "nova-demo", **(overrides or {})})
    token, _ = load_or_create_token(settings.home)
    factory = (lambda: provider(settings)) if provider else (lambda: make_provider(settings, env))
    app = create_app(settings, token=token, options=AgentOptions(cwd=project, yes=yes, max_steps=30),
                     make_provider=factory, config=config)
    sock = free_socket()
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=5))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.02)
    try:
        yield Server(base=f"http://127.0.0.1:{port}", token=token, settings=settings, project=project, app=app)
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()


def parse_sse(raw: bytes) -> tuple[list[dict[str, Any]], bool]:
    """The chunks of a UI message stream and whether it ended with `data: [DONE]`."""
    chunks: list[dict[str, Any]] = []
    done = False
    for block in raw.decode("utf-8").split("\n\n"):
        if not block.strip():
            continue
        assert block.startswith("data: "), block
        data = block[len("data: "):]
        if data == "[DONE]":
            done = True
            continue
        assert not done, "a chunk after [DONE]"
        chunks.append(json.loads(data))
    return chunks, done


def new_session(client: httpx.Client, title: str = "test") -> str:
    response = client.post("/api/sessions", json={"title": title})
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def send(client: httpx.Client, session_id: str, text: str) -> tuple[httpx.Response, list[dict[str, Any]], bool]:
    response = client.post(f"/api/sessions/{session_id}/messages", json={"text": text})
    chunks, done = parse_sse(response.content) if response.status_code == 200 else ([], False)
    return response, chunks, done


def texts_by_part(chunks: list[dict[str, Any]]) -> list[str]:
    """The text parts a client rebuilds from the deltas, in order."""
    order: list[str] = []
    text: dict[str, str] = {}
    for chunk in chunks:
        if chunk["type"] == "text-start":
            order.append(chunk["id"])
            text[chunk["id"]] = ""
        elif chunk["type"] == "text-delta":
            text[chunk["id"]] += chunk["delta"]
    return [text[i] for i in order]


def wait_serving(base: str, process: subprocess.Popen[str], *, seconds: float = 30.0) -> None:
    """Return once the `nova serve` process at `base` answers /health; when it exits first or `seconds`
    pass, kill it and fail with its stderr."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            if httpx.get(f"{base}/health", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise AssertionError(f"nova serve did not come up: {process.communicate()[1]}")
        time.sleep(0.05)


def run_hub_turn(hub: Any, session_id: str, text: str, *, wait_s: float) -> list[Any]:
    """One turn through a `SessionHub`, returned once its stream ended (None is the stream's end)."""
    events: list[Any] = []
    done = threading.Event()

    def sink(event: Any) -> None:
        if event is None:
            done.set()
        else:
            events.append(event)

    hub.start_turn(session_id, text, sink)
    assert done.wait(wait_s), "the turn did not finish"
    return events
