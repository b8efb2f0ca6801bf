"""Writing ledger rows (one statement with the release of their holds): every value as it
was recorded, whatever a provider reported, and the holds gone with the same commit."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta, timezone

import pytest
from sqlalchemy import select

from nyla.billing.ledger import ROW_COLUMNS, write_rows
from nyla.billing.tables import LedgerEntry, SpendingHold

pytestmark = pytest.mark.db

AT = datetime(2026, 12, 3, 10, 0, 0, 123456, tzinfo=UTC)


def _row(**changes: object) -> tuple[object, ...]:
    row = {
        "at": AT,
        "user_id": "ada",
        "mandate_id": None,
        "run_id": "run-1",
        "workflow_id": None,
        "kind": "ai",
        "operation": "agent",
        "model": 'modèle "x" \\ 1',
        "input_tokens": 100,
        "output_tokens": 20,
        "cost_chf": 0.00125,
        "detail": {"reported": True, "note": "é\n"},
        **changes,
    }
    return tuple(row[c] for c in ROW_COLUMNS)


async def test_rows_are_stored_as_recorded_and_their_holds_released(db) -> None:
    await db.ensure_ready()
    async with db.session() as s:
        for hold in ("h1", "h2", "h3"):
            s.add(SpendingHold(id=hold, amount_chf=1.0, expires_at=AT + timedelta(hours=1)))
    rows = [
        _row(),
        _row(cost_chf=float("nan"), detail=None, mandate_id="m1", input_tokens=0),
        _row(cost_chf=float("inf"), workflow_id="wf"),
    ]
    await write_rows(db, rows, ["h1", "h3"])
    async with db.session() as s:
        stored = (await s.scalars(select(LedgerEntry).order_by(LedgerEntry.id))).all()
        holds = (await s.scalars(select(SpendingHold.id))).all()
    assert holds == ["h2"]
    assert [r.at for r in stored] == [AT, AT, AT]
    assert [r.model for r in stored] == ['modèle "x" \\ 1'] * 3
    assert stored[0].detail == {"reported": True, "note": "é\n"} and stored[1].detail is None
    assert stored[0].cost_chf == 0.00125 and math.isnan(stored[1].cost_chf)
    assert stored[2].cost_chf == math.inf and stored[2].workflow_id == "wf"
    assert (stored[1].mandate_id, stored[1].input_tokens) == ("m1", 0)


async def test_holds_alone_are_released(db) -> None:
    await db.ensure_ready()
    async with db.session() as s:
        s.add(SpendingHold(id="h1", amount_chf=1.0, expires_at=AT))
    await write_rows(db, [], ["h1"])
    async with db.session() as s:
        assert (await s.scalars(select(SpendingHold.id))).all() == []
        assert (await s.scalars(select(LedgerEntry.id))).all() == []


async def _stored(db) -> list[tuple[object, ...]]:
    """Every column of the stored rows as PostgreSQL prints it (the detail's JSON text too)."""
    columns = ", ".join(f"{c}::text" for c in ROW_COLUMNS)
    return await db.read_driver(
        lambda conn: conn.rows(f"SELECT {columns} FROM billing_ledger ORDER BY id", [])
    )


async def test_rows_are_stored_as_each_value_alone_would_store_them(db, monkeypatch) -> None:
    """Rows the encoder can write as they are go as pydantic-core writes them (checked column
    by column); a batch with any row that needs the per-value path (a detail, a cost that is
    not finite, a time not in UTC, a value of another type, a NUL or a lone surrogate) goes
    that way whole. Either way every column is stored as the per-value path stores it."""
    import json

    from nyla.billing import ledger

    plain = [_row(detail={}), _row(detail=None, mandate_id="m1", model="日本 😀", cost_chf=0)]
    fine = [  # values the encoder writes as the per-value path would
        {"cost_chf": 1e-05},
        {"cost_chf": 10**30},
        {"cost_chf": -0.0},
        {"at": AT.replace(microsecond=0)},
        {"user_id": "ü\t\u2028", "workflow_id": "wf"},
    ]
    odd = [
        {"detail": {"priceUnknown": True}},  # (its JSON text is stored as written)
        {"cost_chf": float("nan")},
        {"cost_chf": float("-inf")},
        {"at": AT.replace(tzinfo=None)},
        {"at": AT.astimezone(timezone(timedelta(hours=5, minutes=30)))},
        {"input_tokens": True},
        {"output_tokens": 2.0},
        {"cost_chf": True},
        {"user_id": 7},
        {"model": None},
    ]
    assert ledger._plain(plain)
    for change in [*fine, *odd]:
        rows = [*plain, _row(**({"detail": {}} | change))]
        assert ledger._plain(rows) == (change in fine), change
        stored = []
        for plain_allowed in (True, False):
            if not plain_allowed:
                monkeypatch.setattr(ledger, "_plain", lambda rows: False)
            await db.read_driver(
                lambda conn: conn.rows("DELETE FROM billing_ledger RETURNING 1", [])
            )
            try:
                await write_rows(db, rows, [])
                stored.append(await _stored(db))
            except Exception as exc:  # (a value the column cannot take: the same error)
                stored.append(type(exc).__name__)
            monkeypatch.undo()
        assert stored[0] == stored[1], change
    await db.read_driver(lambda conn: conn.rows("DELETE FROM billing_ledger RETURNING 1", []))
    detail = {"reported": True, "note": "é\n", "at": AT}
    await write_rows(db, [_row(detail=detail)], [])
    assert (await _stored(db))[0][-1] == json.dumps(detail, default=datetime.isoformat)
    for text in ("a\x00b", "\ud800"):  # (JSON cannot carry them to a text column)
        assert not ledger._plain([*plain, _row(detail={}, model=text)])
