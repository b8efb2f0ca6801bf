"""The job table: one row per background job (indexing runs, walker syncs)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import DateTime, Integer, String, Text, func
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column

from nyla.db import Base

STALE = "stale"
#: a running job whose last heartbeat is older than this shows as ``stale`` (four missed
#: beats of the runners' 30 s heartbeat); the zombie killer ends it later, at 30 min
STALE_AFTER_S = 120.0


class Job(Base):
    """A background job with its progress; ``status`` is ``queued``, ``running``, ``done``,
    ``error`` or ``cancelled``. ``heartbeat_at`` is liveness (a beat from the process running
    it), separate from progress: a slow job that beats is alive. ``worker`` names the process
    (``host:pid``) so boot recovery can tell a dead worker's jobs from a live one's."""

    __tablename__ = "jobs"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    kind: Mapped[str] = mapped_column(String(64))
    status: Mapped[str] = mapped_column(String(16), default="running", index=True)
    user_id: Mapped[str] = mapped_column(String(128), index=True)
    mandate_id: Mapped[str | None] = mapped_column(String(128), nullable=True)
    connection_id: Mapped[str | None] = mapped_column(String(128), nullable=True, index=True)
    data_source_id: Mapped[str | None] = mapped_column(String(128), nullable=True)
    progress: Mapped[int] = mapped_column(Integer, default=0)
    total: Mapped[int | None] = mapped_column(Integer, nullable=True)
    message: Mapped[str] = mapped_column(Text, default="")
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    details: Mapped[dict[str, Any]] = mapped_column(JSONB, default=dict)
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    heartbeat_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    worker: Mapped[str | None] = mapped_column(String(200), nullable=True)

    @property
    def shown_status(self) -> str:
        """``status``, or ``stale`` when it runs without a heartbeat (see :func:`shown_status`)."""
        return shown_status(self)


def shown_status(
    job: Job, *, now: datetime | None = None, stale_after_s: float = STALE_AFTER_S
) -> str:
    """The status to show for a job: its ``status``, but ``stale`` for a running job whose
    process stopped beating (killed, hung) — without waiting for boot recovery or the
    zombie killer to mark it."""
    if job.status != "running":
        return job.status
    beat = job.heartbeat_at or job.updated_at or job.started_at
    if beat is None:
        return job.status
    if beat.tzinfo is None:
        beat = beat.replace(tzinfo=UTC)
    late = (now or datetime.now(UTC)) - beat > timedelta(seconds=stale_after_s)
    return STALE if late else job.status
