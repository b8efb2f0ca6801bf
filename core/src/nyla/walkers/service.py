"""``kernel.sync``: syncs of data sources as jobs — start, wait, status, stop — and the
consent switches that start or stop them. Hosts and the CLI use these service methods.

Switching indexing on starts one job in two passes: a first slice of
:data:`FIRST_SYNC_ITEMS` items (committed page by page, so search finds them at once), then
the whole source within its stored limits. The scheduler (:mod:`nyla.walkers.schedule`)
re-syncs every enabled source after that."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import func, select

from nyla.access.permissions import KNOWLEDGE, connector
from nyla.errors import NotFoundError, PermissionDeniedError
from nyla.jobs.store import shown_status
from nyla.jobs.tables import Job
from nyla.knowledge.cost import Held
from nyla.models.datasource import WalkResult
from nyla.models.knowledge import PurgeResult
from nyla.tables.knowledge import DataSource, FileContentIndex, UserConnection
from nyla.tables.sync import SyncState
from nyla.walkers.schedule import ResyncScheduler
from nyla.walkers.survey import survey

if TYPE_CHECKING:
    from nyla.db import Database
    from nyla.walkers.ports import (
        DeferSync,
        IndexSwitch,
        SourceConnections,
        SyncAccess,
        SyncJobs,
    )
    from nyla.walkers.runner import WalkerRunner

#: items the first sync after switching indexing on takes (a quick first answer)
FIRST_SYNC_ITEMS = 50
SYNC_KIND = "sync"


class SyncService:
    """Sync jobs of data sources: ``runner`` syncs one, as a job of ``jobs`` (with
    ``defer``: deferred to procrastinate's queue instead); ``consent`` switches a source's
    indexing, ``connections`` opens it for a survey; the rows live in ``db``. ``settings``
    are the kernel's (``resync_interval``). With ``access`` every sync job first asks
    whether the source's owner may still use the knowledge store and its connector
    (:meth:`owner_may_sync`)."""

    def __init__(
        self,
        db: Database,
        runner: WalkerRunner,
        connections: SourceConnections,
        consent: IndexSwitch,
        jobs: SyncJobs,
        *,
        defer: DeferSync | None = None,
        settings: Mapping[str, Any] | None = None,
        access: SyncAccess | None = None,
    ) -> None:
        self.db = db
        self.access = access
        self.runner = runner
        self.connections = connections
        self.consent = consent
        self.jobs = jobs
        self.defer = defer
        self.settings = settings or {}
        self._scheduler: ResyncScheduler | None = None

    @property
    def scheduler(self) -> ResyncScheduler:
        """The re-sync schedule of every enabled source (built on first use: it reads
        ``NYLA_RESYNC_INTERVAL``)."""
        if self._scheduler is None:
            self._scheduler = ResyncScheduler(self.db, self.runner, self, settings=self.settings)
        return self._scheduler

    async def aclose(self) -> None:
        """Stop the re-sync schedule's ticks, if it was started (syncs already started go on
        as jobs)."""
        if self._scheduler is not None:
            await self._scheduler.aclose()

    async def _source(self, ds_id: str, user_id: str | None) -> DataSource:
        async with self.db.session() as s:
            ds = await s.get(DataSource, ds_id)
        if ds is None:
            raise NotFoundError(f"no data source {ds_id}")
        if user_id is not None and ds.user_id != user_id:
            raise PermissionDeniedError(f"no data source {ds_id} for this user")
        return ds

    async def owner_may_sync(self, ds_id: str) -> None:
        """Raise ``ServiceAccessDenied`` (the job ends ``error`` with it, naming the
        permission) unless the source's owner, in its mandate, may use ``service.knowledge``
        and ``service.connector.<service>``: a revoke stops every later sync of it, the
        scheduled ones included, before the vendor is asked for anything."""
        if self.access is None:
            return
        async with self.db.read_session() as s:
            row = (
                await s.execute(
                    select(DataSource.user_id, DataSource.mandate_id, UserConnection.service)
                    .join(UserConnection, UserConnection.id == DataSource.connection_id)
                    .where(DataSource.id == ds_id)
                )
            ).one_or_none()
        if row is not None:  # a source gone is the runner's NotFoundError
            user_id, mandate_id, service = row
            await self.access.check_all(user_id, mandate_id, [KNOWLEDGE, connector(service)])

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
            await self.owner_may_sync(ds_id)
            handle = with_callback(handle, on_progress)
            result = await self.runner.sync(ds_id, handle, limits=limits, reconcile=reconcile)
            await handle.details(result=result.model_dump(mode="json", exclude={"skipped"}))
            return result

        return await self.jobs.run(SYNC_KIND, job, **fields)

    async def start(
        self,
        ds_id: str,
        *,
        user_id: str | None,
        limits: dict[str, int] | None = None,
        first_slice: int | None = None,
    ) -> str:
        """Start a sync in the background; returns the job id. With ``first_slice`` the job
        syncs that many items first, then the whole source (:meth:`work`)."""
        fields = await self._job_fields(ds_id, user_id)
        if self.defer is not None:
            return await self.defer(ds_id, limits=limits, first_slice=first_slice, **fields)

        async def job(handle: Any) -> WalkResult:
            return await self.work(ds_id, handle, limits=limits, first_slice=first_slice)

        return await self.jobs.submit(SYNC_KIND, job, **fields)

    async def work(
        self,
        ds_id: str,
        handle: Any,
        *,
        limits: dict[str, int] | None = None,
        first_slice: int | None = None,
    ) -> WalkResult:
        """The body of a sync job, on either backend: the first slice when asked for, then
        the source within its limits as stored when that pass begins (the caller's
        ``limits`` only narrow them). The last pass's result goes into the job's details.
        Refused (:meth:`owner_may_sync`) before anything when the owner lost the service."""
        await self.owner_may_sync(ds_id)
        if first_slice is not None:
            capped = {**(limits or {}), "max_items": first_slice}
            first = await self.runner.sync(ds_id, _Pass(handle, "first items"), limits=capped)
            await handle.details(firstSlice=_summary(first))
            if not first.stopped_at_limit or first.cancelled or await handle.is_cancelled():
                await handle.details(result=_summary(first))
                return first
        result = await self.runner.sync(ds_id, _Pass(handle, "whole source"), limits=limits)
        await handle.details(result=_summary(result))
        return result

    async def stop(
        self, *, user_id: str, data_source_id: str | None = None, connection_id: str | None = None
    ) -> int:
        """Cancel the queued and running syncs of a data source or a whole connection (a
        queued procrastinate job is aborted too); returns how many."""
        query = select(Job.id).where(Job.status.in_(("running", "queued")), Job.user_id == user_id)
        if data_source_id:
            query = query.where(Job.data_source_id == data_source_id)
        elif connection_id:
            query = query.where(Job.connection_id == connection_id)
        else:
            raise ValueError("name a data source or a connection to stop")
        async with self.db.session() as s:
            job_ids = list((await s.execute(query)).scalars())
        cancelled = 0
        for job_id in job_ids:
            cancelled += bool(await self.jobs.cancel(job_id))
        return cancelled

    async def status(self, *, user_id: str) -> list[dict[str, Any]]:
        """Per data source of the user: indexing on/off, last result, limit stop, running job
        (``status`` ``stale`` once its heartbeat is late)."""
        async with self.db.session() as s:
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

    async def survey(self, ds_id: str) -> Held | None:
        """What the source holds now, from a listing of a few seconds
        (:func:`nyla.walkers.survey.survey`): sizes a cost estimate before a full sync."""
        return await survey(self.db, self.connections, self.runner, ds_id)

    async def source_status(self, ds_id: str) -> dict[str, Any]:
        """One data source's sync on the wire: the running (or queued) job with its
        progress, the last result, how many of its files are indexed, when it last synced
        and when the schedule syncs it next (``None`` while one runs or when it is off)."""
        plans = await self.scheduler.plan(ds_id)
        if not plans:
            raise NotFoundError(f"no data source {ds_id}")
        plan = plans[0]
        async with self.db.session() as s:
            state = await s.get(SyncState, ds_id)
            indexed = await s.scalar(
                select(func.count())
                .select_from(FileContentIndex)
                .where(
                    FileContentIndex.data_source_id == ds_id, FileContentIndex.status == "indexed"
                )
            )
        return {
            "running": _running(plan.running),
            "lastResult": (state.last_result if state else None) or None,
            "indexedItems": int(indexed or 0),
            "lastSyncAt": _iso(plan.last_sync_at),
            "nextSyncAt": None if plan.running else _iso(plan.next_sync_at),
        }

    async def set_indexing(self, ds_id: str, enabled: bool, *, user_id: str) -> PurgeResult:
        """Switch RAG indexing of a data source: on starts a sync (a first slice, then the
        whole source), off purges (as consent does) and stops its running syncs."""
        result = await self.consent.set_rag_index_enabled(ds_id, enabled, actor=user_id)
        if enabled:
            await self.start(ds_id, user_id=user_id, first_slice=FIRST_SYNC_ITEMS)
        else:
            await self.stop(user_id=user_id, data_source_id=ds_id)
        return result


class _Pass:
    """A job handle whose progress messages name the pass of the job they come from."""

    def __init__(self, handle: Any, name: str) -> None:
        self._handle = handle
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._handle, attr)

    async def progress(self, done: int, total: int | None = None, message: str = "") -> None:
        await self._handle.progress(done, total, f"{self._name}: {message}" if message else "")


def _summary(result: WalkResult) -> dict[str, Any]:
    return result.model_dump(mode="json", exclude={"skipped"})


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
        "running": _running(job),
    }


def _running(job: Job | None) -> dict[str, Any] | None:
    if job is None:
        return None
    return {
        "jobId": job.id,
        "status": shown_status(job),
        "progress": job.progress,
        "message": job.message,
    }


def _iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat()
