"""Latency figures of an evaluation, each saying which latency it is (EVAL-1). Offline no model runs, so
three different clocks are kept apart:

- context build (`latency_build_ms_*`, ms per call, ms per session): Nova's own time to build each
  view in the replay, the wall time between one simulated call and the next (`CallTimer` around the
  replay's `on_call`). It includes processing the tool results in between (spill, snips) and the
  replay's own bookkeeping (the simulated cache, the invariant checks), so it is an upper bound of what
  the live agent spends before each request; the first call includes setting the replay up.
- recorded response (`latency_recorded_s_*`, s per call, s per session): from the recording's
  timestamps, each assistant message's `created_at` minus the previous message's. A call whose two
  timestamps are not both present or are equal, or whose previous message only carries the timestamp
  of the one before it (formats that stamp only the responses, as mini-swe-agent's, where the difference
  would be the whole step), is not timed; with no timed call the figures are n/a. Per session is the
  sum over the timed calls (time the agent waited on the model), not the session's wall time.
- model (`latency_model_s_*`): with `--call-model`, the measured wall time of each request sent to the
  configured provider (`TimedProvider`), from the request to its final response.

p50 and p95 interpolate linearly between the two nearest calls (two calls of 2 s and 4 s: p50 3 s).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence

from nova.evaluation.metrics import Metric
from nova.messages import Message
from nova.model import ModelRequest, ResponseDone, StreamEvent
from nova.providers.base import Provider

__all__ = ["CallTimer", "TimedProvider", "build_latency", "model_latency", "percentile", "recorded_latency",
           "response_seconds"]


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100) of `values`, linear between the two nearest ranks."""
    if not values:
        raise ValueError("no values")
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def _figures(prefix: str, values: Sequence[float], unit: str, na: str) -> dict[str, Metric]:
    if not values:
        return {f"{prefix}_p50": Metric(None, f"{unit} per call", na),
                f"{prefix}_p95": Metric(None, f"{unit} per call", na),
                f"{prefix}_per_session": Metric(None, f"{unit} per session", na)}
    return {f"{prefix}_p50": Metric(percentile(values, 50), f"{unit} per call"),
            f"{prefix}_p95": Metric(percentile(values, 95), f"{unit} per call"),
            f"{prefix}_per_session": Metric(sum(values), f"{unit} per session")}


class CallTimer:
    """Wraps a replay's `on_call` hook: the time from `start()` (or the end of the previous call's hook)
    to each call, in ms. The wrapped hook's own time (a progress bar) is not counted."""

    def __init__(self, then: Callable[[], None] | None = None, *,
                 clock: Callable[[], float] = time.perf_counter) -> None:
        self._then = then
        self._clock = clock
        self._since = clock()
        self.durations_ms: list[float] = []

    def start(self) -> None:
        self._since = self._clock()

    def __call__(self) -> None:
        self.durations_ms.append((self._clock() - self._since) * 1000)
        if self._then is not None:
            self._then()
        self._since = self._clock()


def build_latency(durations_ms: Sequence[float]) -> dict[str, Metric]:
    """latency_build_ms_p50, _p95 (ms per call) and _per_session (ms per session)."""
    return _figures("latency_build_ms", durations_ms, "ms", "no call was replayed")


def response_seconds(messages: Sequence[Message]) -> list[float]:
    """Each timed assistant message's `created_at` minus the previous message's, in seconds. A previous
    message stamped exactly like the one before it carries that one's time (a reader keeps the last
    timestamp for messages the format does not stamp, as mini-swe-agent's results): not timed, or the
    figure would be the whole step (model, tool, harness) rather than the response."""
    found = []
    for index, message in enumerate(messages):
        if message.role != "assistant" or index == 0:
            continue
        before = messages[index - 1]
        carried = index >= 2 and messages[index - 2].created_at == before.created_at
        if before.created_at <= 0 or message.created_at <= 0 or carried:
            continue
        seconds = message.created_at - before.created_at
        if seconds > 0:
            found.append(seconds)
    return found


def recorded_latency(messages: Sequence[Message]) -> dict[str, Metric]:
    """latency_recorded_s_p50, _p95 (s per call) and _per_session (s per session); n/a when no call in
    the recording has timestamps."""
    return _figures("latency_recorded_s", response_seconds(messages), "s",
                    "the recording does not time its responses")


def model_latency(seconds: Sequence[float]) -> dict[str, Metric]:
    """latency_model_s_p50, _p95 (s per call) and _per_session (s per session) of `--call-model` runs."""
    return _figures("latency_model_s", seconds, "s", "no request was sent to a model")


class TimedProvider:
    """A provider that times each request to `inner`, from the call to its final response, in seconds."""

    def __init__(self, inner: Provider) -> None:
        self.inner = inner
        self.name = inner.name
        self.seconds: list[float] = []

    def stream(self, request: ModelRequest) -> Iterator[StreamEvent]:
        began = time.perf_counter()
        for event in self.inner.stream(request):
            if isinstance(event, ResponseDone):
                self.seconds.append(time.perf_counter() - began)
            yield event
