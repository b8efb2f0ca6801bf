"""The preflight's one transaction: lock the mandate and the user, measure what they may
still spend, and set spending aside (a hold) — so two runs spending at once cannot both pass
a limit only one of them fits.

It runs on the driver's connection (psycopg), three or four statements in all: SQLAlchemy's
session and statement building cost more CPU than the statements. The locks are PostgreSQL
transaction advisory locks, one per subject (mandate, then user:
always that order, so two transactions never wait on each other in a circle). What a subject
may still spend is the least of: its monthly limit minus this month's ledger rows minus the
live holds; for a prepaid mandate, its credit minus every ledger row minus the live holds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from nyla.billing.tables import CreditEntry, LedgerEntry, SpendingHold
from nyla.errors import SpendingRefused
from nyla.models.billing import SpendingPolicy


def month_start(now: datetime) -> datetime:
    """The first instant of ``now``'s month (UTC)."""
    return now.astimezone(UTC).replace(day=1, hour=0, minute=0, second=0, microsecond=0)


def month_bounds(month: str) -> tuple[datetime, datetime]:
    """``YYYY-MM`` as ``[start, end)`` in UTC."""
    try:
        start = datetime.strptime(month, "%Y-%m").replace(tzinfo=UTC)
    except ValueError:
        raise ValueError(f"month must be YYYY-MM, not {month!r}") from None
    end = (start + timedelta(days=32)).replace(day=1)
    return start, end


@dataclass(frozen=True, slots=True)
class HoldRequest:
    """A hold to take or grow: ``need`` must fit (else the call is refused), up to ``want``
    is set aside."""

    hold_id: str
    user_id: str | None
    mandate_id: str | None
    need: float
    want: float
    ttl_s: float


@dataclass(frozen=True, slots=True)
class Room:
    """What a subject may still spend, and the rule that says so."""

    chf: float
    rule: str


def _subject_column(kind: str) -> str:
    return "mandate_id" if kind == "mandate" else "user_id"


async def _scalars(cur: Any, sql: str, params: list[Any]) -> list[float]:
    await cur.execute(sql, params)
    row = await cur.fetchone()
    return [float(v) for v in row]


async def room_of(cur: Any, policy: SpendingPolicy, now: datetime, *, prepaid: bool) -> list[Room]:
    """What ``policy``'s subject may still spend under each of its rules (one statement on
    the driver's cursor ``cur``)."""
    kind, subject = policy.kind, policy.subject
    column = _subject_column(kind)
    parts = [
        f"(SELECT coalesce(sum(amount_chf), 0) FROM {SpendingHold.__tablename__}"
        f" WHERE {column} = %s AND expires_at > %s)"
    ]
    params: list[Any] = [subject, now]
    limited = policy.monthly_limit_chf is not None
    if limited:
        parts.append(
            f"(SELECT coalesce(sum(cost_chf), 0) FROM {LedgerEntry.__tablename__}"
            f" WHERE {column} = %s AND at >= %s)"
        )
        params += [subject, month_start(now)]
    prepaid = prepaid and kind == "mandate"
    if prepaid:
        parts.append(
            f"(SELECT coalesce(sum(amount_chf), 0) FROM {CreditEntry.__tablename__}"
            " WHERE mandate_id = %s)"
        )
        parts.append(
            f"(SELECT coalesce(sum(cost_chf), 0) FROM {LedgerEntry.__tablename__}"
            f" WHERE {column} = %s)"
        )
        params += [subject, subject]
    values = await _scalars(cur, "SELECT " + ", ".join(parts), params)
    held, rest = values[0], values[1:]
    rooms: list[Room] = []
    if limited:
        spent, rest = rest[0], rest[1:]
        limit = float(policy.monthly_limit_chf or 0.0)
        rooms.append(
            Room(
                limit - spent - held,
                f"{kind} {subject!r}: monthly limit {limit:.2f} CHF "
                f"(spent {spent:.4f}, held {held:.4f})",
            )
        )
    if prepaid:
        credit, spent = rest
        rooms.append(
            Room(
                credit - spent - held,
                f"mandate {subject!r}: prepaid credit {credit:.4f} CHF "
                f"(spent {spent:.4f}, held {held:.4f})",
            )
        )
    return rooms


async def lock_subjects(cur: Any, policies: list[SpendingPolicy]) -> None:
    """Take the advisory lock of each subject (mandates first), held until commit."""
    order = sorted(policies, key=lambda p: (p.kind != "mandate", p.subject))
    for policy in order:
        key = f"nyla.billing:{policy.kind}:{policy.subject}"
        await cur.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (key,))


_UPSERT_HOLD = (
    f"INSERT INTO {SpendingHold.__tablename__} (id, user_id, mandate_id, amount_chf, expires_at)"
    " VALUES (%s, %s, %s, %s, %s) ON CONFLICT (id) DO UPDATE SET"
    f" amount_chf = {SpendingHold.__tablename__}.amount_chf + EXCLUDED.amount_chf,"
    " expires_at = EXCLUDED.expires_at"
)


async def take_hold(
    cur: Any,
    request: HoldRequest,
    policies: list[SpendingPolicy],
    prepaid: set[str],
) -> float:
    """Set aside up to ``request.want`` (at least ``request.need``) under ``policies``, in
    the transaction of the driver's cursor ``cur``; the amount set aside. Raises
    :class:`SpendingRefused` naming the tightest rule when ``need`` does not fit."""
    now = datetime.now(UTC)
    await lock_subjects(cur, policies)
    tightest = Room(math.inf, "")
    for policy in policies:
        for room in await room_of(cur, policy, now, prepaid=policy.subject in prepaid):
            if room.chf < tightest.chf:
                tightest = room
    if tightest.chf < request.need:
        raise SpendingRefused(
            f"spending refused: {tightest.rule}; this call needs about {request.need:.6f} CHF "
            f"and {max(0.0, tightest.chf):.6f} CHF is left",
            rule=tightest.rule,
            estimated_chf=request.need,
        )
    amount = min(request.want, tightest.chf)
    expires = now + timedelta(seconds=request.ttl_s)
    await cur.execute(
        _UPSERT_HOLD, (request.hold_id, request.user_id, request.mandate_id, amount, expires)
    )
    return amount
