"""Job records: start, report progress, finish, cancel (one or all of a connection), and
recover jobs a crash left ``running``."""

from __future__ import annotations

import os
import socket
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from sqlalchemy import CursorResult, bindparam, func, select, update
from sqlalchemy import cast as sql_cast
from sqlalchemy.dialects.postgresql import JSONB

from nyla.db import Database
from nyla.jobs.tables import STALE, STALE_AFTER_S, Job, shown_status

RUNNING = "running"
QUEUED = "queued"
OPEN = (RUNNING, QUEUED)

__all__ = ["STALE", "STALE_AFTER_S", "JobStore", "shown_status", "this_worker", "worker_alive"]


class JobStore:
    """Job rows in the kernel database. ``is_cancelled`` is the cooperative check a job
    makes between items."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def start(
        self,
        kind: str,
        *,
        user_id: str,
        mandate_id: str | None = None,
        connection_id: str | None = None,
        data_source_id: str | None = None,
        total: int | None = None,
        message: str = "",
        worker: str | None = None,
        job_id: str | None = None,
        status: str = RUNNING,
    ) -> str:
        """Create a running job and return its id (``worker`` = ``this_worker()`` for jobs
        this process runs)."""
        job_id = job_id or uuid.uuid4().hex
        async with self.db.session() as s:
            s.add(
                Job(
                    id=job_id,
                    kind=kind,
                    status=status,
                    user_id=user_id,
                    mandate_id=mandate_id,
                    connection_id=connection_id,
                    data_source_id=data_source_id,
                    total=total,
                    message=message,
                    details={},
                    worker=worker,
                    heartbeat_at=_now() if worker else None,
                )
            )
        return job_id

    async def progress(
        self, job_id: str, done: int, total: int | None = None, message: str = ""
    ) -> None:
        """Record progress of a running job (also its liveness for the zombie check)."""
        values: dict[str, Any] = {"progress": done, "message": message, "updated_at": _now()}
        if total is not None:
            values["total"] = total
        async with self.db.session() as s:
            await s.execute(
                update(Job).where(Job.id == job_id, Job.status == RUNNING).values(**values)
            )

    async def mark_running(self, job_id: str, worker: str) -> None:
        """A queued job was picked up by ``worker``."""
        async with self.db.session() as s:
            await s.execute(
                update(Job)
                .where(Job.id == job_id, Job.status.in_(OPEN))
                .values(status=RUNNING, worker=worker, heartbeat_at=_now(), updated_at=_now())
            )

    async def requeue(self, job_id: str, error: str) -> None:
        """A failed attempt that the queue retries: the job waits again (error kept)."""
        async with self.db.session() as s:
            await s.execute(
                update(Job)
                .where(Job.id == job_id, Job.status.in_(OPEN))
                .values(status=QUEUED, error=error, worker=None, updated_at=_now())
            )

    async def heartbeat(self, job_ids: list[str]) -> None:
        """Record that the process running these jobs is alive (not that they progressed)."""
        if not job_ids:
            return
        async with self.db.session() as s:
            await s.execute(
                update(Job)
                .where(Job.id.in_(job_ids), Job.status == RUNNING)
                .values(heartbeat_at=_now())
            )

    async def get(self, job_id: str) -> Job | None:
        """One job row."""
        async with self.db.session() as s:
            return await s.get(Job, job_id)

    async def recent(
        self, *, user_id: str | None = None, data_source_id: str | None = None, limit: int = 20
    ) -> list[Job]:
        """The latest jobs, newest first."""
        query = select(Job).order_by(Job.started_at.desc()).limit(limit)
        if user_id is not None:
            query = query.where(Job.user_id == user_id)
        if data_source_id is not None:
            query = query.where(Job.data_source_id == data_source_id)
        async with self.db.session() as s:
            return list((await s.execute(query)).scalars())

    async def finish(self, job_id: str, *, error: str | None = None) -> None:
        """Mark a running job done (or failed with ``error``)."""
        async with self.db.session() as s:
            await s.execute(
                update(Job)
                .where(Job.id == job_id, Job.status.in_(OPEN))
                .values(
                    status="error" if error else "done",
                    error=error,
                    finished_at=_now(),
                    updated_at=_now(),
                )
            )

    async def cancel(self, job_id: str) -> bool:
        """Cancel one running job; True when it was running."""
        return await self._cancel(Job.id == job_id) > 0

    async def cancel_by_connection(self, connection_id: str) -> int:
        """Cancel every running job of a connection; returns how many."""
        return await self._cancel(Job.connection_id == connection_id)

    async def _cancel(self, where: Any) -> int:
        async with self.db.session() as s:
            return await cancel_jobs(s, where, Job.status.in_(OPEN))

    async def set_details(self, job_id: str, details: dict[str, Any]) -> None:
        """Merge ``details`` (e.g. a walk's results) into the job's details (one statement:
        a sync writes them while it runs)."""
        merged = func.coalesce(Job.details, sql_cast({}, JSONB)).op("||")(
            bindparam("details", details, type_=JSONB)
        )
        async with self.db.session() as s:
            await s.execute(update(Job).where(Job.id == job_id).values(details=merged))

    async def finished(
        self, *, user_id: str | None = None, mandate_id: str | None = None, limit: int = 50
    ) -> list[Job]:
        """Jobs that ended (done, error, cancelled), newest first."""
        query = select(Job).where(Job.status != RUNNING).order_by(Job.finished_at.desc())
        if user_id is not None:
            query = query.where(Job.user_id == user_id)
        if mandate_id is not None:
            query = query.where(Job.mandate_id == mandate_id)
        async with self.db.session() as s:
            return list((await s.execute(query.limit(limit))).scalars())

    async def is_cancelled(self, job_id: str) -> bool:
        """True when the job was cancelled (cooperative check between items)."""
        async with self.db.session() as s:
            status = (await s.execute(select(Job.status).where(Job.id == job_id))).scalar()
        return status == "cancelled"

    async def running(
        self, *, user_id: str | None = None, mandate_id: str | None = None
    ) -> list[Job]:
        """Running jobs, optionally of one user or mandate."""
        query = select(Job).where(Job.status == RUNNING).order_by(Job.started_at)
        if user_id is not None:
            query = query.where(Job.user_id == user_id)
        if mandate_id is not None:
            query = query.where(Job.mandate_id == mandate_id)
        async with self.db.session() as s:
            return list((await s.execute(query)).scalars())

    async def recover_interrupted(self) -> int:
        """At start: jobs still ``running`` whose process is gone (no worker recorded, or a
        worker on this host whose pid no longer exists) were interrupted; mark them errors
        (never requeued automatically, which could loop forever; a sync resumes from its
        checkpoint the next time it runs). Jobs of live processes are left alone."""
        async with self.db.session() as s:
            rows = (await s.execute(select(Job.id, Job.worker).where(Job.status == RUNNING))).all()
        dead = [job_id for job_id, worker in rows if not worker_alive(worker)]
        if not dead:
            return 0
        return await self._fail_running(None, "interrupted: its worker process ended", dead)

    async def kill_zombies(self, max_age_seconds: float = 1800) -> int:
        """Mark running jobs without a heartbeat (or, for jobs without one, progress) for
        ``max_age_seconds`` as errors."""
        cutoff = _now() - timedelta(seconds=max_age_seconds)
        return await self._fail_running(cutoff, f"no heartbeat for {int(max_age_seconds)} s")

    async def _fail_running(
        self, cutoff: datetime | None, reason: str, ids: list[str] | None = None
    ) -> int:
        where = [Job.status == RUNNING]
        if cutoff is not None:
            where.append(func.coalesce(Job.heartbeat_at, Job.updated_at) < cutoff)
        if ids is not None:
            where.append(Job.id.in_(ids))
        async with self.db.session() as s:
            result = await s.execute(
                update(Job)
                .where(*where)
                .values(status="error", error=reason, finished_at=_now(), updated_at=_now())
            )
        return int(cast("CursorResult[Any]", result).rowcount or 0)


async def cancel_jobs(session: Any, *where: Any) -> int:
    """Mark the jobs matching ``where`` cancelled in the caller's transaction; how many."""
    result = await session.execute(
        update(Job).where(*where).values(status="cancelled", finished_at=_now(), updated_at=_now())
    )
    return int(cast("CursorResult[Any]", result).rowcount or 0)


def _now() -> datetime:
    return datetime.now(UTC)


def this_worker() -> str:
    """This process as a job's worker: ``host:pid``."""
    return f"{socket.gethostname()}:{os.getpid()}"


def worker_alive(worker: str | None) -> bool:
    """Whether a job's worker process still exists (workers on other hosts count as alive:
    the zombie killer handles them by their heartbeat)."""
    if not worker:
        return False
    host, _, pid = worker.rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return True
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
