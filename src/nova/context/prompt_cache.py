"""`PromptCache`: the prompt-cache layer of a live agent, an extension (order 300) with two hooks.

- `prepare_request` (before each call): the breakpoint plan of `nova.context.cache` on the request.
- `on_call` (after each successful call): `CacheMonitor` compares it with the previous call; a break is
  emitted as a `CacheBreak` event and recorded in the session as a `cache_break` event (which
  `nova sessions show` lists).

Both keep what they worked out for the previous call (`CachePlanner`, `CacheMonitor`), so a call costs
its new messages, not the whole history.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from nova import events as ev
from nova.context.cache import CachePlanner
from nova.context.cache_diagnosis import CacheBreakReport, CacheMonitor
from nova.context.extensions import CallRecord, Extension
from nova.model import ModelRequest
from nova.providers.pricing import model_info
from nova.tokens import TokenCounter

__all__ = ["PromptCache"]

log = logging.getLogger(__name__)


class _EventSink(Protocol):
    def record_event(self, name: str, data: Mapping[str, Any]) -> None: ...


class PromptCache(Extension):
    order = 300

    def __init__(
        self,
        *,
        model: str,
        counter: TokenCounter | None = None,
        bus: ev.EventBus | None = None,
        session: _EventSink | None = None,
        session_id: str = "",
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.counter = counter
        self.planner = CachePlanner(counter)
        self.bus = bus or ev.EventBus()
        self.session = session
        self.session_id = session_id
        self.monitor = CacheMonitor(model=model, **({"clock": clock} if clock else {}))

    def prepare_request(self, *, request: ModelRequest) -> ModelRequest:
        return self.planner.apply(request)

    def on_call(self, *, record: CallRecord) -> None:
        # Price by the model that answered when the table knows it, else by the one asked for (as the loop).
        answered = record.response.model
        model = answered if answered and model_info(answered) else record.request.model
        report = self.monitor.observe(record.request, record.response.usage, model=model)
        if report is not None:
            self._report(report)

    def _report(self, report: CacheBreakReport) -> None:
        log.info("prompt cache broke at %s (%s): %d tokens not read", report.segment, report.cause,
                 report.missed_tokens)
        self.bus.emit(ev.CacheBreak(session_id=self.session_id, segment=report.segment, cause=report.cause,
                                    cost_usd=report.cost_usd or 0.0))
        if self.session is not None:
            try:
                self.session.record_event("cache_break", report.to_dict())
            except Exception:  # the record must not break the turn; the event was still emitted
                log.exception("session record: cache_break failed")
