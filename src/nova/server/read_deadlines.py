"""Deadlines for reading a request, which uvicorn does not have.

uvicorn's only read timer is the keep-alive one, armed after a response and cancelled by any byte that
arrives: a client that connects and sends its request head, or its body, one byte every few seconds
holds the connection (and, for a body, a running request) for as long as it likes, and a few hundred
such clients use up the server. Here a connection gets a fixed deadline for each part of a request,
counted from when that part begins and not moved by the bytes that trickle in:

- the request head (request line and headers): `header_timeout_s` from the connection's start, or
  from the end of the previous response on a kept-alive connection;
- the body: `body_timeout_s` from the end of the head.

A client too slow for either gets `408 Request Timeout` (when the server can still answer) and the
connection is closed. The deadline follows h11's own view of the connection (`their_state`), so it is
the parser, not a guess, that says which part the client is sending.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any, ClassVar

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["ReadTimeouts", "deadline_protocol"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ReadTimeouts:
    header_timeout_s: float
    body_timeout_s: float


def deadline_protocol(timeouts: ReadTimeouts) -> type[H11Protocol]:
    """uvicorn's h11 protocol with these read deadlines (pass it as `uvicorn.Config(http=…)`)."""
    return type("DeadlineH11Protocol", (_DeadlineH11Protocol,), {"timeouts": timeouts})


def _timeout_response(part: str) -> bytes:
    body = json.dumps({"detail": f"the request {part} was not received in time"}).encode()
    return (b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\n"
            b"content-length: " + str(len(body)).encode() + b"\r\nconnection: close\r\n\r\n" + body)


class _DeadlineH11Protocol(H11Protocol):
    timeouts: ClassVar[ReadTimeouts]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._part: str | None = None
        """What the deadline is for: "head", "body", or None when the client owes nothing."""
        self._deadline: asyncio.TimerHandle | None = None

    # -- the protocol's events -------------------------------------------------------------------
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._follow()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._follow()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._follow()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    # -- the deadline ----------------------------------------------------------------------------
    def _follow(self) -> None:
        """Arm the deadline for the part the client is sending now; keep it while that part goes on."""
        if self.transport.is_closing():
            self._disarm()
            return
        state = self.conn.their_state
        part = "head" if state is h11.IDLE else "body" if state is h11.SEND_BODY else None
        if part == self._part:
            return
        self._disarm()
        self._part = part
        if part is not None:
            seconds = self.timeouts.header_timeout_s if part == "head" else self.timeouts.body_timeout_s
            self._deadline = self.loop.call_later(seconds, self._expired, part)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        self._part = None

    def _expired(self, part: str) -> None:
        self._deadline = None
        if self.transport.is_closing():
            return
        cycle = self.cycle if part == "body" else None
        if part == "head":
            # An idle connection that never started a request is closed without a word (as a browser's
            # spare pre-opened connection would be); a started one is told why.
            started = bool(self.conn.trailing_data[0])
            if started:
                self.transport.write(_timeout_response("head"))
        elif cycle is not None and not cycle.response_started:
            self.transport.write(_timeout_response("body"))
        if cycle is not None:
            # The app is waiting for the rest of the body: it now reads a disconnect, and whatever it
            # answers goes nowhere.
            cycle.disconnected = True
            cycle.message_event.set()
        self.transport.close()
