"""What billing reads back: a month's report per mandate/user, credit balances, the storage
snapshot of the knowledge store, and the ledger rows of a run."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import func, insert, select

from nyla.billing.holds import month_bounds
from nyla.billing.tables import CreditEntry, LedgerEntry, SpendingHold, StorageSnapshot
from nyla.models.billing import BillingReport, ReportLine, SpendingPolicy, StorageLine
from nyla.tables.knowledge import FileContentIndex

GB = 1024**3


def current_month() -> str:
    """This month as ``YYYY-MM`` (UTC)."""
    return datetime.now(UTC).strftime("%Y-%m")


def _where(query: Any, table: Any, mandate_id: str | None, user_id: str | None) -> Any:
    if mandate_id is not None:
        query = query.where(table.mandate_id == mandate_id)
    if user_id is not None:
        query = query.where(table.user_id == user_id)
    return query


async def call_lines(
    session: Any, month: str, mandate_id: str | None, user_id: str | None
) -> list[ReportLine]:
    """The month's ledger rows summed per user, mandate, kind and operation."""
    start, end = month_bounds(month)
    t = LedgerEntry
    query = _where(
        select(
            t.user_id,
            t.mandate_id,
            t.kind,
            t.operation,
            func.count(),
            func.sum(t.input_tokens),
            func.sum(t.output_tokens),
            func.sum(t.cost_chf),
        ).where(t.at >= start, t.at < end),
        t,
        mandate_id,
        user_id,
    ).group_by(t.user_id, t.mandate_id, t.kind, t.operation)
    rows = (await session.execute(query)).all()
    lines = [
        ReportLine(
            user_id=r[0],
            mandate_id=r[1],
            kind=r[2],
            operation=r[3],
            calls=int(r[4]),
            input_tokens=int(r[5] or 0),
            output_tokens=int(r[6] or 0),
            cost_chf=float(r[7] or 0.0),
        )
        for r in rows
    ]
    return sorted(lines, key=lambda x: (x.mandate_id or "", x.user_id or "", x.kind, x.operation))


async def take_storage_snapshot(
    session: Any, chf_per_gb: float, chf_per_1000_chunks: float, now: datetime | None = None
) -> list[StorageLine]:
    """Measure what the knowledge store holds per user and mandate now, price it for a
    month, and store the snapshot (taken at ``now``, default the present)."""
    t = FileContentIndex
    rows = (
        await session.execute(
            select(t.user_id, t.mandate_id, func.sum(t.size), func.sum(t.chunk_count)).group_by(
                t.user_id, t.mandate_id
            )
        )
    ).all()
    now = now or datetime.now(UTC)
    values = [
        {
            "at": now,
            "month": now.strftime("%Y-%m"),
            "user_id": r[0],
            "mandate_id": r[1],
            "bytes": int(r[2] or 0),
            "chunks": int(r[3] or 0),
            "cost_chf": int(r[2] or 0) / GB * chf_per_gb
            + int(r[3] or 0) / 1000 * chf_per_1000_chunks,
        }
        for r in rows
    ]
    if values:
        await session.execute(insert(StorageSnapshot), values)
    return [_storage_line(v) for v in values]


def _storage_line(v: Any) -> StorageLine:
    def get(key: str) -> Any:
        return v[key] if isinstance(v, dict) else getattr(v, key)

    return StorageLine(
        user_id=get("user_id"),
        mandate_id=get("mandate_id"),
        bytes=get("bytes"),
        chunks=get("chunks"),
        cost_chf=get("cost_chf"),
        taken_at=get("at").isoformat(),
    )


async def storage_lines(
    session: Any, month: str, mandate_id: str | None, user_id: str | None
) -> list[StorageLine]:
    """The month's last storage snapshot of each user and mandate."""
    t = StorageSnapshot
    last = _where(select(func.max(t.at)).where(t.month == month), t, mandate_id, user_id)
    taken = await session.scalar(last)
    if taken is None:
        return []
    rows = (
        await session.scalars(_where(select(t).where(t.at == taken), t, mandate_id, user_id))
    ).all()
    return [_storage_line(r) for r in rows]


async def credit_balance(session: Any, mandate_id: str) -> float:
    """Credit added to ``mandate_id`` minus everything it spent and holds."""
    credit = await session.scalar(
        select(func.coalesce(func.sum(CreditEntry.amount_chf), 0.0)).where(
            CreditEntry.mandate_id == mandate_id
        )
    )
    spent = await session.scalar(
        select(func.coalesce(func.sum(LedgerEntry.cost_chf), 0.0)).where(
            LedgerEntry.mandate_id == mandate_id
        )
    )
    return float(credit) - float(spent) - await held(session, mandate_id, None)


async def held(session: Any, mandate_id: str | None, user_id: str | None) -> float:
    """What live holds set aside for the mandate / user."""
    t = SpendingHold
    query = _where(
        select(func.coalesce(func.sum(t.amount_chf), 0.0)).where(t.expires_at > datetime.now(UTC)),
        t,
        mandate_id,
        user_id,
    )
    return float(await session.scalar(query))


async def build_report(
    session: Any,
    month: str,
    mandate_id: str | None,
    user_id: str | None,
    policies: list[SpendingPolicy],
) -> BillingReport:
    """The report of ``month`` (``YYYY-MM``) for a mandate and/or user (``None``: all)."""
    lines = await call_lines(session, month, mandate_id, user_id)
    storage = await storage_lines(session, month, mandate_id, user_id)
    calls = sum(x.cost_chf for x in lines)
    stored = sum(x.cost_chf for x in storage)
    return BillingReport(
        month=month,
        mandate_id=mandate_id,
        user_id=user_id,
        lines=lines,
        storage=storage,
        calls_chf=calls,
        storage_chf=stored,
        total_chf=calls + stored,
        held_chf=await held(session, mandate_id, user_id),
        policies=policies,
        credit_chf=await credit_balance(session, mandate_id) if mandate_id else None,
    )


async def run_entries(session: Any, run_id: str) -> list[LedgerEntry]:
    """The ledger rows of one run (its sub-agents' and tools' calls included), oldest first."""
    query = select(LedgerEntry).where(LedgerEntry.run_id == run_id).order_by(LedgerEntry.id)
    return list((await session.scalars(query)).all())
