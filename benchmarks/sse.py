"""SSE throughput: 10,000 text deltas through Nova's API vs a bare Starlette endpoint streaming the same bytes.

Nova's side is the whole path a client sees: `POST /api/sessions/{id}/messages` on a real uvicorn on
loopback, a ScriptedProvider streaming 10,000 one-character deltas, the agent loop in its worker thread,
the event bus, the AI SDK UI message stream encoder and the thread-to-loop channel, read by an httpx
client. The baseline is a bare Starlette endpoint on the same server stack yielding the exact bytes Nova
sent, one event per chunk. Target: Nova delivers at least 0.5x the baseline's events per second.
(Nova can beat the baseline: its channel hands the response every event queued since the last write
in one chunk, where the baseline writes each event on its own.)

    python benchmarks/sse.py [--deltas 10000] [--runs 3]

Last line: {"events_per_s", "bare_events_per_s", "ratio"}.
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx2 as httpx
import uvicorn
from starlette.applications import Starlette
from starlette.responses import StreamingResponse
from starlette.routing import Route

from nova.agent.builder import AgentOptions
from nova.server.app import create_app
from nova.settings import load_settings
from nova.testing import ScriptedProvider, reply

TARGET = 0.5


@contextmanager
def serve(app: Any) -> Iterator[str]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="error", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()


def read_stream(client: httpx.Client, url: str, body: dict[str, Any] | None) -> tuple[float, bytes]:
    started = time.perf_counter()
    with client.stream("POST", url, json=body or {}) as response:
        response.raise_for_status()
        raw = b"".join(response.iter_bytes())
    return time.perf_counter() - started, raw


def count_events(raw: bytes) -> int:
    return raw.count(b"\n\n")


def nova_runs(deltas: int, runs: int, home: Path) -> tuple[list[float], bytes]:
    text = "x" * deltas
    settings = load_settings(env={"NOVA_HOME": str(home)}, overrides={"provider": "demo", "model": "nova-demo"})
    provider = ScriptedProvider([reply(text) for _ in range(runs)], chunk=1)
    token = "benchmark-token-0123456789abcdef"
    app = create_app(settings, token=token, options=AgentOptions(cwd=home, yes=True),
                     make_provider=lambda: provider)
    times: list[float] = []
    raw = b""
    with serve(app) as base, httpx.Client(base_url=base, headers={"authorization": f"Bearer {token}"},
                                          timeout=120) as client:
        for i in range(runs):
            sid = client.post("/api/sessions", json={"title": f"sse benchmark {i}"}).json()["id"]
            elapsed, raw = read_stream(client, f"/api/sessions/{sid}/messages", {"text": "stream"})
            deltas_seen = raw.count(b'"type":"text-delta"')
            if deltas_seen != deltas:
                raise SystemExit(f"expected {deltas} text deltas, got {deltas_seen}")
            times.append(elapsed)
    return times, raw


def bare_runs(payload: bytes, runs: int) -> list[float]:
    events = [block + b"\n\n" for block in payload.split(b"\n\n") if block]

    async def stream() -> AsyncIterator[bytes]:
        for event in events:
            yield event

    async def endpoint(_: Any) -> StreamingResponse:
        return StreamingResponse(stream(), media_type="text/event-stream")

    app = Starlette(routes=[Route("/stream", endpoint, methods=["POST"])])
    times: list[float] = []
    with serve(app) as base, httpx.Client(base_url=base, timeout=120) as client:
        for _ in range(runs):
            elapsed, raw = read_stream(client, "/stream", None)
            if raw != payload:
                raise SystemExit("the bare endpoint did not send the same bytes")
            times.append(elapsed)
    return times


def best(times: list[float]) -> float:
    return min(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deltas", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="nova-sse-bench-") as tmp:
        nova_times, payload = nova_runs(args.deltas, args.runs, Path(tmp))
    bare_times = bare_runs(payload, args.runs)
    events = count_events(payload)
    nova_rate = events / best(nova_times)
    bare_rate = events / best(bare_times)
    ratio = nova_rate / bare_rate
    print(f"{events:,} SSE events per stream ({args.deltas:,} text deltas), best of {args.runs} runs, loopback")
    print(f"{'endpoint':<44}  {'ms':>9}  {'events/s':>12}")
    for name, seconds, rate in (("nova API (agent + bus + encoder + channel)", best(nova_times), nova_rate),
                                ("bare Starlette, same bytes, one per chunk", best(bare_times), bare_rate)):
        print(f"{name:<44}  {seconds * 1000:>9.1f}  {rate:>12,.0f}")
    print(f"ratio {ratio:.2f}x (target >= {TARGET}x): {'met' if ratio >= TARGET else 'NOT met'}")
    print(json.dumps({"events_per_s": round(nova_rate), "bare_events_per_s": round(bare_rate),
                      "ratio": round(ratio, 3)}))
    return 0 if ratio >= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
