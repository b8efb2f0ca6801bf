"""Sync jobs the host starts: switching 🧠 on for a data source runs a first, small sync of
that source as a background job with progress (the running-jobs badge polls it) and the
walk's result (``stoppedAtLimit``) in the job's details (the inventory's partial banner).

The sync pages through the connector's ``sync`` below the data source's path, downloads what
the service's walker accepts and hands it to the knowledge store, within the data source's
RAG limits (defaults merged with its stored overrides; the first sync also stops after
:data:`FIRST_SYNC_MAX_ITEMS` items). It is the host's interim walk until the kernel's walker
runner (checkpoints, deletions, timeouts) takes over; then :meth:`SyncRunner.start` hands the
job to it."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from nyla import DownloadedFile, JobStore, RunContext, WalkResult

log = logging.getLogger(__name__)

#: the first sync after switching indexing on is small; the full sync follows on schedule
FIRST_SYNC_MAX_ITEMS = 200


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
        task = asyncio.create_task(self._run(job_id, walker, source))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return job_id

    async def _run(self, job_id: str, walker: Any, source: Any) -> None:
        error = None
        try:
            result = await self._walk(job_id, walker, source)
            await self.jobs.set_details(job_id, {"results": [result.to_wire()]})
        except Exception as exc:  # the job records it; the host keeps serving
            log.exception("sync job %s failed", job_id)
            error = f"{type(exc).__name__}: {exc}"
        await self.jobs.finish(job_id, error=error)

    async def _walk(self, job_id: str, walker: Any, source: Any) -> WalkResult:
        limits = await self.kernel.knowledge.get_rag_limits(source.id)
        max_items = min(limits.get("max_items", FIRST_SYNC_MAX_ITEMS), FIRST_SYNC_MAX_ITEMS)
        result = WalkResult(data_source_id=source.id)
        context = RunContext(user_id=source.user_id, mandate_id=source.mandate_id)
        async with self.kernel.connections.open(source.connection_id, user_id=None) as session:
            adapter = session.adapter
            async for page in adapter.sync(session, source.path, None):
                result.pages += 1
                for item in page.items:
                    if item.is_folder or not walker.accepts(item):
                        continue
                    result.items_seen += 1
                    if await self.jobs.is_cancelled(job_id):
                        result.cancelled = True
                        return result
                    if not self._fits(item, result, limits, max_items):
                        if result.stopped_at_limit:
                            return result
                        continue
                    await self._index(session, item, source, context, limits, result)
                    await self.jobs.progress(job_id, result.items_indexed, None, item.path)
                if page.done:
                    break
        return result

    @staticmethod
    def _fits(item: Any, result: WalkResult, limits: dict[str, int], max_items: int) -> bool:
        size = item.size or 0
        if size > limits.get("max_file_size", size):
            result.items_skipped += 1
            result.skipped[item.id] = "larger than max_file_size"
            return False
        if result.items_indexed >= max_items or (
            result.bytes_indexed + size > limits.get("max_bytes", result.bytes_indexed + size)
        ):
            result.stopped_at_limit = True
            return False
        return True

    async def _index(
        self,
        session: Any,
        item: Any,
        source: Any,
        context: RunContext,
        limits: dict[str, int],
        result: WalkResult,
    ) -> None:
        try:
            download = await session.adapter.download(
                session, item.id, max_bytes=limits.get("max_file_size")
            )
            await self.kernel.knowledge.ingest(
                DownloadedFile(
                    name=download.name, content=download.content, mime_type=download.mime
                ),
                data_source_id=source.id,
                entry_id=item.id,
                entry_path=item.path,
                context=context,
            )
        except Exception as exc:  # one bad item does not end the sync
            result.items_failed += 1
            result.errors.append(f"{item.path}: {exc}")
            return
        result.items_indexed += 1
        result.bytes_indexed += len(download.content)

    async def aclose(self) -> None:
        """Stop the sync tasks (the jobs are recovered as interrupted at the next boot)."""
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
