"""The in-process job runner: runs jobs as asyncio tasks over the :class:`JobStore`.

- **Heartbeat**: every ``heartbeat_s`` the runner beats for each job it runs. Liveness is not
  progress: a queued or slow job that beats is never a zombie.
- **Boot recovery**: :meth:`JobRunner.start` marks running jobs of dead worker processes as
  interrupted (a sync resumes from its checkpoint the next time).
- **Zombie killer**: every ``zombie_every_s`` (5 min) jobs without a heartbeat for
  ``zombie_after_s`` (30 min) are marked errors — jobs of workers that hang or died elsewhere.
- **Per-item timeouts** (:data:`ITEM_TIMEOUTS`: download 60 s, extract 90 s, embed 120 s) with a
  log line at each item's start and the job's ``details.current`` (at most once a second).
- **Progress and cancel**: :class:`JobHandle` writes progress and checks cancellation at most
  every 3 s (the cancel cache); cancel by job or by connection.
- **Periodic tasks**: a service registers a :class:`Periodic` in ``runner.periodic``; the
  runner's :meth:`JobRunner.start` runs it every ``every_s`` (``NYLA_JOBS=procrastinate``: the
  queue's workers run it on its ``cron``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from nyla import tracing
from nyla.db import Database
from nyla.jobs.store import JobStore, this_worker

log = logging.getLogger(__name__)

ITEM_TIMEOUTS: dict[str, float] = {"download": 60.0, "extract": 90.0, "embed": 120.0}
CANCEL_CACHE_S = 3.0
#: seconds between two writes of a job's current item (one per item phase cost a transaction)
CURRENT_EVERY_S = 1.0


class JobCancelled(Exception):
    """Raised inside a job when it was cancelled (cooperatively, between items)."""


class JobHandle:
    """What a running job reports through: progress, the current item, cancellation."""

    def __init__(
        self, store: JobStore, job_id: str, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.store = store
        self.id = job_id
        self.clock = clock
        self._cancel_checked = float("-inf")
        self._cancelled = False
        self._current: dict[str, str] | None = None
        self._current_written = float("-inf")
        self._current_later: asyncio.Task[None] | None = None

    async def progress(self, done: int, total: int | None = None, message: str = "") -> None:
        """Record progress (shown by ``nyla sync status`` and the inventory)."""
        await self.store.progress(self.id, done, total, message)

    async def details(self, **values: Any) -> None:
        """Merge values into the job's details (HTTP budget left, counters)."""
        await self.store.set_details(self.id, values)

    async def is_cancelled(self) -> bool:
        """True once the job was cancelled; reads the database at most every 3 s."""
        if self._cancelled:
            return True
        now = self.clock()
        if now - self._cancel_checked >= CANCEL_CACHE_S:
            self._cancel_checked = now
            self._cancelled = await self.store.is_cancelled(self.id)
        return self._cancelled

    @contextlib.asynccontextmanager
    async def item(
        self, name: str, phase: str, timeout_s: float | None = None
    ) -> AsyncIterator[None]:
        """One phase of one item under its timeout (``ITEM_TIMEOUTS[phase]`` by default);
        logs its start so a hang names the item. The job's ``details.current`` is written at
        most every :data:`CURRENT_EVERY_S`: a phase that starts sooner is written when that
        time is up and it still runs, so a hang is named within a second."""
        limit = timeout_s if timeout_s is not None else ITEM_TIMEOUTS.get(phase)
        log.info("job %s: %s %s (timeout %s s)", self.id, phase, name, limit)
        self._current = {"item": name, "phase": phase, "since": datetime.now(UTC).isoformat()}
        wait = self._current_written + CURRENT_EVERY_S - time.monotonic()
        if wait <= 0:
            await self._write_current()
        elif self._current_later is None or self._current_later.done():
            self._current_later = asyncio.create_task(self._write_current(wait))
        try:
            async with item_timeout(name, phase, limit):
                yield
        finally:
            self._current = None

    async def _write_current(self, after_s: float = 0.0) -> None:
        """Write the phase under way (if one still is after ``after_s``)."""
        if after_s:
            await asyncio.sleep(after_s)
        if self._current is None:
            return
        self._current_written = time.monotonic()
        try:
            await self.store.set_details(self.id, {"current": self._current})
        except Exception:  # showing the item is best effort; the job goes on
            log.exception("job %s: could not write its current item", self.id)


@contextlib.asynccontextmanager
async def item_timeout(name: str, phase: str, limit: float | None = None) -> AsyncIterator[None]:
    """One phase of one item under ``limit`` seconds (``ITEM_TIMEOUTS[phase]`` by default); a
    ``TimeoutError`` past it names the phase and the item."""
    limit = limit if limit is not None else ITEM_TIMEOUTS.get(phase)
    try:
        async with asyncio.timeout(limit):
            yield
    except TimeoutError as exc:
        raise TimeoutError(f"{phase} of {name} took longer than {limit:g} s") from exc


JobFn = Callable[[JobHandle], Awaitable[Any]]


@dataclass(frozen=True)
class Periodic:
    """A task a service runs on a schedule: ``fn()`` every ``every_s`` seconds in the process
    that started the in-process runner (the first time ``first_after_s`` after the start, so
    a start costs nothing more), or on ``cron`` in one ``nyla worker`` with
    ``NYLA_JOBS=procrastinate``. Every server runs it, so ``fn`` must be idempotent."""

    every_s: float
    cron: str
    fn: Callable[[], Awaitable[Any]]
    first_after_s: float = 60.0


class JobRunner:
    """Runs jobs in this process (the embedded default; ``NYLA_JOBS=procrastinate`` runs the
    same jobs on worker processes)."""

    def __init__(
        self,
        db: Database,
        *,
        heartbeat_s: float = 30.0,
        zombie_every_s: float = 300.0,
        zombie_after_s: float = 1800.0,
        recoveries: list[Callable[[], Awaitable[Any]]] | None = None,
    ) -> None:
        self.store = JobStore(db)
        #: what :meth:`start` runs after its own recovery (a workflow run a dead worker left
        #: goes on): each service that needs it registers one
        self.recoveries = list(recoveries or [])
        self.heartbeat_s = heartbeat_s
        self.zombie_every_s = zombie_every_s
        self.zombie_after_s = zombie_after_s
        self.worker = this_worker()
        #: name -> the periodic tasks services registered (:class:`Periodic`)
        self.periodic: dict[str, Periodic] = {}
        self._tasks: dict[str, asyncio.Task[Any]] = {}
        self._loops: list[asyncio.Task[Any]] = []
        self._beater: asyncio.Task[Any] | None = None

    async def start(self) -> int:
        """Recover interrupted jobs, run the registered recoveries, and start the heartbeat and
        zombie loops; returns how many jobs were recovered."""
        recovered = await self.store.recover_interrupted()
        await self._recover()
        if not self._loops:
            self._loops = [
                asyncio.create_task(self._every(self.heartbeat_s, self._beat)),
                asyncio.create_task(self._every(self.zombie_every_s, self._kill_zombies)),
                *(asyncio.create_task(self._periodically(p)) for p in self.periodic.values()),
            ]
        return recovered

    async def _periodically(self, periodic: Periodic) -> None:
        await asyncio.sleep(periodic.first_after_s)
        while True:
            try:
                await periodic.fn()
            except Exception:  # a failed run (database away) must not end the schedule
                log.exception("a periodic task failed")
            await asyncio.sleep(periodic.every_s)

    async def _every(self, seconds: float, fn: Callable[[], Awaitable[Any]]) -> None:
        while True:
            await asyncio.sleep(seconds)
            try:
                await fn()
            except Exception:  # a failed beat must not end the loop
                log.exception("job runner loop failed")

    async def _beat(self) -> None:
        await self.store.heartbeat([j for j, t in self._tasks.items() if not t.done()])

    async def _kill_zombies(self) -> int:
        killed = await self.store.kill_zombies(self.zombie_after_s)
        if killed:  # a zombie's work (a workflow run on a hung or far worker) goes on too
            await self._recover()
        return killed

    async def _recover(self) -> None:
        """Run the registered recoveries, each on its own."""
        for recover in self.recoveries:
            try:
                await recover()
            except Exception:  # one service's recovery must not keep the others from booting
                log.exception("a recovery failed")

    async def submit(self, kind: str, fn: JobFn, **fields: Any) -> str:
        """Start ``fn(handle)`` as a background job; returns the job id at once."""
        job_id = await self.store.start(kind, worker=self.worker, **fields)
        self._tasks[job_id] = asyncio.create_task(self._run(job_id, kind, fn))
        if not self._loops and (self._beater is None or self._beater.done()):
            # a job must beat even when no one called start(): status shows it stale else
            self._beater = asyncio.create_task(self._every(self.heartbeat_s, self._beat))
        return job_id

    async def run(self, kind: str, fn: JobFn, **fields: Any) -> tuple[str, Any]:
        """Run ``fn(handle)`` as a job and wait for it (with heartbeats meanwhile)."""
        job_id = await self.submit(kind, fn, **fields)
        beat = asyncio.create_task(self._every(self.heartbeat_s, self._beat))
        try:
            return job_id, await self._tasks[job_id]
        finally:
            beat.cancel()

    async def wait(self, job_id: str) -> Any:
        """The result of a job this runner started."""
        return await self._tasks[job_id]

    async def _run(self, job_id: str, kind: str, fn: JobFn) -> Any:
        handle = JobHandle(self.store, job_id)
        attributes = {"nyla.job.id": job_id, "nyla.job.kind": kind}
        with tracing.span(f"nyla.job {kind}", "nyla.jobs", attributes) as span:
            try:
                result = await fn(handle)
            except JobCancelled:
                span.set({"nyla.job.cancelled": True})
                return None
            except BaseException as exc:
                await self.store.finish(job_id, error=f"{type(exc).__name__}: {exc}")
                raise
            else:
                await self.store.finish(job_id)
                return result
            finally:
                self._tasks.pop(job_id, None)

    async def cancel(self, job_id: str) -> bool:
        """Cancel a running job (it stops at its next item)."""
        return await self.store.cancel(job_id)

    async def cancel_connection(self, connection_id: str) -> int:
        """Cancel every running job of a connection (``knowledge-stop``)."""
        return await self.store.cancel_by_connection(connection_id)

    async def aclose(self) -> None:
        """Stop the loops (running jobs are cancelled as tasks; recovery handles them)."""
        for task in [*self._loops, *self._tasks.values(), *filter(None, [self._beater])]:
            task.cancel()
        self._loops, self._beater = [], None
