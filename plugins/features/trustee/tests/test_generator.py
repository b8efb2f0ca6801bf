"""The seeded generator: deterministic, balanced, realistic, and balances consistent with the
journal (in memory and in the seeded database)."""

from __future__ import annotations

from collections import defaultdict
from decimal import Decimal

import pytest
from sqlalchemy import func, literal_column, select

import nyla_feature_trustee
from nyla_feature_trustee.chart import BY_NUMBER, OPENING_BALANCES
from nyla_feature_trustee.generator import generate
from nyla_feature_trustee.tables import accounts, journal_entries, journal_lines


def test_same_seed_same_year_different_seed_different_year():
    a, b, c = generate(1), generate(1), generate(2)
    assert a.entries == b.entries and a.balances == b.balances
    assert a.entries != c.entries


def test_every_entry_balances_and_uses_the_chart():
    data = generate()
    assert len(data.entries) > 400
    for e in data.entries:
        assert sum(ln.debit for ln in e.lines) == sum(ln.credit for ln in e.lines), e.reference
        for ln in e.lines:
            assert ln.account_number in BY_NUMBER
            assert (ln.debit == 0) != (ln.credit == 0), "a line is either debit or credit"
    assert sum(Decimal(v) for v in OPENING_BALANCES.values()) == 0


def test_balances_follow_from_the_journal():
    data = generate()
    moves = defaultdict(lambda: [Decimal(0), Decimal(0)])
    for e, ln in data.lines():
        key = (ln.account_number, f"{e.entry_date:%Y-%m}")
        moves[key][0] += ln.debit
        moves[key][1] += ln.credit
    previous: dict[str, Decimal] = {}
    for b in data.balances:
        debit, credit = moves[(b.account_number, b.period)]
        assert (b.debit_total, b.credit_total) == (debit, credit)
        assert b.closing_balance == b.opening_balance + debit - credit
        expected_open = previous.get(
            b.account_number, Decimal(OPENING_BALANCES.get(b.account_number, "0"))
        )
        assert b.opening_balance == expected_open
        previous[b.account_number] = b.closing_balance
    # trial balance: the closing balances of every month sum to zero
    for period in {b.period for b in data.balances}:
        assert sum(b.closing_balance for b in data.balances if b.period == period) == 0


def test_realistic_shape():
    data = generate()
    dec = {b.account_number: b.closing_balance for b in data.balances if b.period.endswith("-12")}
    revenue = -(dec["3200"] + dec["3400"])
    expenses = sum(v for k, v in dec.items() if k[0] in "456")
    assert 500_000 < revenue < 2_000_000
    assert revenue > expenses  # a profitable SME
    assert all(dec[k] > 0 for k in ("1020", "1021", "1022", "1000"))  # no overdrawn accounts
    refs = {e.reference.split("-")[0] for e in data.entries}
    assert {"RE", "KR", "ZE", "ZA", "LO", "MWST", "MI"} <= refs


@pytest.mark.db
async def test_seeded_database_is_consistent_with_its_journal(db, make_kernel):
    kernel = make_kernel(nyla_feature_trustee, db=db, builtins=False)
    counts = await kernel.features.seed("trustee", "inst-1")
    data = generate()
    assert counts["journalEntries"] == len(data.entries)
    assert counts["journalLines"] == len(data.lines())
    month = func.to_char(journal_lines.c.booking_date, literal_column("'YYYY-MM'"))
    async with db.session() as s:
        sums = {
            (acc, period): (d, c)
            for acc, period, d, c in await s.execute(
                select(
                    journal_lines.c.account_number,
                    month,
                    func.sum(journal_lines.c.debit),
                    func.sum(journal_lines.c.credit),
                )
                .where(journal_lines.c.feature_instance_id == "inst-1")
                .group_by(journal_lines.c.account_number, month)
            )
        }
        rows = (
            (await s.execute(select(accounts).where(accounts.c.feature_instance_id == "inst-1")))
            .mappings()
            .all()
        )
        unbalanced = await s.scalar(
            select(func.count()).select_from(
                select(journal_lines.c.journal_entry_id)
                .group_by(journal_lines.c.journal_entry_id)
                .having(func.sum(journal_lines.c.debit) != func.sum(journal_lines.c.credit))
                .subquery()
            )
        )
        entry_dates_match = await s.scalar(
            select(func.count())
            .select_from(
                journal_lines.join(
                    journal_entries, journal_lines.c.journal_entry_id == journal_entries.c.id
                )
            )
            .where(journal_lines.c.booking_date != journal_entries.c.entry_date)
        )
    assert unbalanced == 0 and entry_dates_match == 0
    assert len(rows) == 24 * 12
    for r in rows:
        d, c = sums.get((r["account_number"], r["period"]), (Decimal(0), Decimal(0)))
        assert (r["debit_total"], r["credit_total"]) == (d, c)
        assert r["closing_balance"] == r["opening_balance"] + d - c
    # seeding again replaces, never duplicates
    await kernel.features.seed("trustee", "inst-1")
    async with db.session() as s:
        assert await s.scalar(select(func.count()).select_from(journal_entries)) == len(
            data.entries
        )
