"""``kernel.sync``: syncs of data sources as jobs — start, wait, status, stop — and the
consent switches that start or stop them. Hosts and the CLI use these service methods."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from sqlalchemy import CursorResult, select, update

from nyla.jobs.store import shown_status
from nyla.jobs.tables import Job
from nyla.knowledge.consent import NotFoundError, PermissionDeniedError
from nyla.knowledge.tables import DataSource
from nyla.models.datasource import WalkResult
from nyla.models.knowledge import PurgeResult
from nyla.walkers.runner import WalkerRunner
from nyla.walkers.tables import SyncState

if TYPE_CHECKING:
    from nyla.jobs.queue import ProcrastinateRunner
    from nyla.kernel import Kernel

#: items the first sync after switching indexing on takes (a quick first answer)
FIRST_SYNC_ITEMS = 50
SYNC_KIND = "sync"


class SyncService:
    """Sync jobs of data sources over the kernel's job runner."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self.runner = WalkerRunner(kernel)

    async def _source(self, ds_id: str, user_id: str | None) -> DataSource:
        async with self.kernel.db.session() as s:
            ds = await s.get(DataSource, ds_id)
        if ds is None:
            raise NotFoundError(f"no data source {ds_id}")
        if user_id is not None and ds.user_id != user_id:
            raise PermissionDeniedError(f"no data source {ds_id} for this user")
        return ds

    async def _job_fields(self, ds_id: str, user_id: str | None) -> dict[str, Any]:
        ds = await self._source(ds_id, user_id)
        return {
            "user_id": ds.user_id,
            "mandate_id": ds.mandate_id,
            "connection_id": ds.connection_id,
            "data_source_id": ds.id,
            "message": f"sync {ds.label or ds.path}",
        }

    async def run(
        self,
        ds_id: str,
        *,
        user_id: str | None,
        limits: dict[str, int] | None = None,
        reconcile: bool = True,
        on_progress: Any = None,
    ) -> tuple[str, WalkResult]:
        """Sync a data source now, as a job, and wait for it; returns ``(job id, result)``.
        ``on_progress(done, total, message)`` also gets the job's progress (a CLI bar)."""
        from nyla.walkers.progress import with_callback

        fields = await self._job_fields(ds_id, user_id)

        async def job(handle: Any) -> WalkResult:
            handle = with_callback(handle, on_progress)
            result = await self.runner.sync(ds_id, handle, limits=limits, reconcile=reconcile)
            await handle.details(result=result.model_dump(mode="json", exclude={"skipped"}))
            return result

        return await self.kernel.jobs.run(SYNC_KIND, job, **fields)

    async def start(
        self, ds_id: str, *, user_id: str | None, limits: dict[str, int] | None = None
    ) -> str:
        """Start a sync in the background; returns the job id."""
        fields = await self._job_fields(ds_id, user_id)
        if self.kernel.jobs_backend == "procrastinate":
            queue = cast("ProcrastinateRunner", self.kernel.jobs)
            return await queue.defer_sync(ds_id, limits=limits, **fields)

        async def job(handle: Any) -> WalkResult:
            return await self.runner.sync(ds_id, handle, limits=limits)

        return await self.kernel.jobs.submit(SYNC_KIND, job, **fields)

    async def stop(
        self, *, user_id: str, data_source_id: str | None = None, connection_id: str | None = None
    ) -> int:
        """Cancel running syncs of a data source or a whole connection; returns how many."""
        query = update(Job).where(Job.status.in_(("running", "queued")), Job.user_id == user_id)
        if data_source_id:
            query = query.where(Job.data_source_id == data_source_id)
        elif connection_id:
            query = query.where(Job.connection_id == connection_id)
        else:
            raise ValueError("name a data source or a connection to stop")
        async with self.kernel.db.session() as s:
            result = await s.execute(query.values(status="cancelled"))
        return int(cast("CursorResult[Any]", result).rowcount or 0)

    async def status(self, *, user_id: str) -> list[dict[str, Any]]:
        """Per data source of the user: indexing on/off, last result, limit stop, running job
        (``status`` ``stale`` once its heartbeat is late)."""
        async with self.kernel.db.session() as s:
            rows = (
                await s.execute(
                    select(DataSource, SyncState)
                    .outerjoin(SyncState, SyncState.data_source_id == DataSource.id)
                    .where(DataSource.user_id == user_id)
                    .order_by(DataSource.connection_id, DataSource.path)
                )
            ).all()
            jobs = {
                j.data_source_id: j
                for j in (
                    await s.execute(
                        select(Job)
                        .where(Job.user_id == user_id, Job.status == "running")
                        .order_by(Job.started_at)
                    )
                ).scalars()
            }
        return [_status_row(ds, state, jobs.get(ds.id)) for ds, state in rows]

    async def set_indexing(self, ds_id: str, enabled: bool, *, user_id: str) -> PurgeResult:
        """Switch RAG indexing of a data source: on starts a first small sync, off purges
        (as consent does) and stops its running syncs."""
        result = await self.kernel.knowledge.set_rag_index_enabled(ds_id, enabled, actor=user_id)
        if enabled:
            await self.start(ds_id, user_id=user_id, limits={"max_items": FIRST_SYNC_ITEMS})
        else:
            await self.stop(user_id=user_id, data_source_id=ds_id)
        return result


def _status_row(ds: DataSource, state: SyncState | None, job: Job | None) -> dict[str, Any]:
    last = (state.last_result if state else None) or {}
    return {
        "dataSourceId": ds.id,
        "connectionId": ds.connection_id,
        "path": ds.path,
        "label": ds.label,
        "ragIndexEnabled": ds.rag_index_enabled,
        "pages": state.pages if state else 0,
        "resumable": bool(state and state.checkpoint),
        "stoppedAtLimit": state.stopped_at_limit if state else None,
        "skipped": len(state.skipped) if state else 0,
        "lastResult": last,
        "running": None
        if job is None
        else {
            "jobId": job.id,
            "status": shown_status(job),
            "progress": job.progress,
            "message": job.message,
        },
    }
