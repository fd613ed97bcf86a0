"""Keep, beside the session, the fixed part of the last request its model was sent (`nova.sessions.sent`).

An extension, not part of the loop: it sees each call as sent (`on_call`, after the cache layer placed
its breakpoints) and writes once per turn, at the turn's end and when the agent closes, so a turn of
fifty steps costs one small write. A failed write is logged and costs the turn nothing: `nova context`
then recomputes, as it does for a session recorded before this file existed.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

from nova.context.extensions import CallRecord, Extension, TurnResult
from nova.errors import StorageError
from nova.model import ModelRequest
from nova.sessions.sent import SentRequest, write_sent
from nova.tokens import TokenLedger

__all__ = ["SentRequestLog"]

log = logging.getLogger(__name__)


class SentRequestLog(Extension):
    order = 900  # after every extension that shapes the request: it records the request as sent

    def __init__(self, *, directory: Path, provider: str, window: int, threshold: int, ledger: TokenLedger) -> None:
        self.directory = directory
        self.provider = provider
        self.window = window
        self.threshold = threshold
        self.ledger = ledger
        self._last: CallRecord | None = None
        self._written: CallRecord | None = None
        self._measured: tuple[ModelRequest | None, int] = (None, 0)
        self._at = 0.0

    def prepare_request(self, *, request: ModelRequest) -> ModelRequest:
        # Measured before the call, while the ledger's anchor (the previous reply) is in the request: after
        # it the anchor is this call's own reply, and measuring the request then counts all of it again.
        self._measured = (request, self.ledger.estimate(request.messages, request.system, request.tools))
        return request

    def on_call(self, *, record: CallRecord) -> None:
        self._last, self._at = record, time.time()  # measured when written: once per turn, not per call

    def on_turn_end(self, *, result: TurnResult) -> None:
        self._write()

    def close(self) -> None:
        self._write()

    def _sent_tokens(self, request: ModelRequest) -> int:
        measured_for, tokens = self._measured
        if measured_for is request:
            return tokens
        return self.ledger.estimate(request.messages, request.system, request.tools)

    def _write(self) -> None:
        record = self._last
        if record is None or record is self._written:
            return
        request = record.request
        sent = SentRequest(
            provider=self.provider, model=request.model, window=self.window, threshold=self.threshold,
            system=request.system, tools=tuple(request.tools),
            sent_tokens=self._sent_tokens(request),
            reported_input_tokens=record.response.usage.context_tokens or None, at=self._at)
        try:
            write_sent(self.directory, sent)
        except StorageError as exc:
            log.warning("%s; `nova context` will recompute this session's request instead", exc)
            return
        self._written = record
