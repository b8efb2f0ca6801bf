"""The billing tables: the ledger, the holds a preflight takes, policies, credit, and the
storage snapshots."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Float,
    Index,
    Integer,
    String,
    Text,
    func,
)
from sqlalchemy.orm import Mapped, mapped_column

from nyla.db import Base


class LedgerEntry(Base):
    """One billed operation: an AI call (``kind`` ``ai``) in CHF, for a user in a mandate,
    with the run and workflow it belonged to where there was one."""

    __tablename__ = "billing_ledger"
    __table_args__ = (
        Index("ix_billing_ledger_mandate_at", "mandate_id", "at"),
        Index("ix_billing_ledger_user_at", "user_id", "at"),
    )

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    user_id: Mapped[str | None] = mapped_column(String(128), nullable=True)
    mandate_id: Mapped[str | None] = mapped_column(String(128), nullable=True)
    run_id: Mapped[str | None] = mapped_column(String(64), nullable=True, index=True)
    workflow_id: Mapped[str | None] = mapped_column(String(255), nullable=True)
    kind: Mapped[str] = mapped_column(String(16), default="ai")
    operation: Mapped[str] = mapped_column(String(32))
    model: Mapped[str] = mapped_column(String(255), default="")
    input_tokens: Mapped[int] = mapped_column(Integer, default=0)
    output_tokens: Mapped[int] = mapped_column(Integer, default=0)
    cost_chf: Mapped[float] = mapped_column(Float, default=0.0)
    detail: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)


class SpendingHold(Base):
    """Spending a preflight set aside for a run (or one call) until its ledger rows are
    written; counted against limits and credit until then, or until it expires."""

    __tablename__ = "billing_holds"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    user_id: Mapped[str | None] = mapped_column(String(128), nullable=True, index=True)
    mandate_id: Mapped[str | None] = mapped_column(String(128), nullable=True, index=True)
    amount_chf: Mapped[float] = mapped_column(Float, default=0.0)
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class SpendingPolicyRow(Base):
    """The monthly limit, spending switch and prepaid mode of a user or a mandate."""

    __tablename__ = "billing_policies"

    kind: Mapped[str] = mapped_column(String(16), primary_key=True)
    subject: Mapped[str] = mapped_column(String(128), primary_key=True)
    monthly_limit_chf: Mapped[float | None] = mapped_column(Float, nullable=True)
    spending_allowed: Mapped[bool] = mapped_column(Boolean, default=True)
    prepaid: Mapped[bool] = mapped_column(Boolean, default=False)
    updated_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), server_default=func.now(), onupdate=func.now()
    )


class CreditEntry(Base):
    """Credit added to a mandate (a prepaid mandate spends only its balance)."""

    __tablename__ = "billing_credits"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    mandate_id: Mapped[str] = mapped_column(String(128), index=True)
    amount_chf: Mapped[float] = mapped_column(Float)
    note: Mapped[str] = mapped_column(Text, default="")
    added_by: Mapped[str] = mapped_column(String(128), default="")
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())


class StorageSnapshot(Base):
    """What the knowledge store held for a user in a mandate when the snapshot was taken,
    and its price for a month at that size."""

    __tablename__ = "billing_storage"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True), index=True)
    month: Mapped[str] = mapped_column(String(7), index=True)
    user_id: Mapped[str | None] = mapped_column(String(128), nullable=True)
    mandate_id: Mapped[str | None] = mapped_column(String(128), nullable=True)
    bytes: Mapped[int] = mapped_column(BigInteger, default=0)
    chunks: Mapped[int] = mapped_column(BigInteger, default=0)
    cost_chf: Mapped[float] = mapped_column(Float, default=0.0)
