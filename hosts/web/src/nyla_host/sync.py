"""Sync jobs the host starts: switching 🧠 on for a data source runs a first, small sync of
that source with the walker of its connector's service, as a background job with progress
(the running-jobs badge polls them) and the walk's result (``stoppedAtLimit``) in the job's
details (the inventory's partial banner reads it)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from nyla import JobStore, RunContext

log = logging.getLogger(__name__)

#: the first sync after switching indexing on is small; the full sync follows on schedule
FIRST_SYNC_LIMITS = {"max_items": 200}


class _Progress:
    """The walker's progress callback, written to the job row without blocking the walk."""

    def __init__(self, jobs: JobStore, job_id: str) -> None:
        self.jobs, self.job_id = jobs, job_id
        self.cancelled = False
        self._pending: set[asyncio.Task[Any]] = set()

    def update(self, done: int, total: int | None = None, message: str = "") -> None:
        task = asyncio.ensure_future(self._write(done, total, message))
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def _write(self, done: int, total: int | None, message: str) -> None:
        await self.jobs.progress(self.job_id, done, total, message)
        self.cancelled = await self.jobs.is_cancelled(self.job_id)

    def is_cancelled(self) -> bool:
        return self.cancelled

    async def drain(self) -> None:
        if self._pending:
            await asyncio.gather(*self._pending, return_exceptions=True)


class SyncRunner:
    """Starts and tracks the host's sync jobs (one asyncio task each)."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel
        self.jobs = JobStore(kernel.db)
        self._tasks: set[asyncio.Task[Any]] = set()

    def walker_for(self, service: str) -> Any | None:
        """The walker that syncs ``service``, if one is installed."""
        for walker in self.kernel.plugins.walkers.values():
            if service in getattr(walker, "services", []):
                return walker
        return None

    async def start(self, source: Any, service: str) -> str | None:
        """Start the first sync of ``source`` (a ``DataSourceView``); the job id, or ``None``
        when no walker serves ``service``."""
        walker = self.walker_for(service)
        if walker is None:
            return None
        job_id = await self.jobs.start(
            "rag-sync",
            user_id=source.user_id,
            mandate_id=source.mandate_id,
            connection_id=source.connection_id,
            data_source_id=source.id,
            message=f"first sync of {source.label or source.path}",
        )
        task = asyncio.create_task(self._walk(job_id, walker, source))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return job_id

    async def _walk(self, job_id: str, walker: Any, source: Any) -> None:
        progress = _Progress(self.jobs, job_id)
        context = RunContext(user_id=source.user_id, mandate_id=source.mandate_id)

        async def ingest(downloaded: Any, **kw: Any) -> Any:
            kw.setdefault("context", context)
            return await self.kernel.knowledge.ingest(downloaded, **kw)

        error = None
        try:
            results = await walker.walk(
                [source.to_wire()], progress, ingest, limits=dict(FIRST_SYNC_LIMITS)
            )
            await progress.drain()
            await self.jobs.set_details(job_id, {"results": [r.to_wire() for r in results]})
        except Exception as exc:  # the job records it; the host keeps serving
            log.exception("sync job %s failed", job_id)
            error = f"{type(exc).__name__}: {exc}"
        await self.jobs.finish(job_id, error=error)

    async def aclose(self) -> None:
        """Stop the sync tasks (the jobs are recovered as interrupted at the next boot)."""
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
