"""The tables of workflow runs: one row per run (its owner and context, the graph as it was
when it started, status, cost), one per node of a run (status, attempts, inputs, output,
error, timings) and the run's stored events (numbered from 1, in order)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import DateTime, Float, ForeignKey, Integer, String, Text, func
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column

from nyla.db import Base


class WorkflowRunRow(Base):
    """A run of a stored workflow. ``graph`` is the workflow's nodes and connections when
    the run started (an edit meanwhile does not change a run under way); ``context`` the
    caller's run context (identity, model restriction) a resumed run goes on with."""

    __tablename__ = "action_workflow_run"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    workflow_id: Mapped[str] = mapped_column(String(128), index=True)
    workflow_name: Mapped[str] = mapped_column(Text, default="")
    user_id: Mapped[str] = mapped_column(String(128), index=True)
    mandate_id: Mapped[str | None] = mapped_column(String(128), nullable=True)
    feature_instance_id: Mapped[str | None] = mapped_column(String(128), nullable=True)
    context: Mapped[dict[str, Any]] = mapped_column(JSONB, default=dict)
    graph: Mapped[dict[str, Any]] = mapped_column(JSONB, default=dict)
    options: Mapped[dict[str, Any]] = mapped_column(JSONB, default=dict)
    #: the agent call that started it: ``{"round": r, "task": t}`` (its documents' numbers)
    origin: Mapped[dict[str, Any]] = mapped_column(JSONB, default=dict)
    status: Mapped[str] = mapped_column(String(16), index=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    job_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    #: the process running it (``host:pid``): boot recovery tells a dead one's runs apart
    worker: Mapped[str | None] = mapped_column(String(200), nullable=True)
    cost_chf: Mapped[float] = mapped_column(Float, default=0.0)
    resumes: Mapped[int] = mapped_column(Integer, default=0)
    last_seq: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)


class NodeRunRow(Base):
    """One node of a run; ``position`` is its place in the run order."""

    __tablename__ = "action_workflow_node_run"

    run_id: Mapped[str] = mapped_column(
        ForeignKey("action_workflow_run.id", ondelete="CASCADE"), primary_key=True
    )
    node_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    method: Mapped[str] = mapped_column(String(128))
    action: Mapped[str] = mapped_column(String(128))
    position: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(16), default="pending")
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    inputs: Mapped[dict[str, Any] | None] = mapped_column(JSONB, nullable=True)
    output: Mapped[dict[str, Any] | None] = mapped_column(JSONB, nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    error_code: Mapped[str | None] = mapped_column(String(64), nullable=True)
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)


class RunEventRow(Base):
    """One event of a run, numbered from 1 per run (the SSE id)."""

    __tablename__ = "action_workflow_run_event"

    run_id: Mapped[str] = mapped_column(
        ForeignKey("action_workflow_run.id", ondelete="CASCADE"), primary_key=True
    )
    seq: Mapped[int] = mapped_column(Integer, primary_key=True)
    type: Mapped[str] = mapped_column(String(32))
    node_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    text: Mapped[str] = mapped_column(Text, default="")
    data: Mapped[dict[str, Any]] = mapped_column(JSONB, default=dict)
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
