"""The RAG inventory: what is indexed per user, per mandate and platform-wide (files, chunks,
bytes, last indexed) plus the running indexing jobs."""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from nyla.jobs.store import shown_status
from nyla.jobs.tables import Job
from nyla.models.knowledge import Inventory, InventoryJob, InventoryRow
from nyla.tables.knowledge import FileContentIndex


async def inventory(session: AsyncSession, level: str, subject: str | None = None) -> Inventory:
    """Inventory at ``level`` ``user`` (subject = user id: the files that user owns),
    ``mandate`` (subject = mandate id) or ``platform`` (everything)."""
    f = FileContentIndex
    query = select(
        f.scope,
        f.owner_key,
        func.count(),
        func.count().filter(f.status == "failed"),
        func.coalesce(func.sum(f.chunk_count), 0),
        func.coalesce(func.sum(f.size), 0),
        func.max(f.indexed_at),
    ).group_by(f.scope, f.owner_key)
    jobs = select(Job).where(Job.status == "running").order_by(Job.started_at)
    if level == "user":
        query = query.where(f.user_id == subject)
        jobs = jobs.where(Job.user_id == subject)
    elif level == "mandate":
        query = query.where(f.mandate_id == subject)
        jobs = jobs.where(Job.mandate_id == subject)
    elif level != "platform":
        raise ValueError(f"unknown inventory level {level!r}: user, mandate or platform")
    rows = [
        InventoryRow(
            scope=r[0],
            owner=r[1],
            files=r[2],
            failed_files=r[3],
            chunks=int(r[4]),
            bytes=int(r[5]),
            last_indexed=r[6],
        )
        for r in (await session.execute(query.order_by(f.scope, f.owner_key))).all()
    ]
    running = [
        InventoryJob(
            id=j.id,
            kind=j.kind,
            status=shown_status(j),
            progress=j.progress,
            total=j.total,
            message=j.message,
            started_at=j.started_at,
        )
        for j in (await session.execute(jobs)).scalars()
    ]
    return Inventory(level=level, subject=subject, rows=rows, jobs=running)  # type: ignore[arg-type]
