"""A deterministic generator of one accounting year for a Swiss SME.

``generate(seed, year)`` returns the same :class:`TrusteeDataset` for the same arguments:
every booking is a balanced journal entry on the chart in :mod:`.chart`, and the monthly
account balances are derived from the journal (opening + debit - credit = closing, each
month's opening is the previous month's closing).
"""

from __future__ import annotations

import random
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date, timedelta
from decimal import ROUND_HALF_UP, Decimal

from nyla_feature_trustee.chart import BY_NUMBER, CHART, OPENING_BALANCES

DEFAULT_SEED = 20250101
DEFAULT_YEAR = 2025
VAT_RATE = Decimal("0.081")
ZERO = Decimal("0.00")
COST_CENTRES = ("ADMIN", "SALES", "CONSULTING", "OPS")


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


class _Builder:
    def __init__(self, rng: random.Random, year: int) -> None:
        self.rng = rng
        self.year = year
        self.entries: list[Entry] = []
        self.counters: dict[str, int] = defaultdict(int)

    def ref(self, prefix: str) -> str:
        self.counters[prefix] += 1
        return f"{prefix}-{self.year}-{self.counters[prefix]:04d}"

    def book(self, day: date, prefix: str, description: str, lines: list[Line]) -> Entry:
        debit = sum((ln.debit for ln in lines), ZERO)
        credit = sum((ln.credit for ln in lines), ZERO)
        assert debit == credit, f"unbalanced entry {description}: {debit} != {credit}"
        entry = Entry(
            number=len(self.entries) + 1,
            entry_date=day,
            reference=self.ref(prefix),
            description=description,
            lines=tuple(lines),
        )
        self.entries.append(entry)
        return entry

    def day_in(self, month: int, lo: int = 1, hi: int = 28) -> date:
        return date(self.year, month, self.rng.randint(lo, hi))


def _dr(account: str, amount: Decimal, cc: str | None = None) -> Line:
    return Line(account, amount, ZERO, cc)


def _cr(account: str, amount: Decimal, cc: str | None = None) -> Line:
    return Line(account, ZERO, amount, cc)


_CUSTOMERS = (
    "Muster AG",
    "Alpenblick GmbH",
    "Bäckerei Huber",
    "Zürcher Treuhand AG",
    "Garage Keller",
    "Helvetia Design GmbH",
    "Schreinerei Frei",
    "Bern Logistik AG",
)
_SUPPLIERS = ("Grossist Meier AG", "Papeterie Weber", "Elektro Brunner GmbH", "Swiss Supply AG")
_EXPENSES = (
    ("6200", "Treibstoff und Service Firmenfahrzeug", 120, 900, "OPS"),
    ("6500", "Büromaterial und Porto", 60, 600, "ADMIN"),
    ("6570", "Software-Abonnemente und IT-Support", 150, 1800, "ADMIN"),
    ("6600", "Inserate und Online-Werbung", 200, 2500, "SALES"),
)


def generate(seed: int = DEFAULT_SEED, year: int = DEFAULT_YEAR) -> TrusteeDataset:
    """One realistic, balanced accounting year, identical for the same ``seed`` and ``year``."""
    rng = random.Random(seed)
    b = _Builder(rng, year)
    open_receivables: list[tuple[date, Decimal, str]] = []
    open_payables: list[tuple[date, Decimal, str]] = []
    quarter_output: dict[int, Decimal] = defaultdict(lambda: ZERO)
    quarter_input: dict[int, dict[str, Decimal]] = defaultdict(lambda: defaultdict(lambda: ZERO))

    # The prior year's Q4 VAT (opening balance of 2200) is paid in February.
    prior_vat = -Decimal(OPENING_BALANCES["2200"])
    b.book(
        date(year, 2, 27),
        "MWST",
        f"MWST-Abrechnung Q4 {year - 1}",
        [_dr("2200", prior_vat), _cr("1020", prior_vat)],
    )
    # Receivables and payables from the opening balance are settled in January.
    opening_recv = Decimal(OPENING_BALANCES["1100"])
    b.book(
        date(year, 1, 20),
        "ZE",
        "Zahlungseingänge offene Debitoren Vorjahr",
        [_dr("1020", opening_recv), _cr("1100", opening_recv)],
    )
    opening_pay = -Decimal(OPENING_BALANCES["2000"])
    b.book(
        date(year, 1, 25),
        "ZA",
        "Zahlung offene Kreditoren Vorjahr",
        [_dr("2000", opening_pay), _cr("1020", opening_pay)],
    )

    for month in range(1, 13):
        quarter = (month - 1) // 3 + 1
        # Service invoices (Dr receivables / Cr revenue + output VAT).
        for _ in range(rng.randint(8, 12)):
            day = b.day_in(month)
            net = chf(rng.uniform(1500, 16000))
            vat = vat_of(net)
            customer = rng.choice(_CUSTOMERS)
            cc = rng.choice(("CONSULTING", "SALES"))
            b.book(
                day,
                "RE",
                f"Rechnung Dienstleistung {customer}",
                [_dr("1100", net + vat, cc), _cr("3400", net, cc), _cr("2200", vat, cc)],
            )
            open_receivables.append((day, net + vat, customer))
        # Cash sales of goods.
        for _ in range(rng.randint(3, 6)):
            day = b.day_in(month)
            net = chf(rng.uniform(40, 900))
            vat = vat_of(net)
            b.book(
                day,
                "KA",
                "Barverkauf Handelswaren",
                [
                    _dr("1000", net + vat, "SALES"),
                    _cr("3200", net, "SALES"),
                    _cr("2200", vat, "SALES"),
                ],
            )
        # Customer payments for invoices at least ~30 days old.
        settle_until = date(year, month, 28) - timedelta(days=30)
        still_open = []
        for inv_day, gross, customer in open_receivables:
            if inv_day <= settle_until and rng.random() < 0.95:
                pay_day = min(inv_day + timedelta(days=rng.randint(25, 45)), date(year, month, 28))
                pay_day = max(pay_day, date(year, month, 1))
                bank = "1020" if rng.random() < 0.85 else "1021"
                b.book(
                    pay_day,
                    "ZE",
                    f"Zahlungseingang {customer}",
                    [_dr(bank, gross), _cr("1100", gross)],
                )
            else:
                still_open.append((inv_day, gross, customer))
        open_receivables = still_open
        # Supplier invoices for goods and services (Dr expense + input VAT / Cr payables).
        for _ in range(rng.randint(3, 5)):
            day = b.day_in(month)
            account = rng.choice(("4200", "4200", "4400"))
            net = chf(rng.uniform(500, 7000))
            vat = vat_of(net)
            supplier = rng.choice(_SUPPLIERS)
            b.book(
                day,
                "KR",
                f"Lieferantenrechnung {supplier}",
                [_dr(account, net, "OPS"), _dr("1170", vat, "OPS"), _cr("2000", net + vat)],
            )
            quarter_input[quarter]["1170"] += vat
            open_payables.append((day, net + vat, supplier))
        # Pay suppliers whose invoices came in last month or earlier.
        still_payable = []
        for inv_day, gross, supplier in open_payables:
            if inv_day.month < month:
                b.book(
                    date(year, month, rng.randint(5, 15)),
                    "ZA",
                    f"Zahlung {supplier}",
                    [_dr("2000", gross), _cr("1020", gross)],
                )
            else:
                still_payable.append((inv_day, gross, supplier))
        open_payables = still_payable
        # Salaries and social insurance, paid on the 25th.
        gross_salaries = chf(rng.uniform(38000, 42000))
        b.book(
            date(year, month, 25),
            "LO",
            f"Löhne {period_of(date(year, month, 1))}",
            [_dr("5000", gross_salaries, "ADMIN"), _cr("1020", gross_salaries)],
        )
        social = chf(gross_salaries * Decimal("0.128"))
        b.book(
            date(year, month, 25),
            "SV",
            f"Sozialversicherungen {period_of(date(year, month, 1))}",
            [_dr("5700", social, "ADMIN"), _cr("1020", social)],
        )
        # Rent on the 1st.
        b.book(
            date(year, month, 1),
            "MI",
            "Miete Büro und Lager",
            [_dr("6000", Decimal("4850.00"), "ADMIN"), _cr("1020", Decimal("4850.00"))],
        )
        # Other operating expenses with input VAT, paid by card (bank) or cash.
        for account, label, lo, hi, cc in _EXPENSES:
            for _ in range(rng.randint(1, 3)):
                day = b.day_in(month)
                net = chf(rng.uniform(lo, hi))
                vat = vat_of(net)
                pay = "1000" if net < 250 and rng.random() < 0.5 else "1020"
                b.book(
                    day,
                    "BE",
                    label,
                    [_dr(account, net, cc), _dr("1171", vat, cc), _cr(pay, net + vat)],
                )
                quarter_input[quarter]["1171"] += vat
        # Bank fees at month end.
        for bank, fee in (("1020", "38.50"), ("1021", "12.00")):
            b.book(
                date(year, month, 28),
                "BS",
                f"Bankspesen {BY_NUMBER[bank].label}",
                [_dr("6900", Decimal(fee), "ADMIN"), _cr(bank, Decimal(fee))],
            )
        # Cash above CHF 3'000 is deposited at the bank at month end.
        cash = _running_cash(b.entries)
        if cash > Decimal("3000.00"):
            deposit = ((cash - Decimal("2000.00")) // 100 * 100).quantize(Decimal("0.01"))
            b.book(
                date(year, month, 28),
                "UE",
                "Bareinzahlung auf Bankkonto UBS",
                [_dr("1020", deposit), _cr("1000", deposit)],
            )
        # Transfer to the savings account each quarter end.
        if month % 3 == 0:
            amount = chf(rng.choice((5000, 7500, 10000)))
            b.book(
                date(year, month, 27),
                "UE",
                "Übertrag auf Sparkonto",
                [_dr("1022", amount), _cr("1020", amount)],
            )
        # Customer money collected on PostFinance is moved to the main account twice a year.
        if month in (4, 9):
            b.book(
                date(year, month, 10),
                "UE",
                "Übertrag PostFinance an UBS",
                [_dr("1020", Decimal("40000.00")), _cr("1021", Decimal("40000.00"))],
            )
        # Machine purchase in June (investment with input VAT 1171).
        if month == 6:
            net = Decimal("12400.00")
            vat = vat_of(net)
            b.book(
                date(year, 6, 18),
                "IN",
                "Kauf Verpackungsmaschine",
                [_dr("1500", net, "OPS"), _dr("1171", vat, "OPS"), _cr("1020", net + vat)],
            )
            quarter_input[quarter]["1171"] += vat

        # Quarterly VAT settlement at the end of the month after the quarter.
        if month in (4, 7, 10):
            q = quarter - 1
            settle_day = date(year, month, 28)
            output = quarter_output_for(b.entries, year, q)
            inputs = quarter_input[q]
            due = output - inputs["1170"] - inputs["1171"]
            lines = [_dr("2200", output), _cr("1170", inputs["1170"]), _cr("1171", inputs["1171"])]
            lines.append(_cr("1020", due) if due >= 0 else _dr("1020", -due))
            b.book(settle_day, "MWST", f"MWST-Abrechnung Q{q} {year}", lines)
            quarter_output[q] = output

    entries = sorted(b.entries, key=lambda e: (e.entry_date, e.number))
    dataset = TrusteeDataset(seed=seed, year=year, entries=entries)
    dataset.balances = monthly_balances(entries, year)
    return dataset


def _running_cash(entries: list[Entry]) -> Decimal:
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
