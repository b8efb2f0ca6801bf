"""Billing's preflight when no policy binds anyone (the common case, asked before every model
call): it takes the short way (no hold, nothing to check), but still reads the policies again
when the kept ones are old and still writes loose rows that are due."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from nyla.billing.ledger import ROW_COLUMNS
from nyla.billing.service import BillingService
from nyla.billing.tables import LedgerEntry
from nyla.errors import SpendingRefused
from nyla.models.agent import RunContext
from nyla.models.billing import Charge, SpendingPolicy

pytestmark = pytest.mark.db


async def test_a_policy_stored_elsewhere_binds_once_the_kept_ones_are_old(db):
    billing = BillingService(db, {"cache_s": 0})
    run = RunContext(user_id="alice", mandate_id="m1", run_id="run-unbound")
    assert await billing.admit(run, "agent", 0.1) is None
    assert billing._grants == {}  # nothing bound: no hold taken
    # another process (its own service) blocks the mandate; this one was not told
    await BillingService(db).set_policy(
        SpendingPolicy(kind="mandate", subject="m1", spending_allowed=False)
    )
    with pytest.raises(SpendingRefused, match="mandate 'm1' may not spend"):
        await billing.admit(run, "agent", 0.1)


async def test_require_credit_binds_with_no_policy_stored(db):
    billing = BillingService(db, {"require_credit": True})
    with pytest.raises(SpendingRefused):
        await billing.admit(RunContext(user_id="bob", mandate_id="m-empty"), "agent", 0.1)


async def test_the_preflight_writes_loose_rows_that_are_due(db):
    billing = BillingService(db, {"flush_rows": 1})
    loose = RunContext(user_id="carol", mandate_id="m2")
    billing.record(loose, Charge("agent", "x:model", 0.25, 10, 5))
    assert await billing.admit(loose, "agent", 0.1) is None
    assert billing._loose.rows == []
    async with db.session() as s:
        count = await s.scalar(
            select(func.count()).select_from(LedgerEntry).where(LedgerEntry.user_id == "carol")
        )
    assert count == 1


def test_a_row_after_the_run_s_end_is_a_call_of_its_own():
    billing = BillingService(None)
    run = RunContext(user_id="dave", mandate_id="m3", workflow_id="w3", run_id="run-ended")
    billing._closed["run-ended"] = None
    billing.record(run, Charge("agent", "x:model", 0.5, 10, 5, {"k": 1}))
    billing.record(None, Charge("agent", "x:model", 0.1))
    ended, outside = (dict(zip(ROW_COLUMNS, row, strict=True)) for row in billing._loose.rows)
    assert (ended["run_id"], ended["workflow_id"], ended["detail"]) == (
        None,
        "w3",
        {"k": 1, "afterRun": "run-ended"},
    )
    assert (ended["user_id"], ended["mandate_id"]) == ("dave", "m3")
    assert (outside["user_id"], outside["run_id"], outside["detail"]) == (None, None, {})
    assert billing._runs == {}
