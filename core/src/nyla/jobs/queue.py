"""Background syncs on procrastinate, a PostgreSQL-backed task queue (``NYLA_JOBS=procrastinate``;
``nyla worker`` runs a worker process).

The queue lives in the kernel's database (its own tables, created on first use). A sync is the
task ``nyla.sync`` deferred with ``queueing_lock`` *and* ``lock`` = ``sync:<data source>``: at
most one sync of a data source waits in the queue, and at most one runs at a time, whichever
worker takes it. Transient vendor failures are retried by procrastinate's retry strategy;
cancelling aborts the procrastinate job (``cancel_job_by_id(abort=True)``) and the nyla job row,
which the walker checks between items. The periodic task ``nyla.resync`` runs the re-sync
scheduler's tick once a minute in one of the workers (:mod:`nyla.walkers.schedule`: it
defers the syncs that are due). The nyla job row (progress, heartbeat, result) is the
same as with the in-process runner, so status, inventory and the zombie killer see both alike.

Other services register their own tasks (``tasks``: name -> ``await fn(handle, args)``, on
the queue ``jobs``) and defer them with :meth:`ProcrastinateRunner.defer_task`, and their
periodic tasks (``periodic``: name -> :class:`~nyla.jobs.runtime.Periodic`, run on its
``cron`` by one worker, on the queue ``jobs``); a worker
runs ``recoveries`` after its boot recovery (a workflow run a dead worker left goes on), as
the in-process runner's ``start`` does.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from nyla import tracing
from nyla.jobs.runtime import JobHandle, JobRunner, Periodic
from nyla.jobs.store import JobStore, this_worker

if TYPE_CHECKING:
    import procrastinate

    from nyla.db import Database
    from nyla.jobs.ports import QueuedSync

log = logging.getLogger(__name__)

QUEUE = "sync"
TASK = "nyla.sync"
#: the queue of the tasks other services register (workflow runs, ...)
TASKS_QUEUE = "jobs"
MAX_ATTEMPTS = 3
#: the periodic task that defers the due syncs of every enabled source (the scheduler's tick)
RESYNC_TASK = "nyla.resync"
RESYNC_CRON = "* * * * *"


#: a registered task's body: ``await fn(handle, args)`` in a worker
QueuedTask = Callable[[JobHandle, dict[str, Any]], Awaitable[Any]]


def _conninfo(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://")


class QueueHandle(JobHandle):
    """A job handle that also stops when procrastinate asks the job to abort."""

    def __init__(self, store: JobStore, job_id: str, context: Any) -> None:
        super().__init__(store, job_id)
        self.context = context

    async def is_cancelled(self) -> bool:
        if self.context is not None and self.context.should_abort():
            await self.store.cancel(self.id)
            return True
        return await super().is_cancelled()


class ProcrastinateRunner:
    """The job runner of ``NYLA_JOBS=procrastinate``: syncs are deferred to the queue; other
    jobs (and ``run``, which waits for its result) run in this process as before.

    The queue lives in ``db``; ``sync`` gives the sync service its workers call (a callable:
    the sync service runs its jobs on this runner, so it is built after it)."""

    def __init__(
        self,
        db: Database,
        sync: Callable[[], QueuedSync],
        *,
        tasks: Mapping[str, QueuedTask] | None = None,
        recoveries: list[Callable[[], Awaitable[Any]]] | None = None,
    ) -> None:
        self.db = db
        self.sync = sync
        self.tasks = dict(tasks or {})
        #: name -> the periodic tasks services registered (each runs in one worker)
        self.periodic: dict[str, Periodic] = {}
        self.local = JobRunner(db, recoveries=recoveries)
        #: what a worker runs after its boot recovery (the in-process runner's list: one)
        self.recoveries = self.local.recoveries
        self.store = self.local.store
        self._app: Any = None

    # the in-process part of the interface
    async def start(self) -> int:
        return await self.local.start()

    async def submit(self, kind: str, fn: Any, **fields: Any) -> str:
        return await self.local.submit(kind, fn, **fields)

    async def run(self, kind: str, fn: Any, **fields: Any) -> tuple[str, Any]:
        return await self.local.run(kind, fn, **fields)

    @property
    def app(self) -> Any:
        """The procrastinate app on the kernel's database (with the ``nyla.sync`` task)."""
        if self._app is None:
            self._app = self._build_app()
        return self._app

    def _build_app(self) -> Any:
        import procrastinate

        db = self.db
        kwargs = {"options": f"-csearch_path={db.schema},public"} if db.schema else {}
        app = procrastinate.App(
            connector=procrastinate.PsycopgConnector(conninfo=_conninfo(db.url), kwargs=kwargs)
        )
        retry = procrastinate.RetryStrategy(max_attempts=MAX_ATTEMPTS, wait=5, exponential_wait=2)

        @app.task(name=TASK, queue=QUEUE, pass_context=True, retry=retry)
        async def sync_task(
            context: Any,
            data_source_id: str,
            job_id: str,
            limits: Any = None,
            first_slice: int | None = None,
        ) -> Any:
            return await self._work(context, data_source_id, job_id, limits, first_slice)

        for name in self.tasks:
            self._register(app, name)
        for name, periodic in self.periodic.items():
            self._register_periodic(app, name, periodic)

        @app.periodic(cron=RESYNC_CRON, periodic_id=RESYNC_TASK)
        @app.task(name=RESYNC_TASK, queue=QUEUE, queueing_lock=RESYNC_TASK)
        async def resync_task(timestamp: int) -> int:
            return len(await self.sync().scheduler.tick())

        return app

    def _register(self, app: procrastinate.App, name: str) -> None:
        """The procrastinate task ``name``: its registered body as a nyla job (no retries
        by the queue: a task retries what it may itself)."""

        @app.task(name=name, queue=TASKS_QUEUE, pass_context=True)
        async def task(context: Any, job_id: str | None, args: dict[str, Any]) -> Any:
            return await self._work_task(context, name, job_id, args)

    def _register_periodic(self, app: procrastinate.App, name: str, periodic: Periodic) -> None:
        """The procrastinate periodic task ``name`` (one job per tick, whichever worker)."""

        @app.periodic(cron=periodic.cron, periodic_id=name)
        @app.task(name=name, queue=TASKS_QUEUE, queueing_lock=name)
        async def tick(timestamp: int) -> Any:
            return await periodic.fn()

    async def _open(self) -> None:
        await self.db.ensure_ready()
        if not getattr(self.app, "_nyla_open", False):
            await self.app.open_async()
            await _apply_schema(self.app)
            self.app._nyla_open = True

    async def defer_sync(
        self, ds_id: str, *, limits: Any = None, first_slice: int | None = None, **fields: Any
    ) -> str:
        """Queue a sync of a data source (with ``first_slice``: that many items first, then
        the whole source, in the same job); returns the nyla job id (the one already queued
        when there is one: ``queueing_lock``)."""
        from procrastinate.exceptions import AlreadyEnqueued

        await self._open()
        data_source_id = fields.setdefault("data_source_id", ds_id)
        job_id = await self.store.start("sync", status="queued", **fields)
        await self.store.set_details(job_id, {"queue": "procrastinate"})
        lock = f"sync:{data_source_id}"
        try:
            pq_id = (
                await self.app.tasks[TASK]
                .configure(queueing_lock=lock, lock=lock)
                .defer_async(
                    data_source_id=data_source_id,
                    job_id=job_id,
                    limits=limits,
                    first_slice=first_slice,
                )
            )
        except AlreadyEnqueued:
            await self.store.finish(job_id, error="a sync of this data source is already queued")
            queued = await self.store.recent(data_source_id=data_source_id, limit=5)
            waiting = [j for j in queued if j.status == "queued" and j.id != job_id]
            return waiting[0].id if waiting else job_id
        await self.store.set_details(job_id, {"procrastinateJobId": pq_id})
        return job_id

    async def defer_task(
        self,
        name: str,
        args: dict[str, Any],
        *,
        kind: str,
        lock: str | None = None,
        record: bool = True,
        **fields: Any,
    ) -> str:
        """Queue the registered task ``name`` with ``args`` as a nyla job of ``kind``
        (``lock``: at most one job holding it runs at a time); returns the nyla job id.
        Without ``record`` no nyla job row is kept (the task records its own state, as a
        durable agent run does in its run's row): the procrastinate job's id is returned."""
        await self._open()
        if not record:
            task = self.app.tasks[name]
            if lock is not None:
                task = task.configure(lock=lock)
            return str(await task.defer_async(job_id=None, args=args))
        job_id = await self.store.start(kind, status="queued", **fields)
        await self.store.set_details(job_id, {"queue": "procrastinate"})
        task = self.app.tasks[name]
        if lock is not None:
            task = task.configure(lock=lock)
        pq_id = await task.defer_async(job_id=job_id, args=args)
        await self.store.set_details(job_id, {"procrastinateJobId": pq_id})
        return job_id

    async def _work_task(
        self, context: Any, name: str, job_id: str | None, args: dict[str, Any]
    ) -> Any:
        """A registered task's body in a worker, as a nyla job: marked this worker's, beating,
        finished with its outcome (a task deferred without a job row just runs)."""
        if job_id is None:
            return await self.tasks[name](QueueHandle(self.store, "", context), args)
        handle = QueueHandle(self.store, job_id, context)
        beat = asyncio.create_task(self._beat(job_id))
        attributes = {
            "nyla.job.id": job_id,
            "nyla.job.kind": name,
            "nyla.job.queue": "procrastinate",
        }
        with tracing.span(f"nyla.job {name}", "nyla.jobs", attributes):
            try:
                await self.store.mark_running(job_id, this_worker())
                result = await self.tasks[name](handle, args)
            except Exception as exc:
                await self.store.finish(job_id, error=f"{type(exc).__name__}: {exc}")
                raise
            else:
                await self.store.finish(job_id)
                return result
            finally:
                beat.cancel()

    async def end_stale(self, job_id: str) -> None:
        """Mark the procrastinate job of a nyla job whose worker died failed (it stays
        ``doing`` otherwise; the nyla job was ended by boot recovery)."""
        from procrastinate.jobs import Status

        job = await self.store.get(job_id)
        pq_id = (job.details or {}).get("procrastinateJobId") if job else None
        if pq_id is None:
            return
        await self._open()
        try:
            await self.app.job_manager.finish_job_by_id_async(
                int(pq_id), status=Status.FAILED, delete_job=False
            )
        except Exception:  # already ended, or retried by another worker: nothing to end
            log.debug("procrastinate job %s was not open", pq_id, exc_info=True)

    async def _work(
        self, context: Any, data_source_id: str, job_id: str, limits: Any, first_slice: Any
    ) -> Any:
        """The task body in a worker: mark the nyla job as this worker's, beat, sync."""
        from datetime import UTC, datetime

        handle = QueueHandle(self.store, job_id, context)
        beat = asyncio.create_task(self._beat(job_id))
        attributes = {
            "nyla.job.id": job_id,
            "nyla.job.kind": "sync",
            "nyla.job.queue": "procrastinate",
        }
        with tracing.span("nyla.job sync", "nyla.jobs", attributes):
            try:
                await self.store.mark_running(job_id, this_worker())
                await self.store.set_details(job_id, {"pickedUpAt": datetime.now(UTC).isoformat()})
                result = await self.sync().work(
                    data_source_id, handle, limits=limits, first_slice=first_slice
                )
                await self.store.finish(job_id)
                return result.items_indexed
            except Exception as exc:
                error = f"{type(exc).__name__}: {exc}"
                attempts = getattr(getattr(context, "job", None), "attempts", MAX_ATTEMPTS)
                if attempts + 1 < MAX_ATTEMPTS:  # procrastinate retries it: the job waits again
                    await self.store.requeue(job_id, error)
                else:
                    await self.store.finish(job_id, error=error)
                raise
            finally:
                beat.cancel()

    async def _beat(self, job_id: str) -> None:
        while True:
            await self.store.heartbeat([job_id])
            await asyncio.sleep(self.local.heartbeat_s)

    async def cancel(self, job_id: str) -> bool:
        """Cancel the nyla job and abort its procrastinate job."""
        job = await self.store.get(job_id)
        cancelled = await self.store.cancel(job_id)
        pq_id = (job.details or {}).get("procrastinateJobId") if job else None
        if pq_id is not None:
            await self._open()
            await self.app.job_manager.cancel_job_by_id_async(int(pq_id), abort=True)
        return cancelled

    async def cancel_connection(self, connection_id: str) -> int:
        return await self.store.cancel_by_connection(connection_id)

    async def run_worker(self, *, concurrency: int = 2, name: str | None = None) -> None:
        """Work the sync queue and the registered tasks' until stopped (``nyla worker``):
        boot recovery first (with the registered recoveries)."""
        await self._open()
        recovered = await self.local.start()
        if recovered:
            log.warning("recovered %d interrupted job(s)", recovered)
        await self.app.run_worker_async(
            queues=[QUEUE, TASKS_QUEUE],
            concurrency=concurrency,
            name=name or this_worker(),
            wait=True,
        )

    async def aclose(self) -> None:
        await self.local.aclose()
        if self._app is not None and getattr(self._app, "_nyla_open", False):
            await self._app.close_async()


async def _apply_schema(app: Any) -> None:
    """Create procrastinate's tables once (skipped when they exist), under a transaction's
    advisory lock (held until the tables are committed): servers and workers started
    together on a fresh database would otherwise all create them, and all but one fail."""
    async with app.connector.pool.connection() as conn, conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(hashtext('nyla.procrastinate.schema'))")
        exists = await (
            await conn.execute("SELECT to_regclass('procrastinate_jobs') IS NOT NULL")
        ).fetchone()
        if not exists[0]:
            await conn.execute(app.schema_manager.get_schema())
