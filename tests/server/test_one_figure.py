"""TOK-3: the TUI bar, the page bar, `GET …/context` and the compaction decision show one figure.

A scripted session (the demo fix, which crosses the threshold and compacts) runs through the real
server with the model paused before every call. At each pause — the history cannot change then — the
test reads the four surfaces and requires them to agree:

- the compaction decision: the figure the context controller measured and acted on;
- `GET /api/sessions/{id}/context`;
- the page bar: the last `data-nova-context` part on the stream, which the page shows as it comes;
- the TUI bar: `ContextGauge` fed from the session's event bus, as the TUI feeds it.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nova import events as ev
from nova.agent.demo import DEMO_PROMPT, make_demo_provider
from nova.context.controller import ContextController
from nova.model import ModelRequest, StreamEvent
from nova.settings import Settings
from nova.tui.gauge import ContextGauge

from .helpers import new_session, parse_sse, running_server

# Slow tier: a real server paused before every model call while four surfaces are read and compared.
pytestmark = pytest.mark.slow

PAUSE_TIMEOUT_S = 30


class PausingProvider:
    """The demo model, stopped before each call until the test lets it go on."""

    name = "demo"

    def __init__(self) -> None:
        self.inner = make_demo_provider()
        self.paused: queue.Queue[ModelRequest] = queue.Queue()
        self.go_on = threading.Semaphore(0)

    def stream(self, request: ModelRequest) -> Iterator[StreamEvent]:
        self.paused.put(request)
        assert self.go_on.acquire(timeout=PAUSE_TIMEOUT_S), "the test never released the model"
        yield from self.inner.stream(request)


def test_every_surface_shows_the_same_figure_at_every_step(nova_home: Path, project: Path) -> None:
    model = PausingProvider()

    def provider(_: Settings) -> PausingProvider:
        return model

    with running_server(nova_home, project, provider=provider) as server, server.client() as client:
        sid = new_session(client)
        live = server.hub.live(sid)
        controller = live.agent.extensions.require(ContextController)
        gauge = ContextGauge()
        bus_updates: list[ev.ContextUpdate] = []
        compaction_starts: list[int] = []  # the step during which each compaction started
        step = 0

        def on_event(event: ev.Event) -> None:
            gauge.apply(event)
            if isinstance(event, ev.ContextUpdate):
                bus_updates.append(event)
            elif isinstance(event, ev.CompactionStart):
                compaction_starts.append(step)

        live.agent.bus.subscribe(on_event)
        decisions: list[tuple[int, int]] = []  # (step, figure the controller decided on)
        measure = controller.measure

        def recording_measure(history: Any) -> int:
            used = int(measure(history))
            decisions.append((step, used))
            return used

        controller.measure = recording_measure

        received: list[bytes] = []

        def read_stream() -> None:
            with client.stream("POST", f"/api/sessions/{sid}/messages", json={"text": DEMO_PROMPT}) as response:
                for data in response.iter_bytes():
                    received.append(data)

        reader = threading.Thread(target=read_stream)
        reader.start()
        figures: list[float] = []
        with server.client() as api:
            while reader.is_alive():
                try:
                    model.paused.get(timeout=1)
                except queue.Empty:
                    continue
                # The page's stream delivers every update the bus carried so far.
                deadline = threading.Event()
                for _ in range(500):
                    chunks, _ = parse_sse(_complete(received))
                    page = [c["data"] for c in chunks if c["type"] == "data-nova-context"]
                    if len(page) == len(bus_updates):
                        break
                    deadline.wait(0.01)
                assert len(page) == len(bus_updates) and page, "the stream lags the bus"
                context = api.get(f"/api/sessions/{sid}/context").json()
                decided = controller.last_used
                shown = {
                    "decision": f"{round(decided * 100 / controller.threshold, 1):.1f}%",
                    "api": f"{context['percent']:.1f}%",
                    "page": f"{page[-1]['percent']:.1f}%",
                    "tui": gauge.percent_text,
                }
                assert len(set(shown.values())) == 1, (step, shown)
                assert context["used"] == page[-1]["used"] == gauge.used == decided, step
                assert context["limit"] == page[-1]["limit"] == gauge.limit == controller.threshold
                figures.append(context["percent"])
                step += 1
                model.go_on.release()
        reader.join(timeout=60)

    assert len(figures) >= 8, figures
    assert max(figures) >= 100 or any(used >= controller.threshold for _, used in decisions), figures
    # The decision follows the figure: a compaction starts only in a step whose measured figure is at or
    # over the threshold, and the crossing did start one.
    over = {s for s, used in decisions if used >= controller.threshold}
    assert compaction_starts, "the scripted session never compacted"
    assert set(compaction_starts) <= over, (compaction_starts, decisions)
    chunks, done = parse_sse(_complete(received))
    assert done and chunks[-1]["type"] == "finish"
    assert any(c["type"] == "data-nova-compaction-start" for c in chunks)


def _complete(received: list[bytes]) -> bytes:
    """The events received so far, without a half-received last one."""
    raw = b"".join(received)
    return raw[: raw.rfind(b"\n\n") + 2] if b"\n\n" in raw else b""
