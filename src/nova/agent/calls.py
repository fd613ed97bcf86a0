"""Every model call an agent makes, counted once, with what it was for.

An agent calls its model for more than the steps of a turn: a compaction summary, memory extraction at
a turn's end, the choice of memories to recall; a sub-agent's calls are paid by the session that started
it. `CallMeter` is the one place all of them are charged. The builder wraps the provider once per agent
and gives each component that calls the model its own view of it (`meter.provider_for(purpose)`), so a
call cannot reach the model without being counted: the usage and price of each answered call go into
the session's ledger (`SessionRecorder.add_cost`, filed by purpose) and into the meter's own tally of
this agent's calls (what `nova run --json` reports for the run).

A call whose price is unknown (a model not in the price table) is counted with cost None: the session's
cost is then unknown, never a silent $0. A call that fails before it answers is not a call here (a
provider that rejected it billed nothing).

    meter = CallMeter(provider, model="claude-sonnet-4-5", session=session)
    summarizer = ModelSummarizer(meter.provider_for("compaction"), model=...)
    meter.tally()  # {"turn": CallCount(calls=3, ...), "compaction": CallCount(calls=1, ...)}
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

from nova.model import (
    CALL_PURPOSES,
    CallCount,
    CallPurpose,
    ModelRequest,
    ModelResponse,
    ResponseDone,
    StreamEvent,
    Usage,
)
from nova.providers.base import Provider
from nova.providers.pricing import cost_usd
from nova.sessions.recorder import SessionRecorder

__all__ = ["CallMeter", "MeteredProvider", "call_cost", "calls_report", "unmetered"]


def call_cost(request: ModelRequest, response: ModelResponse, *, configured_model: str) -> float | None:
    """The price of one answered call: by the model that answered when the price table knows it (aliases
    resolve to dated ids), else by the one configured; cache writes at the TTL the request was sent with."""
    price = cost_usd(response.usage, response.model, cache_ttl=request.cache.ttl) if response.model else None
    if price is None:
        price = cost_usd(response.usage, configured_model or request.model, cache_ttl=request.cache.ttl)
    return price


class CallMeter:
    """One agent's meter: charges each call to the session (when there is one) and keeps its own tally.

    Calls come from several threads (memory extraction runs after the turn, beside the next one): the
    tally and the session's totals move under one lock."""

    def __init__(self, provider: Provider, *, model: str, session: SessionRecorder | None = None) -> None:
        self.inner = unmetered(provider)
        self.model = model
        self.session = session
        self._lock = threading.Lock()
        self._tally: dict[CallPurpose, CallCount] = {}

    def provider_for(self, purpose: CallPurpose) -> MeteredProvider:
        """The provider a component calls the model through: each answered call is charged to `purpose`."""
        if purpose not in CALL_PURPOSES:
            raise ValueError(f"unknown call purpose {purpose!r}: one of {', '.join(CALL_PURPOSES)}")
        return MeteredProvider(self, purpose)

    def charge(self, purpose: CallPurpose, usage: Usage, cost: float | None, *, calls: int = 1) -> None:
        """Charge `calls` calls of `purpose` with their usage and cost (None: unknown); a sub-agent reports
        all of its calls at once."""
        with self._lock:
            self._tally[purpose] = self._tally.get(purpose, CallCount()).add(usage, cost, calls=calls)
            if self.session is not None:
                self.session.add_cost(usage, cost, purpose, calls=calls)

    def record(self, purpose: CallPurpose, request: ModelRequest, response: ModelResponse) -> float | None:
        """One answered call; returns its price (None: unknown)."""
        price = call_cost(request, response, configured_model=self.model)
        self.charge(purpose, response.usage, price)
        return price

    def tally(self) -> dict[CallPurpose, CallCount]:
        """This agent's calls so far by purpose, in `CALL_PURPOSES` order."""
        with self._lock:
            return {p: self._tally[p] for p in CALL_PURPOSES if p in self._tally}

    def total(self) -> CallCount:
        """All of this agent's calls as one count (what a sub-agent reports to its parent)."""
        return sum(self.tally().values(), CallCount())


class MeteredProvider:
    """A provider that charges each call it answers to its meter under one purpose. It is a `Provider`:
    whatever called the model before calls it the same way."""

    def __init__(self, meter: CallMeter, purpose: CallPurpose) -> None:
        self.meter = meter
        self.purpose: CallPurpose = purpose
        self.name = meter.inner.name

    @property
    def inner(self) -> Provider:
        return self.meter.inner

    def stream(self, request: ModelRequest) -> Iterator[StreamEvent]:
        for event in self.meter.inner.stream(request):
            if isinstance(event, ResponseDone):
                # Charged before the caller sees the response: a caller that stops reading there (the
                # loop returns on it) has still paid for it.
                self.meter.record(self.purpose, request, event.response)
            yield event

    def __getattr__(self, name: str) -> Any:
        # Adapters carry more than `stream` (a base URL, a model list); a caller that reads them sees
        # the adapter's own. (Asked before `__init__` ran, by copy or pickle, there is nothing to ask.)
        meter = self.__dict__.get("meter")
        if meter is None:
            raise AttributeError(name)
        return getattr(meter.inner, name)


def unmetered(provider: Provider) -> Provider:
    """The adapter behind a metered provider (itself otherwise): a meter never wraps another meter, so a
    call is charged exactly once."""
    while isinstance(provider, MeteredProvider):
        provider = provider.inner
    return provider


def calls_report(counts: dict[CallPurpose, CallCount]) -> dict[str, dict[str, Any]]:
    """Calls by purpose as every surface prints them (`--json`, the API): see `CallCount.to_report`."""
    return {purpose: count.to_report() for purpose, count in counts.items()}
