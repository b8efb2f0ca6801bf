"""Admission of run starts: at most :data:`START_CONCURRENCY` ``POST /api/runs`` do their
database work at once, the rest wait their turn in arrival order, and only when
:data:`START_QUEUE` are already waiting is a start refused, at once, with a 503 and
``Retry-After`` (:class:`ServerBusy`).

Without it, every start in a burst (200 clients) took its connections from the kernel's pool
together: each session's round trips then waited for an event loop busy with all the others
while holding its connection, the pool's queue grew, and starts that waited longer than the
pool's timeout (30 s) failed with a 503 although the server was only slow. In turn, a start
holds its connections briefly, and the first ones to come are the first ones running."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

#: run starts doing their database work at once
START_CONCURRENCY = 8
#: run starts waiting for their turn at most; one more is refused (the server is overloaded)
START_QUEUE = 1000
#: seconds a refused client is asked to wait
RETRY_AFTER_S = 5


class ServerBusy(RuntimeError):
    """Too many run starts are waiting already: a 503 the client may retry later."""

    retry_after_s = RETRY_AFTER_S


class StartGate:
    """Run starts in arrival order, ``concurrent`` at a time, ``waiting`` more at most."""

    def __init__(self, concurrent: int = START_CONCURRENCY, waiting: int = START_QUEUE) -> None:
        self.concurrent, self.waiting = concurrent, waiting
        self._slots: asyncio.Semaphore | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._queued = 0

    @property
    def queued(self) -> int:
        """Starts waiting for their turn now."""
        return self._queued

    @contextlib.asynccontextmanager
    async def turn(self) -> AsyncIterator[None]:
        """Until this start may go on (raises :class:`ServerBusy` when the queue is full)."""
        slots = self._bind_loop()
        if slots.locked():
            if self._queued >= self.waiting:
                raise ServerBusy(
                    f"the server is busy: {self._queued} runs are waiting to start; retry"
                )
            self._queued += 1
            try:
                await slots.acquire()
            finally:
                self._queued -= 1
        else:
            await slots.acquire()
        try:
            yield
        finally:
            slots.release()

    def _bind_loop(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        if self._slots is None or self._loop is not loop:
            self._slots, self._loop, self._queued = asyncio.Semaphore(self.concurrent), loop, 0
        return self._slots
