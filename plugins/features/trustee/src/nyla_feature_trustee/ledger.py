"""The journal a generated year consists of, and the figures derived from it.

Lines, balanced entries and monthly account balances (opening + debit - credit = closing,
each month's opening the previous month's closing), with the Swiss rounding and VAT rules
the bookings follow.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date
from decimal import ROUND_HALF_UP, Decimal

from nyla_feature_trustee.chart import CHART, OPENING_BALANCES

VAT_RATE = Decimal("0.081")
ZERO = Decimal("0.00")


def chf(value: float | Decimal) -> Decimal:
    """Round to 5 Rappen, as Swiss invoices are."""
    return (Decimal(str(value)) / Decimal("0.05")).quantize(Decimal("1"), ROUND_HALF_UP) * Decimal(
        "0.05"
    )


def vat_of(net: Decimal) -> Decimal:
    """Swiss standard-rate VAT (8.1 %) on a net amount, rounded to 5 Rappen."""
    return chf(net * VAT_RATE)


@dataclass(frozen=True)
class Line:
    """One journal line: debit or credit on an account."""

    account_number: str
    debit: Decimal
    credit: Decimal
    cost_centre: str | None = None

    @property
    def amount(self) -> Decimal:
        """Signed amount, debit positive."""
        return self.debit - self.credit


@dataclass(frozen=True)
class Entry:
    """A balanced journal entry."""

    number: int
    entry_date: date
    reference: str
    description: str
    lines: tuple[Line, ...]


@dataclass(frozen=True)
class Balance:
    """An account's figures for one month (``period`` = ``YYYY-MM``)."""

    account_number: str
    period: str
    opening_balance: Decimal
    debit_total: Decimal
    credit_total: Decimal
    closing_balance: Decimal


@dataclass
class TrusteeDataset:
    """A generated year: entries with their lines and the monthly balances per account."""

    seed: int
    year: int
    entries: list[Entry] = field(default_factory=list)
    balances: list[Balance] = field(default_factory=list)

    def lines(self) -> list[tuple[Entry, Line]]:
        """Every line with its entry."""
        return [(e, ln) for e in self.entries for ln in e.lines]


def period_of(day: date) -> str:
    """``YYYY-MM`` of a date."""
    return f"{day.year:04d}-{day.month:02d}"


def cash_balance(entries: list[Entry]) -> Decimal:
    """The cash account (1000) after ``entries``, from its opening balance."""
    balance = Decimal(OPENING_BALANCES["1000"])
    for e in entries:
        for ln in e.lines:
            if ln.account_number == "1000":
                balance += ln.amount
    return balance


def quarter_output_for(entries: list[Entry], year: int, quarter: int) -> Decimal:
    """Output VAT booked in ``quarter`` (credits on 2200 dated in the quarter)."""
    months = range(3 * quarter - 2, 3 * quarter + 1)
    return sum(
        (
            ln.credit
            for e in entries
            if e.entry_date.year == year and e.entry_date.month in months
            for ln in e.lines
            if ln.account_number == "2200"
        ),
        ZERO,
    )


def monthly_balances(entries: list[Entry], year: int) -> list[Balance]:
    """Per account and month: opening, debit total, credit total, closing (from the journal)."""
    debit: dict[tuple[str, int], Decimal] = defaultdict(lambda: ZERO)
    credit: dict[tuple[str, int], Decimal] = defaultdict(lambda: ZERO)
    for e in entries:
        for ln in e.lines:
            debit[(ln.account_number, e.entry_date.month)] += ln.debit
            credit[(ln.account_number, e.entry_date.month)] += ln.credit
    out = []
    for account in CHART:
        running = Decimal(OPENING_BALANCES.get(account.number, "0.00"))
        for month in range(1, 13):
            d, c = debit[(account.number, month)], credit[(account.number, month)]
            closing = running + d - c
            out.append(
                Balance(
                    account_number=account.number,
                    period=f"{year:04d}-{month:02d}",
                    opening_balance=running,
                    debit_total=d,
                    credit_total=c,
                    closing_balance=closing,
                )
            )
            running = closing
    return out
