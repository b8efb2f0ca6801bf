"""The billing service (``kernel.billing``): the AI service's preflight and ledger, and the
admin's limits, credit and reports.

Hot path. The AI service asks :meth:`BillingService.admit` before each operation and hands
the cost to :meth:`BillingService.record` after it. Neither touches the database while the
caller's mandate and user have no limit, no prepaid mode and may spend (the policies are
read once and kept for ``cache_s`` seconds). Under a limit, a run takes one hold when it
first calls (its remaining budget, else ``hold_chf``) and grows it only when a call does not
fit what it holds: one transaction per hold, not per round. A call outside a run holds its
own estimate.

The ledger rows of a run are kept in memory and written when the run ends
(:meth:`close_run`, called with the trace's persistence), together with the release of its
hold, in one transaction. Rows of calls outside a run are written in batches (every
``flush_rows`` rows or ``flush_s`` seconds, before a hold and a report, and when the kernel
closes).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select

from nyla.billing.holds import HoldRequest, take_hold
from nyla.billing.ledger import Row, write_rows
from nyla.billing.tables import LedgerEntry, SpendingPolicyRow
from nyla.config import config_value
from nyla.errors import SpendingRefused
from nyla.models.billing import BillingReport, Charge, SpendingPolicy, StorageLine


@dataclass(slots=True)
class Grant:
    """What a run holds (``amount``) and has spent of it (``used``)."""

    hold_id: str
    amount: float = 0.0
    used: float = 0.0


@dataclass(slots=True)
class Pending:
    """Ledger rows not yet written (each its values in the ledger's column order): a run's, or
    those of calls outside runs."""

    rows: list[Row] = field(default_factory=list)
    holds: list[str] = field(default_factory=list)
    since: float = 0.0


#: ``datetime.now`` looked up once (a row is noted on every model call)
_now = datetime.now


def _float(value: Any, default: float) -> float:
    return default if value in (None, "") else float(value)


class BillingService:
    """The ledger and spending preflight over ``db`` (see the module docstring).

    ``settings`` (the kernel's ``settings["billing"]``, all optional): ``hold_chf`` (0.50, a
    run's hold without a budget), ``cache_s`` (10), ``flush_rows`` (50), ``flush_s`` (2),
    ``require_credit`` (every mandate prepaid; also ``NYLA_BILLING_REQUIRE_CREDIT``),
    ``storage_chf_per_gb_month`` / ``chunk_chf_per_1000_month`` (also
    ``NYLA_BILLING_STORAGE_CHF_PER_GB_MONTH`` / ``NYLA_BILLING_CHUNK_CHF_PER_1000_MONTH``).
    """

    def __init__(self, db: Any, settings: Mapping[str, Any] | None = None) -> None:
        self.db = db
        s = dict(settings or {})
        self.hold_chf = _float(s.get("hold_chf"), 0.5)
        self.cache_s = _float(s.get("cache_s"), 10.0)
        self.flush_rows = int(s.get("flush_rows", 50))
        self.flush_s = _float(s.get("flush_s"), 2.0)
        flag = s.get("require_credit", config_value("NYLA_BILLING_REQUIRE_CREDIT", ""))
        self.require_credit = str(flag).lower() in ("1", "true", "yes", "on")
        self.storage_price = _float(
            s.get("storage_chf_per_gb_month"),
            _float(config_value("NYLA_BILLING_STORAGE_CHF_PER_GB_MONTH"), 0.10),
        )
        self.chunk_price = _float(
            s.get("chunk_chf_per_1000_month"),
            _float(config_value("NYLA_BILLING_CHUNK_CHF_PER_1000_MONTH"), 0.0),
        )
        self._policies: dict[tuple[str, str], SpendingPolicy] = {}
        self._loaded_at = -1e18
        self._grants: dict[str, Grant] = {}
        self._runs: dict[str, Pending] = {}
        #: runs already closed (newest last, bounded): a call made in their context after
        #: the end (the round memory written after the trace) is billed as a call of its own
        self._closed: dict[str, None] = {}
        self._loose = Pending()

    # ---- policies -----------------------------------------------------------------------

    async def _load_policies(self) -> None:
        """Read the policies (:meth:`admit` asks when the kept ones are ``cache_s`` old)."""
        async with self.db.session() as s:
            rows = (await s.scalars(select(SpendingPolicyRow))).all()
        self._policies = {(r.kind, r.subject): _policy(r) for r in rows}
        self._loaded_at = time.monotonic()

    def forget_policies(self) -> None:
        """Read the policies again on the next call (they were changed)."""
        self._loaded_at = -1e18

    def _binding(
        self, user_id: str | None, mandate_id: str | None
    ) -> tuple[list[SpendingPolicy], set[str]]:
        """The policies that bind a call of ``user_id`` in ``mandate_id``, and the prepaid
        mandates among them (empty: nothing to check)."""
        binding: list[SpendingPolicy] = []
        prepaid: set[str] = set()
        if mandate_id is not None:
            policy = self._policies.get(("mandate", mandate_id))
            if policy is None and self.require_credit:
                policy = SpendingPolicy(kind="mandate", subject=mandate_id)
            if policy is not None and (policy.prepaid or self.require_credit):
                prepaid.add(mandate_id)
            if policy is not None and (
                policy.monthly_limit_chf is not None or prepaid or not policy.spending_allowed
            ):
                binding.append(policy)
        if user_id is not None:
            policy = self._policies.get(("user", user_id))
            if policy is not None and (
                policy.monthly_limit_chf is not None or not policy.spending_allowed
            ):
                binding.append(policy)
        return binding, prepaid

    # ---- the AI service's port ----------------------------------------------------------

    async def admit(
        self,
        context: Any,
        operation: str,
        estimate_chf: float | None,
        budget_chf: float | None = None,
    ) -> str | None:
        """The preflight of one operation in ``context``: raises :class:`SpendingRefused`
        when the mandate or user may not spend ``estimate_chf`` (see :mod:`nyla.billing.holds`).
        Returns the id of the hold a call outside a run took (hand it to :meth:`record`)."""
        if time.monotonic() - self._loaded_at >= self.cache_s:
            await self._load_policies()
        if self._loose.rows:
            await self._flush_due()
        if not self._policies and not self.require_credit:
            return None  # no policy binds anyone: nothing to check, nothing to hold
        user_id, mandate_id = _subject(context)
        policies, prepaid = self._binding(user_id, mandate_id)
        if not policies:
            return None
        for policy in policies:
            if not policy.spending_allowed:
                rule = f"{policy.kind} {policy.subject!r} may not spend"
                raise SpendingRefused(f"spending refused: {rule} ({operation})", rule=rule)
        need = float(estimate_chf or 0.0)
        run_id = self._open_run(context)
        if run_id is None:
            await self.flush()  # written rows release their holds before a new one is taken
            hold_id = uuid.uuid4().hex
            request = HoldRequest(hold_id, user_id, mandate_id, need, need, 600.0)
            await self._hold(request, policies, prepaid)
            return hold_id
        grant = self._grants.get(run_id)
        if grant is None:
            grant = self._grants[run_id] = Grant(f"run:{run_id}")
        if grant.amount - grant.used < need:
            short = need - (grant.amount - grant.used)  # what the hold must grow by at least
            want = max(short, budget_chf if budget_chf is not None else self.hold_chf)
            request = HoldRequest(grant.hold_id, user_id, mandate_id, short, want, 3600.0)
            grant.amount += await self._hold(request, policies, prepaid)
        grant.used += need  # set aside for this call until its cost is known (calls at once)
        return None

    async def _hold(
        self, request: HoldRequest, policies: list[SpendingPolicy], prepaid: set[str]
    ) -> float:
        await self.db.ensure_ready()
        async with self.db.engine.begin() as conn:
            raw = await conn.get_raw_connection()
            async with raw.driver_connection.cursor() as cur:
                return await take_hold(cur, request, policies, prepaid)

    def record(self, context: Any, charge: Charge, hold_id: str | None = None) -> None:
        """Note ``charge`` for the ledger (written with its run's end, or in the next batch)."""
        detail = charge.detail
        if context is None:
            user_id = mandate_id = run_id = workflow_id = None
        else:
            user_id = getattr(context, "user_id", None)
            mandate_id = getattr(context, "mandate_id", None)
            workflow_id = getattr(context, "workflow_id", None)
            run_id = getattr(context, "run_id", None)
            if run_id in self._closed:  # the run has ended: a call of its own
                detail = {**detail, "afterRun": run_id}  # not in the run's reported cost
                run_id = None
        row = (  # (the ledger's columns, ROW_COLUMNS)
            _now(UTC),
            user_id,
            mandate_id,
            run_id,
            workflow_id,
            "ai",
            charge.operation,
            charge.model,
            charge.input_tokens,
            charge.output_tokens,
            charge.cost_chf,
            detail,
        )
        if run_id is not None:
            pending = self._runs.get(run_id)
            if pending is None:
                pending = self._runs[run_id] = Pending()
            grant = self._grants.get(run_id)
            if grant is not None:
                grant.used += charge.cost_chf - charge.estimated_chf
        else:
            pending = self._loose
            if not pending.rows:
                pending.since = time.monotonic()
        pending.rows.append(row)
        if hold_id is not None:
            pending.holds.append(hold_id)

    async def close_run(self, run_id: str) -> int:
        """Write the ledger rows of ``run_id`` and release its hold (one transaction); the
        number of rows written."""
        pending = self._runs.pop(run_id, None) or Pending()
        grant = self._grants.pop(run_id, None)
        self._closed[run_id] = None
        if len(self._closed) > 10_000:
            del self._closed[next(iter(self._closed))]
        if grant is not None:
            pending.holds.append(grant.hold_id)
        await self._write(pending)
        return len(pending.rows)

    def _open_run(self, context: Any) -> str | None:
        """The run ``context`` is billed to, ``None`` outside a run or after its end."""
        run_id = getattr(context, "run_id", None)
        return None if run_id is None or run_id in self._closed else run_id

    async def _flush_due(self) -> None:
        loose = self._loose
        if loose.rows and (
            len(loose.rows) >= self.flush_rows or time.monotonic() - loose.since >= self.flush_s
        ):
            await self.flush()

    async def flush(self, *, runs: bool = False) -> None:
        """Write the rows of calls outside runs (with ``runs``, of open runs too: the kernel
        closes)."""
        loose, self._loose = self._loose, Pending()
        await self._write(loose)
        if runs:
            for run_id in list(self._runs):
                pending = self._runs.pop(run_id)
                await self._write(pending)

    async def _write(self, pending: Pending) -> None:
        """The rows in one binary COPY and the holds released, in one transaction on the
        driver's connection (SQLAlchemy's statement building cost about 3 ms of CPU for a
        run's rows, a COPY a fraction of it). When that fails the rows wait with the next
        batch (the error is raised: the caller logs it), so a failed write loses nothing
        the process still holds."""
        if not pending.rows and not pending.holds:
            return
        try:
            await write_rows(self.db, pending.rows, pending.holds)
        except BaseException:
            if not self._loose.rows:
                self._loose.since = time.monotonic()
            self._loose.rows.extend(pending.rows)
            self._loose.holds.extend(pending.holds)
            raise

    # ---- policies and credit (the admin's) ----------------------------------------------

    async def set_policy(self, policy: SpendingPolicy) -> SpendingPolicy:
        """Store ``policy`` (a limit of ``None`` with spending allowed and postpaid removes
        the entry)."""
        async with self.db.session() as s:
            row = await s.get(SpendingPolicyRow, (policy.kind, policy.subject))
            plain = (
                policy.monthly_limit_chf is None and policy.spending_allowed and not policy.prepaid
            )
            if plain:
                if row is not None:
                    await s.delete(row)
            elif row is None:
                s.add(SpendingPolicyRow(**policy.model_dump(by_alias=False)))
            else:
                row.monthly_limit_chf = policy.monthly_limit_chf
                row.spending_allowed = policy.spending_allowed
                row.prepaid = policy.prepaid
        self.forget_policies()
        return policy

    async def update_policy(
        self, kind: str, subject: str, **changes: float | bool | None
    ) -> SpendingPolicy:
        """Change the named fields of a user's or mandate's policy (``monthly_limit_chf``,
        ``spending_allowed``, ``prepaid``); the rest stay as they were."""
        if kind not in ("user", "mandate"):
            raise ValueError(f"kind must be user or mandate, not {kind!r}")
        unknown = set(changes) - {"monthly_limit_chf", "spending_allowed", "prepaid"}
        if unknown:
            raise ValueError(f"unknown policy field {', '.join(sorted(unknown))}")
        limit = changes.get("monthly_limit_chf")
        if limit is not None and (isinstance(limit, bool) or limit < 0):
            raise ValueError("the monthly limit must be a number of CHF, 0 or more")
        if changes.get("prepaid") and kind == "user":
            raise ValueError("prepaid is for mandates (credit is added to a mandate)")
        found = await self.policies(kind, subject)
        policy = found[0] if found else SpendingPolicy(kind=kind, subject=subject)  # type: ignore[arg-type]
        return await self.set_policy(policy.model_copy(update=changes))

    async def policies(
        self, kind: str | None = None, subject: str | None = None
    ) -> list[SpendingPolicy]:
        """The stored policies (of one kind / subject when given)."""
        query = select(SpendingPolicyRow).order_by(
            SpendingPolicyRow.kind, SpendingPolicyRow.subject
        )
        if kind is not None:
            query = query.where(SpendingPolicyRow.kind == kind)
        if subject is not None:
            query = query.where(SpendingPolicyRow.subject == subject)
        async with self.db.session() as s:
            return [_policy(r) for r in (await s.scalars(query)).all()]

    async def add_credit(
        self, mandate_id: str, amount_chf: float, *, note: str = "", added_by: str = ""
    ) -> float:
        """Add credit to a mandate (a negative amount corrects one); the new balance."""
        from nyla.billing.report import credit_balance
        from nyla.billing.tables import CreditEntry

        if amount_chf == 0:
            raise ValueError("the amount must not be 0")
        await self.flush()
        async with self.db.session() as s:
            s.add(
                CreditEntry(
                    mandate_id=mandate_id, amount_chf=amount_chf, note=note, added_by=added_by
                )
            )
            await s.flush()
            return await credit_balance(s, mandate_id)

    # ---- reports ------------------------------------------------------------------------

    async def report(
        self,
        month: str | None = None,
        *,
        mandate_id: str | None = None,
        user_id: str | None = None,
        snapshot: bool = True,
    ) -> BillingReport:
        """The spending of ``month`` (``YYYY-MM``, default this one) of a mandate and/or a
        user; for the current month a storage snapshot is taken first (``snapshot``)."""
        from nyla.billing.report import build_report, current_month, month_bounds

        month = month or current_month()
        month_bounds(month)  # a clear error for a malformed month
        await self.flush()
        if snapshot and month == current_month():
            await self.snapshot_storage()
        policies = [
            p
            for p in await self.policies()
            if (mandate_id is None or (p.kind, p.subject) == ("mandate", mandate_id))
            or (user_id is not None and (p.kind, p.subject) == ("user", user_id))
        ]
        async with self.db.session() as s:
            return await build_report(s, month, mandate_id, user_id, policies)

    async def snapshot_storage(self) -> list[StorageLine]:
        """Measure and store what the knowledge store holds per user and mandate now."""
        from nyla.billing.report import take_storage_snapshot

        async with self.db.session() as s:
            return await take_storage_snapshot(s, self.storage_price, self.chunk_price)

    async def run_entries(self, run_id: str) -> list[LedgerEntry]:
        """The written ledger rows of ``run_id``."""
        from nyla.billing.report import run_entries

        async with self.db.session() as s:
            return await run_entries(s, run_id)


def _policy(row: SpendingPolicyRow) -> SpendingPolicy:
    return SpendingPolicy(
        kind=row.kind,  # type: ignore[arg-type]
        subject=row.subject,
        monthly_limit_chf=row.monthly_limit_chf,
        spending_allowed=row.spending_allowed,
        prepaid=row.prepaid,
    )


def _subject(context: Any) -> tuple[str | None, str | None]:
    if context is None:
        return None, None
    return getattr(context, "user_id", None), getattr(context, "mandate_id", None)
