"""``BillingService.binds``: the AI service may skip billing's preflight only while the
preflight would admit at once and change nothing; a stored, removed or forgotten policy, old
kept policies and waiting rows each make it ask again."""

from __future__ import annotations

import pytest

from nyla.billing.service import BillingService
from nyla.errors import SpendingRefused
from nyla.models.agent import RunContext
from nyla.models.billing import Charge, SpendingPolicy

pytestmark = pytest.mark.db


async def _unbound_admit_changes_nothing(billing: BillingService, context: RunContext) -> None:
    """What ``binds() is False`` promises: admit returns ``None`` and holds nothing."""
    assert not billing.binds(context)
    grants, loaded = dict(billing._grants), billing._loaded_at
    assert await billing.admit(context, "agent", 0.1) is None
    assert billing._grants == grants and billing._loaded_at == loaded


async def test_nothing_binds_until_a_policy_is_stored_and_again_once_removed(db):
    billing = BillingService(db)
    run = RunContext(user_id="ann", mandate_id="m-binds", run_id="run-binds")
    assert billing.binds(run)  # never read: admit must read the policies first
    assert await billing.admit(run, "agent", 0.1) is None
    await _unbound_admit_changes_nothing(billing, run)

    await billing.set_policy(
        SpendingPolicy(kind="mandate", subject="m-binds", spending_allowed=False)
    )
    assert billing.binds(run)  # forgotten: read again
    with pytest.raises(SpendingRefused):
        await billing.admit(run, "agent", 0.1)
    assert billing.binds(run)  # read, and it binds this mandate
    other = RunContext(user_id="ann", mandate_id="m-other", run_id="run-other")
    await _unbound_admit_changes_nothing(billing, other)  # another mandate is not bound

    await billing.set_policy(SpendingPolicy(kind="mandate", subject="m-binds"))  # removed
    assert billing.binds(run)
    assert await billing.admit(run, "agent", 0.1) is None
    await _unbound_admit_changes_nothing(billing, run)


async def test_a_user_limit_binds_its_user_only(db):
    billing = BillingService(db)
    await billing.set_policy(SpendingPolicy(kind="user", subject="u-limit", monthly_limit_chf=5))
    limited = RunContext(user_id="u-limit", mandate_id="m-u", run_id="run-u1")
    free = RunContext(user_id="u-free", mandate_id="m-u", run_id="run-u2")
    await billing.admit(free, "agent", 0.1)
    assert billing.binds(limited)
    await _unbound_admit_changes_nothing(billing, free)


async def test_old_policies_and_waiting_rows_make_it_ask(db):
    billing = BillingService(db, {"cache_s": 0})
    loose = RunContext(user_id="bea", mandate_id="m-old")
    assert await billing.admit(loose, "agent", 0.1) is None
    assert billing.binds(loose)  # kept for 0 s: always old

    fresh = BillingService(db, {"flush_rows": 2, "flush_s": 1e9})
    assert await fresh.admit(loose, "agent", 0.1) is None
    assert not fresh.binds(loose)
    fresh.record(loose, Charge("agent", "x:model", 0.25, 10, 5))
    await _unbound_admit_changes_nothing(fresh, loose)  # one row waits, not yet due
    assert len(fresh._loose.rows) == 1
    fresh.record(loose, Charge("agent", "x:model", 0.25, 10, 5))
    assert fresh.binds(loose)  # the batch is due: admit writes it
    assert await fresh.admit(loose, "agent", 0.1) is None
    assert fresh._loose.rows == [] and not fresh.binds(loose)
    fresh.record(loose, Charge("agent", "x:model", 0.25, 10, 5))
    fresh._loose.since -= 2e9  # waited longer than flush_s
    assert fresh.binds(loose)
    fresh.forget_policies()
    await fresh.flush()
    assert fresh.binds(loose)  # forgotten policies are read again


async def test_require_credit_binds_every_mandate(db):
    billing = BillingService(db, {"require_credit": True})
    context = RunContext(user_id="cid", mandate_id="m-credit")
    with pytest.raises(SpendingRefused):
        await billing.admit(context, "agent", 0.1)
    assert billing.binds(context)
