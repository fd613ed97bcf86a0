"""The turn streams a server is sending, so that stopping the server ends each of them at once, cleanly.

uvicorn, told to stop, waits for every open response to finish, up to its graceful timeout (5 s), then
cuts the rest mid-stream. A turn's stream lasts as long as the model takes, so Ctrl-C on `nova serve`
during a turn used to take seconds and leave the client a truncated body. Instead, when the server
starts to stop (`OpenStreams.stop`), every running turn is cancelled (it ends its own stream with a
finish chunk and `[DONE]` at its next step), and a stream still open after a short grace (a model that
sends nothing, a tool still running) is ended for it with an error chunk, a finish chunk and `[DONE]`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from nova.server.channel import ChunkChannel
from nova.server.ui_stream import DONE, sse

__all__ = ["STOP_GRACE_S", "OpenStreams", "shutdown_ending"]

log = logging.getLogger(__name__)

STOP_GRACE_S = 0.3
"""How long a cancelled turn has to end its own stream before the server ends it."""


def shutdown_ending() -> bytes:
    """The last bytes of a stream the server ended: said why, finished, done."""
    return (sse({"type": "error", "errorText": "the server is shutting down; the turn was stopped"})
            + sse({"type": "finish", "finishReason": "error"}) + DONE)


class OpenStreams:
    """Every turn stream being sent, with its session. Touched only on the event loop's thread."""

    def __init__(self) -> None:
        self._streams: dict[ChunkChannel[bytes], str] = {}
        self.stopping = False

    def add(self, channel: ChunkChannel[bytes], session_id: str) -> None:
        self._streams[channel] = session_id

    def discard(self, channel: ChunkChannel[bytes]) -> None:
        self._streams.pop(channel, None)

    def stop(self, cancel_turn: Callable[[str], object], *, grace_s: float = STOP_GRACE_S) -> None:
        """The server is stopping: cancel each stream's turn now, end what is still open after `grace_s`.
        Runs on the event loop."""
        self.stopping = True
        for session_id in set(self._streams.values()):
            try:
                cancel_turn(session_id)
            except Exception:  # a session closing meanwhile: its stream is ended below all the same
                log.debug("cancelling the turn of %s on shutdown", session_id, exc_info=True)
        asyncio.get_running_loop().call_later(grace_s, self.end_all)

    def end_all(self) -> None:
        for channel in list(self._streams):
            with contextlib.suppress(RuntimeError):  # the loop is closing: nobody reads any more
                channel.end_with(shutdown_ending())
