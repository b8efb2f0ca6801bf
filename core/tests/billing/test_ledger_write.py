"""Writing ledger rows (one statement with the release of their holds): every value as it
was recorded, whatever a provider reported, and the holds gone with the same commit."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select

from nyla.billing.ledger import write_rows
from nyla.billing.tables import LedgerEntry, SpendingHold

pytestmark = pytest.mark.db

AT = datetime(2026, 12, 3, 10, 0, 0, 123456, tzinfo=UTC)


def _row(**changes: object) -> dict[str, object]:
    return {
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
