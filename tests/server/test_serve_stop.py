"""Ctrl-C on a real `nova serve` subprocess: it exits promptly when idle, and a turn being streamed is
stopped and its stream ended cleanly (a finish chunk and `[DONE]`), not cut after uvicorn's 5-second
graceful timeout. The model is a loopback OpenAI-compatible server that streams one word every 0.1 s.

"Promptly" is what uvicorn tells: when open connections or tasks hold it past its graceful timeout it
cancels them and says so on stderr ("timeout graceful shutdown exceeded"); a server that stops as it
should never says it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx2 as httpx
import pytest

from nova.server.token import TOKEN_FILE

from .helpers import free_socket, parse_sse, wait_serving

# Slow tier: nova serve subprocesses stopped with Ctrl-C, one with a model that streams slowly.
pytestmark = pytest.mark.slow


class _SlowModel(BaseHTTPRequestHandler):
    """Chat Completions streaming a long answer slowly, so a turn is running when the server is stopped."""

    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("connection", "close")
        self.end_headers()
        try:
            for i in range(600):
                chunk = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "slow",
                         "choices": [{"index": 0, "delta": {"content": f"w{i} "}, "finish_reason": None}]}
                self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
                self.wfile.flush()
                time.sleep(0.1)
        except OSError:
            pass  # the turn was cancelled and the client went away

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def slow_model() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _SlowModel)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def _serve(home: Path, project: Path, *args: str) -> tuple[subprocess.Popen[str], str]:
    sock = free_socket()
    port = sock.getsockname()[1]
    sock.close()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NOVA_", "ANTHROPIC_", "OPENAI_"))}
    env["NOVA_HOME"] = str(home)
    process = subprocess.Popen([sys.executable, "-m", "nova.cli.main", "serve", "--port", str(port), "--cwd", str(project),
                                *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    wait_serving(base, process)
    return process, base


GRACEFUL_TIMEOUT_HIT = "timeout graceful shutdown exceeded"


def _stop(process: subprocess.Popen[str]) -> str:
    """SIGINT, as Ctrl-C sends; the process's stderr once it has exited."""
    process.send_signal(signal.SIGINT)
    try:
        _, err = process.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        _, err = process.communicate()
        raise AssertionError("nova serve did not exit within 30 s of Ctrl-C") from None
    return err


def test_an_idle_server_exits_without_waiting_for_its_kept_alive_connection(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    process, base = _serve(tmp_path / "home", project, "--provider", "demo")
    headers = {"authorization": f"Bearer {(tmp_path / 'home' / TOKEN_FILE).read_text().strip()}"}
    with httpx.Client(headers=headers, timeout=60) as client:  # a kept-alive connection, as a browser's
        session = client.post(f"{base}/api/sessions", json={"title": "t"}).json()["id"]
        _, done = parse_sse(client.post(f"{base}/api/sessions/{session}/messages", json={"text": "hi"}).content)
        assert done
        time.sleep(0.3)
        err = _stop(process)  # the connection is still open, idle
    assert process.returncode == 0 and "Traceback" not in err, err
    assert GRACEFUL_TIMEOUT_HIT not in err, err


def test_ctrl_c_during_a_turn_ends_its_stream_cleanly_and_promptly(tmp_path: Path, slow_model: str) -> None:
    project = tmp_path / "project"
    project.mkdir()
    home = tmp_path / "home"
    process, base = _serve(home, project, "--provider", "compatible", "--base-url", slow_model, "--model", "slow")
    headers = {"authorization": f"Bearer {(home / TOKEN_FILE).read_text().strip()}"}
    session = httpx.post(f"{base}/api/sessions", json={"title": "t"}, headers=headers, timeout=10).json()["id"]
    received: list[bytes] = []
    failure: list[BaseException] = []

    def read() -> None:
        try:
            with httpx.stream("POST", f"{base}/api/sessions/{session}/messages", json={"text": "go"},
                              headers=headers, timeout=60) as response:
                received.extend(response.iter_bytes())
        except BaseException as exc:  # a cut stream is what the test looks for
            failure.append(exc)

    reader = threading.Thread(target=read)
    reader.start()
    deadline = time.monotonic() + 30
    while b"w3 " not in b"".join(received):  # the model is answering: a turn is running
        assert time.monotonic() < deadline and reader.is_alive(), (received, failure)
        time.sleep(0.05)
    err = _stop(process)
    reader.join(10)
    assert not failure, failure  # the body was complete, not cut mid-stream
    body = b"".join(received)
    chunks, done = parse_sse(body)
    assert done and chunks[-1]["type"] == "finish"
    assert b"w599 " not in body  # the turn was stopped, not streamed to its end (a minute of words)
    assert process.returncode == 0 and "Traceback" not in err, err
    assert GRACEFUL_TIMEOUT_HIT not in err, err


def test_a_stream_whose_turn_does_not_stop_is_ended_for_it() -> None:
    """A model that sends nothing never reaches the turn's next step: after the grace the server ends
    the stream itself, and whatever the turn puts later is dropped."""
    import asyncio

    from nova.server.channel import ChunkChannel
    from nova.server.streams import OpenStreams, shutdown_ending

    async def scenario() -> tuple[list[bytes], list[bytes], list[str]]:
        channel: ChunkChannel[bytes] = ChunkChannel(asyncio.get_running_loop())
        streams = OpenStreams()
        streams.add(channel, "s1")
        cancelled: list[str] = []
        streams.stop(cancelled.append, grace_s=0.05)
        first = await asyncio.wait_for(channel.drain(), 5)
        channel.put(b"late")
        return first, await channel.drain(), cancelled

    first, rest, cancelled = asyncio.run(scenario())
    assert cancelled == ["s1"]
    assert first == [shutdown_ending()] and rest == []
    chunks, done = parse_sse(first[0])
    assert done and [c["type"] for c in chunks] == ["error", "finish"]
