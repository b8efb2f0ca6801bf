"""The trustee data provider: where an instance's rows live and how they are (re)seeded."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import delete, func, select
from sqlalchemy.dialects.postgresql import insert as pg_insert

from nyla_feature_trustee.chart import BY_NUMBER
from nyla_feature_trustee.generator import DEFAULT_SEED, DEFAULT_YEAR, generate
from nyla_feature_trustee.tables import (
    DATA_TABLES,
    METADATA,
    accounts,
    instances,
    journal_entries,
    journal_lines,
)

_NS = uuid.UUID("6f1c1b9e-8a57-4c1e-9d0b-5b1f0c3e7a21")


def _id(instance: str, kind: str, key: str) -> str:
    return str(uuid.uuid5(_NS, f"{instance}/{kind}/{key}"))


class TrusteeDataProvider:
    """Exposes the trustee tables to the kernel's table tools and seeds instances.

    ``bind(db)`` attaches the kernel's :class:`nyla.host.Database`; the feature service does that
    before using the provider. ``data_version`` changes on every write to an instance.
    """

    metadata = METADATA

    def __init__(self) -> None:
        self.db: Any = None

    def bind(self, db: Any) -> None:
        """Use ``db`` (a :class:`nyla.host.Database`) for versions and seeding."""
        self.db = db

    def sqlalchemy_tables(self) -> dict[str, Any]:
        """The data tables by the name the data agent sees."""
        return dict(DATA_TABLES)

    async def ensure_tables(self) -> None:
        """Create the feature's tables in the bound database if missing."""
        await self.db.ensure_ready()
        schema = getattr(self.db, "schema", None)
        async with self.db.engine.begin() as conn:
            if schema:  # check and create in the database's own schema, never a shadow in public
                conn = await conn.execution_options(schema_translate_map={None: schema})
            await conn.run_sync(METADATA.create_all)

    async def data_version(self, feature_instance_id: str) -> str:
        """The instance's data version (``"0"`` for an instance without data)."""
        self._require_db()
        async with self.db.session() as s:
            version = await s.scalar(
                select(instances.c.data_version).where(
                    instances.c.feature_instance_id == feature_instance_id
                )
            )
        return str(version or 0)

    async def seed(
        self, feature_instance_id: str, *, seed: int = DEFAULT_SEED, year: int = DEFAULT_YEAR
    ) -> dict[str, int]:
        """Replace the instance's data with the generated year for ``seed`` in one
        transaction and bump its data version. Returns row counts."""
        self._require_db()
        await self.ensure_tables()
        data = generate(seed, year)
        inst = feature_instance_id
        entry_rows, line_rows = [], []
        for e in data.entries:
            entry_id = _id(inst, "entry", e.reference)
            entry_rows.append(
                {
                    "id": entry_id,
                    "feature_instance_id": inst,
                    "entry_date": e.entry_date,
                    "reference": e.reference,
                    "description": e.description,
                }
            )
            for i, ln in enumerate(e.lines):
                line_rows.append(
                    {
                        "id": _id(inst, "line", f"{e.reference}/{i}"),
                        "feature_instance_id": inst,
                        "journal_entry_id": entry_id,
                        "booking_date": e.entry_date,
                        "account_number": ln.account_number,
                        "debit": ln.debit,
                        "credit": ln.credit,
                        "amount": ln.amount,
                        "currency": BY_NUMBER[ln.account_number].currency,
                        "cost_center": ln.cost_centre,
                    }
                )
        account_rows = []
        for bal in data.balances:
            acc = BY_NUMBER[bal.account_number]
            account_rows.append(
                {
                    "id": _id(inst, "account", f"{bal.account_number}/{bal.period}"),
                    "feature_instance_id": inst,
                    "account_number": acc.number,
                    "label": acc.label,
                    "account_type": acc.type,
                    "currency": acc.currency,
                    "period": bal.period,
                    "opening_balance": bal.opening_balance,
                    "debit_total": bal.debit_total,
                    "credit_total": bal.credit_total,
                    "closing_balance": bal.closing_balance,
                }
            )
        async with self.db.session() as s:
            for table in (journal_lines, journal_entries, accounts):
                await s.execute(delete(table).where(table.c.feature_instance_id == inst))
            await s.execute(journal_entries.insert(), entry_rows)
            await s.execute(journal_lines.insert(), line_rows)
            await s.execute(accounts.insert(), account_rows)
            await self._bump(s, inst, seed=seed, year=year)
        return {
            "accounts": len(account_rows),
            "journalEntries": len(entry_rows),
            "journalLines": len(line_rows),
        }

    async def touch(self, feature_instance_id: str) -> None:
        """Mark the instance's data as changed (for writers outside :meth:`seed`)."""
        self._require_db()
        await self.ensure_tables()
        async with self.db.session() as s:
            await self._bump(s, feature_instance_id)

    async def _bump(self, session: Any, inst: str, **values: Any) -> None:
        now = datetime.now(UTC)
        stmt = pg_insert(instances).values(
            feature_instance_id=inst, data_version=1, updated_at=now, **values
        )
        stmt = stmt.on_conflict_do_update(
            index_elements=[instances.c.feature_instance_id],
            set_={
                "data_version": instances.c.data_version + 1,
                "updated_at": now,
                **values,
            },
        )
        await session.execute(stmt)

    async def instance_ids(self) -> list[str]:
        """Every seeded instance."""
        self._require_db()
        await self.ensure_tables()
        async with self.db.session() as s:
            rows = await s.scalars(
                select(instances.c.feature_instance_id).order_by(
                    func.lower(instances.c.feature_instance_id)
                )
            )
            return list(rows)

    def _require_db(self) -> None:
        if self.db is None:
            raise RuntimeError(
                "the trustee data provider is not bound to a database: use "
                "kernel.features (it binds the kernel's database)"
            )
