"""The knowledge store's storage snapshot, taken once a day without anyone asking: a
periodic task of the kernel's job runner (:class:`~nyla.jobs.runtime.Periodic`) checks every
hour, in every server (or one ``nyla worker`` with ``NYLA_JOBS=procrastinate``), and takes
the snapshot when none was taken that day (UTC). A month's report then prices storage from
the month's last snapshot even when no one opened a report that month."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, time
from typing import TYPE_CHECKING, Any

from sqlalchemy import select, text

from nyla.billing.report import take_storage_snapshot
from nyla.billing.tables import StorageSnapshot
from nyla.jobs.runtime import Periodic

if TYPE_CHECKING:
    from nyla.billing.service import BillingService
    from nyla.models.billing import StorageLine

#: the periodic task's name (the procrastinate task and its periodic id)
SNAPSHOT_TASK = "nyla.billing_snapshot"
#: how often a process checks whether today's snapshot was taken
CHECK_EVERY_S = 3600.0
#: the same hourly check on the queue's workers (minute 7: not on the hour with everything else)
CHECK_CRON = "7 * * * *"
_LOCK = "SELECT pg_advisory_xact_lock(hashtext('nyla.billing.daily_snapshot'))"


async def daily_snapshot(billing: BillingService, now: datetime | None = None) -> list[StorageLine]:
    """Take the storage snapshot of the day of ``now`` (UTC, default today) unless one was
    taken that day (by this task, a report or ``nyla billing snapshot``): the lines taken,
    or ``[]``. Checked and taken in one transaction under an advisory lock, so servers
    ticking at once take one. (An empty knowledge store stores no line, so it is measured
    again at the next check: one cheap query.)"""
    now = now or datetime.now(UTC)
    day_start = datetime.combine(now.astimezone(UTC).date(), time(), tzinfo=UTC)
    async with billing.db.session() as s:
        await s.execute(text(_LOCK))
        taken = select(StorageSnapshot.id).where(StorageSnapshot.at >= day_start).limit(1)
        if await s.scalar(taken) is not None:
            return []
        return await take_storage_snapshot(s, billing.storage_price, billing.chunk_price, now)


def add_snapshot_schedule(runner: Any, billing: Callable[[], BillingService]) -> None:
    """Register the daily snapshot on the kernel's job runner (either kind: both keep
    ``periodic``); ``billing`` gives the billing service when the task first runs."""

    async def check() -> int:
        return len(await daily_snapshot(billing()))

    runner.periodic[SNAPSHOT_TASK] = Periodic(every_s=CHECK_EVERY_S, cron=CHECK_CRON, fn=check)
