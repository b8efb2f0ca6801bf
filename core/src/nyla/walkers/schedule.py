"""Re-syncing every enabled data source on a schedule (``NYLA_RESYNC_INTERVAL`` seconds,
default 3600; ``0`` switches it off).

A data source is *due* when its RAG indexing is effectively on (its tree element's policy
and its connection's consent), a walker for its service is installed, no sync of it is
queued or running (one whose process stopped beating, ``stale``, does not count: the
source's advisory lock still keeps two syncs apart), and its last sync ended at least the
interval ago, or it never ran. :meth:`ResyncScheduler.tick` starts a sync of every due
source — a plain method, so a test asks "sync what is due now" without waiting. In process,
:meth:`ResyncScheduler.start` ticks in a task (the host's lifespan starts it); with
``NYLA_JOBS=procrastinate`` the queue's periodic task ``nyla.resync`` ticks once a minute in
a ``nyla worker``.

One tick at a time over every process on the database: a tick holds an advisory lock, and a
tick that finds it taken does nothing (the other one starts the same syncs).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import func, select, text

from nyla.errors import NylaError
from nyla.jobs.tables import STALE, Job, shown_status
from nyla.knowledge.policy import effective_policy
from nyla.tables.knowledge import DataSource, UserConnection
from nyla.walkers.lock import lock_key

if TYPE_CHECKING:
    from nyla.db import Database
    from nyla.walkers.ports import SyncPort, WalkerLookup

log = logging.getLogger(__name__)

DEFAULT_INTERVAL_S = 3600.0
#: how often the in-process scheduler looks for due sources (at most; shorter intervals
#: are looked at as often as they are)
CHECK_EVERY_S = 60.0
ENDED = ("done", "error", "cancelled")
OPEN = ("running", "queued")


class ScheduleConfigError(NylaError, ValueError):
    """``NYLA_RESYNC_INTERVAL`` is not a number of seconds."""


def resync_interval(settings: Mapping[str, Any] | None = None) -> float:
    """Seconds between two syncs of an enabled source: the kernel setting
    ``resync_interval``, else ``NYLA_RESYNC_INTERVAL``, else 3600; ``0`` is off."""
    raw = (settings or {}).get("resync_interval")
    if raw is None:
        raw = os.environ.get("NYLA_RESYNC_INTERVAL") or DEFAULT_INTERVAL_S
    try:
        seconds = float(raw)
    except (TypeError, ValueError):
        raise ScheduleConfigError(
            f"NYLA_RESYNC_INTERVAL must be a number of seconds (0 = off), got {raw!r}"
        ) from None
    if seconds < 0 or seconds != seconds or seconds == float("inf"):
        raise ScheduleConfigError(
            f"NYLA_RESYNC_INTERVAL must be 0 (off) or a positive number of seconds, got {raw!r}"
        )
    return seconds


@dataclass
class SourceSchedule:
    """Where one data source stands in the schedule."""

    data_source_id: str
    user_id: str
    enabled: bool
    running: Job | None
    last_sync_at: datetime | None
    next_sync_at: datetime | None

    def due(self, now: datetime) -> bool:
        """Whether a tick at ``now`` starts a sync of it."""
        return (
            self.enabled
            and self.running is None
            and self.next_sync_at is not None
            and self.next_sync_at <= now
        )


class ResyncScheduler:
    """Starts the due syncs of every enabled data source (``kernel.sync.scheduler``): the
    sources in ``db`` whose service one of ``walkers`` syncs, through ``sync``. ``settings``
    are the kernel's (``resync_interval``)."""

    def __init__(
        self,
        db: Database,
        walkers: WalkerLookup,
        sync: SyncPort,
        *,
        settings: Mapping[str, Any] | None = None,
        interval_s: float | None = None,
    ) -> None:
        self.db = db
        self.walkers = walkers
        self.sync = sync
        self.interval_s = resync_interval(settings) if interval_s is None else interval_s
        self._task: asyncio.Task[None] | None = None

    async def plan(self, data_source_id: str | None = None) -> list[SourceSchedule]:
        """Every data source (or the one named) with its schedule."""
        async with self.db.session() as s:
            query = select(DataSource)
            if data_source_id is not None:
                row = await s.get(DataSource, data_source_id)
                if row is None:
                    return []
                query = query.where(DataSource.connection_id == row.connection_id)
            sources = list((await s.execute(query)).scalars())
            walked = self.walkers.services()
            consent_query = select(
                UserConnection.id,
                UserConnection.knowledge_ingestion_enabled,
                UserConnection.service,
            )
            # a service no installed walker syncs is never due: its sync could only fail
            consent = {
                conn_id: bool(on) and service in walked
                for conn_id, on, service in (await s.execute(consent_query)).all()
            }
            ids = [d.id for d in sources]
            last = dict(
                (
                    await s.execute(
                        select(Job.data_source_id, func.max(Job.finished_at))
                        .where(Job.data_source_id.in_(ids), Job.status.in_(ENDED))
                        .group_by(Job.data_source_id)
                    )
                ).all()
            )
            open_jobs = list(
                (
                    await s.execute(
                        select(Job)
                        .where(Job.data_source_id.in_(ids), Job.status.in_(OPEN))
                        .order_by(Job.started_at)
                    )
                ).scalars()
            )
        running = {j.data_source_id: j for j in open_jobs if shown_status(j) != STALE}
        by_connection: dict[str, list[DataSource]] = {}
        for ds in sources:
            by_connection.setdefault(ds.connection_id, []).append(ds)
        out = []
        for ds in sources:
            if data_source_id is not None and ds.id != data_source_id:
                continue
            policy = effective_policy(by_connection[ds.connection_id], ds.path, "rag_index_enabled")
            enabled = bool(consent.get(ds.connection_id)) and bool(policy.value)
            out.append(self._schedule(ds, enabled, running.get(ds.id), last.get(ds.id)))
        return out

    def _schedule(
        self, ds: DataSource, enabled: bool, running: Job | None, last: datetime | None
    ) -> SourceSchedule:
        following = None
        if enabled and self.interval_s > 0:
            following = (
                datetime.now(UTC) if last is None else last + timedelta(seconds=self.interval_s)
            )
        return SourceSchedule(ds.id, ds.user_id, enabled, running, last, following)

    async def tick(self, now: datetime | None = None) -> dict[str, str]:
        """Start a sync of every source due at ``now`` (default: now); returns
        ``{data source id: job id}`` of those started. Nothing when the schedule is off or
        another process is ticking."""
        if self.interval_s <= 0:
            return {}
        started: dict[str, str] = {}
        async with _tick_lock(self.db) as mine:
            if not mine:
                return started
            plan = await self.plan()
            # after the plan: a source that never ran is due from the plan's "now"
            moment = now or datetime.now(UTC)
            for source in plan:
                if not source.due(moment):
                    continue
                try:
                    started[source.data_source_id] = await self.sync.start(
                        source.data_source_id, user_id=None
                    )
                except Exception:  # one source's failure must not keep the others waiting
                    log.exception("scheduled sync of %s did not start", source.data_source_id)
        if started:
            log.info("scheduled syncs started: %s", ", ".join(started))
        return started

    def start(self) -> None:
        """Tick in the background, every :data:`CHECK_EVERY_S` (or the interval when it is
        shorter), until :meth:`aclose`; nothing when the schedule is off."""
        if self.interval_s <= 0 or (self._task is not None and not self._task.done()):
            return
        self._task = asyncio.create_task(self._loop(min(self.interval_s, CHECK_EVERY_S)))

    async def _loop(self, every_s: float) -> None:
        while True:
            await asyncio.sleep(every_s)
            try:
                await self.tick()
            except Exception:  # a failed tick (database away) must not end the schedule
                log.exception("the resync tick failed")

    async def aclose(self) -> None:
        """Stop ticking (syncs already started go on as jobs)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None


@contextlib.asynccontextmanager
async def _tick_lock(db: Any) -> AsyncIterator[bool]:
    """The schedule's advisory lock for the block, if free: ``True`` when this tick has it."""
    key = lock_key(db, "*", "resync")
    await db.ensure_ready()
    async with db.engine.connect() as conn:
        await conn.execution_options(isolation_level="AUTOCOMMIT")
        got = bool(
            (await conn.execute(text("SELECT pg_try_advisory_lock(:k)"), {"k": key})).scalar()
        )
        try:
            yield got
        finally:
            if got:
                await conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": key})
