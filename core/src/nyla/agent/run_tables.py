"""The tables of durable runs: one row per run a host or ``nyla run --detach`` started, and
the run's events numbered from 1 (the SSE id).

The table names are the ones the web host created before runs moved into the kernel
(``host_runs``, ``host_run_events``): an existing database keeps its runs. The columns added
for runs on workers may be null (older rows have none), so an existing table gets them with
``ALTER TABLE ... ADD COLUMN`` at start."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, DateTime, ForeignKey, Integer, String, Text, func
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column

from nyla.db import Base


class StoredRun(Base):
    """A durable run. ``status`` is ``queued`` (waiting for a worker), ``running``, or how it
    ended (``completed``, ``cancelled``, ``error``, ``interrupted``, ...). ``spec`` holds
    everything a worker needs to run it as the starter would have (prompt, config, context);
    ``worker`` (``host:pid``) and ``heartbeat_at`` tell a live holder from a dead one;
    ``cancel_requested_at`` is set by a cancel from any process; ``started_writes`` lists the
    writing tool calls the holder started (``callId``, ``toolName``, ``round``), each recorded
    before its handler ran."""

    __tablename__ = "host_runs"

    run_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    user_id: Mapped[str] = mapped_column(String(128), index=True)
    mandate_id: Mapped[str | None] = mapped_column(String(128), nullable=True)
    status: Mapped[str] = mapped_column(String(32), index=True)
    prompt: Mapped[str] = mapped_column(Text, default="")
    final_text: Mapped[str] = mapped_column(Text, default="")
    cost_chf: Mapped[float] = mapped_column(default=0.0)
    last_seq: Mapped[int] = mapped_column(Integer, default=0)
    timezone: Mapped[str] = mapped_column(String(64), default="UTC")
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    spec: Mapped[dict[str, Any] | None] = mapped_column(JSONB, nullable=True)
    worker: Mapped[str | None] = mapped_column(String(200), nullable=True)
    heartbeat_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    cancel_requested_at: Mapped[datetime | None] = mapped_column(
        DateTime(timezone=True), nullable=True
    )
    started_writes: Mapped[list[dict[str, Any]] | None] = mapped_column(JSONB, nullable=True)


class StoredRunEvent(Base):
    """One event of a run, numbered from 1 per run (the SSE id), written before any
    subscriber sees it."""

    __tablename__ = "host_run_events"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(
        ForeignKey("host_runs.run_id", ondelete="CASCADE"), index=True
    )
    seq: Mapped[int] = mapped_column(Integer)
    type: Mapped[str] = mapped_column(String(32))
    payload: Mapped[dict[str, Any]] = mapped_column(JSONB, default=dict)
