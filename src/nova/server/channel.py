"""`ChunkChannel`: hands items from the agent's worker thread to one asyncio consumer, in batches.

The worker never blocks and never waits for the client: a client that reads slowly or goes away costs
memory for what it has not read, never a stalled turn. The consumer gets everything queued so far in
one `drain()`, and the loop is woken at most once per batch, which keeps a fast text stream cheap.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import deque
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["ChunkChannel"]

T = TypeVar("T")


class ChunkChannel(Generic[T]):
    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._items: deque[T] = deque()
        self._lock = threading.Lock()
        self._wakeup = asyncio.Event()
        self._wake_pending = False
        self._closed = False

    @property
    def closed(self) -> bool:
        return self._closed

    # -- producer side (any thread) --------------------------------------------------------------
    def put(self, item: T) -> None:
        with self._lock:
            if self._closed:
                return  # ended (see `end_with`): nothing may follow the last item
            self._items.append(item)
            if self._wake_pending:
                return
            self._wake_pending = True
        self._call_soon(self._wake)

    def close(self) -> None:
        with self._lock:
            self._closed = True
        self._call_soon(self._wake)

    def end_with(self, item: T) -> bool:
        """Put a last item and close, unless already closed; later puts are dropped. For ending a stream
        from outside its producer (the server shutting down). Returns whether this call ended it."""
        with self._lock:
            if self._closed:
                return False
            self._items.append(item)
            self._closed = True
        self._call_soon(self._wake)
        return True

    def _call_soon(self, fn: Callable[[], None]) -> None:
        # RuntimeError: the loop is gone (server shutting down), so nobody is listening any more.
        with contextlib.suppress(RuntimeError):
            self._loop.call_soon_threadsafe(fn)

    def _wake(self) -> None:
        with self._lock:
            self._wake_pending = False
        self._wakeup.set()

    # -- consumer side (the event loop) ----------------------------------------------------------
    async def drain(self) -> list[T]:
        """Everything queued so far, waiting for at least one item; [] once closed and empty."""
        while True:
            self._wakeup.clear()
            with self._lock:
                items = list(self._items)
                self._items.clear()
                closed = self._closed
            if items or closed:
                return items
            await self._wakeup.wait()
