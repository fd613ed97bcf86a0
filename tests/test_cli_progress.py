"""`nova run` while the model keeps it waiting: a spinner with the time waited on a terminal, one line
per retry with its delay, and the final error printed once. The model is a loopback OpenAI-compatible
server that fails with 429 (a short `retry-after-ms`) before it answers; no network."""

from __future__ import annotations

import io
import json
import os
import pty
import select
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from nova import events as ev
from nova.agent.clock import Clock as LoopClock
from nova.agent.clock import SystemClock
from nova.agent.loop import Agent
from nova.cli.progress import TerminalProgress
from nova.errors import Overloaded, RateLimited
from nova.testing import FunctionProvider, InstantClock

ANSWER = "Hello from the stub model."


def nova_command() -> list[str]:
    exe = shutil.which("nova", path=str(Path(sys.executable).parent))
    return [exe] if exe else [sys.executable, "-m", "nova.cli.main"]


class StubModel:
    """Fails the first `failures` requests with 429, then streams ANSWER (after `delay_s`)."""

    def __init__(self, failures: int, *, delay_s: float = 0.0) -> None:
        self.failures = failures
        self.delay_s = delay_s
        self.requests = 0
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length") or 0))
                stub.requests += 1
                if stub.requests <= stub.failures:
                    body = json.dumps({"error": {"message": "Rate limit reached, slow down",
                                                 "type": "rate_limit_error", "code": "rate_limit_exceeded"}})
                    self.send_response(429)
                    self.send_header("content-type", "application/json")
                    self.send_header("retry-after-ms", "100")
                    self.send_header("content-length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body.encode())
                    return
                time.sleep(stub.delay_s)
                base = {"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": "stub"}
                chunks = [
                    {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ANSWER},
                                          "finish_reason": None}]},
                    {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
                    {**base, "choices": [], "usage": {"prompt_tokens": 900, "completion_tokens": 6,
                                                      "total_tokens": 906}},
                ]
                payload = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("content-length", str(len(payload.encode())))
                self.end_headers()
                self.wfile.write(payload.encode())

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> StubModel:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def stub_args(tmp_path: Path) -> Iterator[list[str]]:
    yield ["--provider", "compatible", "--model", "stub-model", "--cwd", str(tmp_path)]


def run_nova(args: list[str], nova_home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*nova_command(), "run", *args], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "NOVA_HOME": str(nova_home)})


def test_each_retry_is_one_line_and_the_answer_follows(nova_home: Path, stub_args: list[str]) -> None:
    with StubModel(failures=2) as stub:
        proc = run_nova([*stub_args, "--base-url", stub.url, "say hello"], nova_home)
    assert proc.returncode == 0, proc.stderr
    assert ANSWER in proc.stdout
    retries = [line for line in proc.stderr.splitlines() if "retrying" in line]
    assert retries == [
        "nova: retrying in 0.1 s (attempt 2 of 4): 429 Rate limit reached, slow down",
        "nova: retrying in 0.1 s (attempt 3 of 4): 429 Rate limit reached, slow down",
    ]
    # Piped: plain lines only, no spinner and no terminal codes.
    assert "\x1b" not in proc.stderr and "waiting for the model" not in proc.stderr


def test_the_final_error_is_printed_once(nova_home: Path, stub_args: list[str]) -> None:
    with StubModel(failures=99) as stub:
        proc = run_nova([*stub_args, "--base-url", stub.url, "say hello"], nova_home)
        assert stub.requests == 4
    assert proc.returncode != 0
    output = proc.stdout + proc.stderr
    assert output.count("nova: error:") == 1, output
    assert sum("retrying in" in line for line in proc.stderr.splitlines()) == 3
    assert "RateLimited" not in output  # the timeline no longer prints the error a second time


def test_json_output_has_no_progress(nova_home: Path, stub_args: list[str]) -> None:
    with StubModel(failures=1) as stub:
        proc = run_nova([*stub_args, "--base-url", stub.url, "--json", "say hello"], nova_home)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["text"] == ANSWER
    assert "retrying" not in proc.stderr


# Slow tier: nova run in a pseudo-terminal, read until its spinner has turned.
@pytest.mark.slow
def test_on_a_terminal_a_spinner_shows_the_wait(nova_home: Path, stub_args: list[str]) -> None:
    with StubModel(failures=1, delay_s=0.8) as stub:
        main, child = pty.openpty()
        proc = subprocess.Popen([*nova_command(), "run", *stub_args, "--base-url", stub.url, "say hello"],
                                stdin=child, stdout=child, stderr=child, close_fds=True,
                                env={**os.environ, "NOVA_HOME": str(nova_home), "TERM": "xterm",
                                     "COLUMNS": "160"})
        os.close(child)
        screen = b""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            ready, _, _ = select.select([main], [], [], 0.2)
            if ready:
                try:
                    data = os.read(main, 65536)
                except OSError:  # the child closed the terminal
                    break
                if not data:
                    break
                screen += data
            elif proc.poll() is not None:
                break
        os.close(main)
        assert proc.wait(timeout=10) == 0
    text = screen.decode("utf-8", "replace")
    assert "waiting for the model · 0." in text  # the spinner, with the time waited
    assert "nova: retrying in 0.1 s (attempt 2 of 4)" in text
    assert ANSWER in text
    # The spinner's line is erased before the answer is printed.
    assert text.rindex("\x1b[2K") < text.index(ANSWER)


# -- the pieces, in process -----------------------------------------------------------------------------
class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_progress_draws_the_wait_and_erases_it() -> None:
    out, clock = io.StringIO(), Clock()
    progress = TerminalProgress(out, terminal=True, clock=clock)
    progress(ev.ModelCallStarted(session_id="s"))
    clock.now += 3.25
    progress._draw()
    progress(ev.RetryScheduled(session_id="s", attempt=2, max_attempts=4, delay_s=2.0, reason="529 overloaded"))
    progress(ev.ModelCallStarted(session_id="s", attempt=2))
    progress(ev.ModelResponding(session_id="s", waited_s=0.1))
    written = out.getvalue()
    assert "waiting for the model · 3.2 s" in written
    assert "\r\x1b[2Knova: retrying in 2.0 s (attempt 2 of 4): 529 overloaded\n" in written  # kept, on its own line
    assert written.endswith("\r\x1b[2K")  # answered: the line is gone
    assert progress._ticker is None


def test_piped_progress_prints_only_the_retries() -> None:
    out = io.StringIO()
    progress = TerminalProgress(out, terminal=False)
    progress(ev.ModelCallStarted(session_id="s"))
    progress(ev.RetryScheduled(session_id="s", attempt=2, max_attempts=4, delay_s=2.0, reason="529 overloaded"))
    progress(ev.ModelResponding(session_id="s", waited_s=0.1))
    assert out.getvalue() == "nova: retrying in 2.0 s (attempt 2 of 4): 529 overloaded\n"


def _retrying_agent(tmp_path: Path, answer: Callable[[object], str], bus: ev.EventBus, clock: LoopClock) -> Agent:
    from nova.agent.parts import ModelBinding, Toolbox
    from nova.context.budget import ContextBudget
    from nova.sessions.link import SessionLink
    from nova.settings import CompactionConfig, PermissionsConfig
    from nova.tokens import TokenLedger, counter_for_model
    from nova.tools import default_registry
    from nova.tools.permissions import PermissionPolicy

    return Agent(model=ModelBinding(provider=FunctionProvider(answer), name="m"),
                 toolbox=Toolbox(tools=default_registry(), cwd=tmp_path,
                                 policy=PermissionPolicy(PermissionsConfig(), interactive=False, yes=True)),
                 budget=ContextBudget.derive(CompactionConfig(), 100_000), ledger=TokenLedger(counter_for_model("m")),
                 session=SessionLink(bus=bus), clock=clock)


def test_the_loop_announces_each_retry_with_its_delay_and_reason(tmp_path: Path) -> None:
    failures = [Overloaded("overloaded", status=529), RateLimited("slow down", status=429, retry_after=0.5)]

    def answer(request: object) -> str:
        if failures:
            raise failures.pop(0)
        return "fine"

    seen: list[ev.Event] = []
    bus = ev.EventBus()
    bus.subscribe(seen.append)
    clock = InstantClock()
    agent = _retrying_agent(tmp_path, answer, bus, clock)
    assert agent.run_turn("hi").text == "fine"
    retries = [e for e in seen if isinstance(e, ev.RetryScheduled)]
    assert [r.describe() for r in retries] == [
        "retrying in 2.0 s (attempt 2 of 4): 529 overloaded",
        "retrying in 0.5 s (attempt 3 of 4): 429 slow down",
    ]
    assert clock.waits == [2.0, 0.5]  # the waits announced are the waits made
    starts = [e for e in seen if isinstance(e, ev.ModelCallStarted)]
    assert [s.attempt for s in starts] == [1, 2, 3]
    assert sum(isinstance(e, ev.ModelResponding) for e in seen) == 1
    assert not any(isinstance(e, ev.ErrorEvent) for e in seen)


class _WatchedClock(SystemClock):
    """The real clock, noting what each wait was asked for and how it ended."""

    def __init__(self) -> None:
        self.waits: list[tuple[float, bool]] = []

    def wait(self, seconds: float, cancel: threading.Event) -> bool:
        cancelled = super().wait(seconds, cancel)
        self.waits.append((seconds, cancelled))
        return cancelled


def test_a_cancel_ends_the_wait_before_a_retry(tmp_path: Path) -> None:
    def answer(request: object) -> str:
        raise RateLimited("slow down", status=429, retry_after=20.0)

    bus = ev.EventBus()
    clock = _WatchedClock()
    agent = _retrying_agent(tmp_path, answer, bus, clock)
    bus.subscribe(lambda e: agent.cancel.set() if isinstance(e, ev.RetryScheduled) else None)
    result = agent.run_turn("hi")
    # The real wait of 20 s ended cancelled (one that ran out would have retried instead).
    assert result.stop_reason == "cancelled" and clock.waits == [(20.0, True)]
