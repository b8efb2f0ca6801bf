"""Sync state per data source and per synced item. Both are derived from the knowledge index
(``info={"derived": True}``): when the index is rebuilt they are dropped with it, so nothing
is mistaken for "already indexed"."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Boolean, DateTime, String, Text, func
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column

from nyla.db import Base


class SyncState(Base):
    """Where a data source's sync stands: the checkpoint after the last committed page, the
    listing run in progress (``run_id``, ``in_listing``, when it began and the folders it
    could not list so far) and what the last run did."""

    __tablename__ = "sync_state"
    __table_args__ = {"info": {"derived": True}}

    data_source_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    checkpoint: Mapped[dict[str, Any] | None] = mapped_column(JSONB, nullable=True)
    run_id: Mapped[str] = mapped_column(String(64), default="")
    in_listing: Mapped[bool] = mapped_column(Boolean, default=False)
    listing_started: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    #: ``[{"path": ..., "reason": ...}]`` of the listing run in progress (see ``Unlisted``)
    unlisted: Mapped[list[dict[str, str]] | None] = mapped_column(JSONB, nullable=True)
    pages: Mapped[int] = mapped_column(default=0)
    stopped_at_limit: Mapped[str | None] = mapped_column(Text, nullable=True)
    skipped: Mapped[dict[str, Any]] = mapped_column(JSONB, default=dict)
    last_result: Mapped[dict[str, Any]] = mapped_column(JSONB, default=dict)
    updated_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), server_default=func.now(), onupdate=func.now()
    )


class SyncItem(Base):
    """One item a data source's sync has seen: its metadata hash and content hash (unchanged
    items are not downloaded or embedded again), the file it was indexed as, its path (the
    sweep keeps what lies below a folder the listing could not read), and the listing run
    that last saw it with when (``seen_at`` only grows): the deletion sweep removes what a
    complete run did not see and no sync saw after that run began."""

    __tablename__ = "sync_item"
    __table_args__ = {"info": {"derived": True}}

    data_source_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    item_id: Mapped[str] = mapped_column(Text, primary_key=True)  # vendors' ids have no limit
    item_hash: Mapped[str] = mapped_column(String(64))
    content_hash: Mapped[str | None] = mapped_column(String(64), nullable=True)
    file_id: Mapped[str | None] = mapped_column(Text, nullable=True)
    run_id: Mapped[str] = mapped_column(String(64))
    path: Mapped[str | None] = mapped_column(Text, nullable=True)
    seen_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
