"""A deterministic generator of one accounting year for a Swiss SME.

``generate(seed, year)`` returns the same :class:`TrusteeDataset` for the same arguments:
every booking is a balanced journal entry on the chart in :mod:`.chart`, and the monthly
account balances are derived from the journal (:mod:`.ledger`).
"""

from __future__ import annotations

import random
from collections import defaultdict
from datetime import date, timedelta
from decimal import Decimal

from nyla_feature_trustee.chart import BY_NUMBER, OPENING_BALANCES
from nyla_feature_trustee.ledger import (
    ZERO,
    Entry,
    Line,
    TrusteeDataset,
    cash_balance,
    chf,
    monthly_balances,
    period_of,
    quarter_output_for,
    vat_of,
)

DEFAULT_SEED = 20250101
DEFAULT_YEAR = 2025


class _Year:
    """The bookings of one year in the making: the journal so far and what is still open."""

    def __init__(self, rng: random.Random, year: int) -> None:
        self.rng = rng
        self.year = year
        self.entries: list[Entry] = []
        self.counters: dict[str, int] = defaultdict(int)
        self.open_receivables: list[tuple[date, Decimal, str]] = []
        self.open_payables: list[tuple[date, Decimal, str]] = []
        self.input_vat: dict[int, dict[str, Decimal]] = defaultdict(
            lambda: defaultdict(lambda: ZERO)
        )

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

    def settle_prior_year(self) -> None:
        """Pay the prior year's Q4 VAT (February) and settle its open receivables and payables
        (January), all from the opening balance."""
        year = self.year
        prior_vat = -Decimal(OPENING_BALANCES["2200"])
        self.book(
            date(year, 2, 27),
            "MWST",
            f"MWST-Abrechnung Q4 {year - 1}",
            [_dr("2200", prior_vat), _cr("1020", prior_vat)],
        )
        opening_recv = Decimal(OPENING_BALANCES["1100"])
        self.book(
            date(year, 1, 20),
            "ZE",
            "Zahlungseingänge offene Debitoren Vorjahr",
            [_dr("1020", opening_recv), _cr("1100", opening_recv)],
        )
        opening_pay = -Decimal(OPENING_BALANCES["2000"])
        self.book(
            date(year, 1, 25),
            "ZA",
            "Zahlung offene Kreditoren Vorjahr",
            [_dr("2000", opening_pay), _cr("1020", opening_pay)],
        )

    def month(self, month: int) -> None:
        """Every booking of one month, in a fixed order: the random stream, and so the year a
        seed gives, depends on it."""
        self.sell(month)
        self.collect_receivables(month)
        self.purchase(month)
        self.pay_suppliers(month)
        self.pay_staff_and_rent(month)
        self.pay_expenses(month)
        self.move_money(month)
        if month == 6:
            self.buy_machine()
        if month in (4, 7, 10):
            self.settle_vat(month)

    def sell(self, month: int) -> None:
        """Service invoices on account (Dr receivables / Cr revenue + output VAT), then cash
        sales of goods."""
        rng = self.rng
        for _ in range(rng.randint(8, 12)):
            day = self.day_in(month)
            net = chf(rng.uniform(1500, 16000))
            vat = vat_of(net)
            customer = rng.choice(_CUSTOMERS)
            cc = rng.choice(("CONSULTING", "SALES"))
            self.book(
                day,
                "RE",
                f"Rechnung Dienstleistung {customer}",
                [_dr("1100", net + vat, cc), _cr("3400", net, cc), _cr("2200", vat, cc)],
            )
            self.open_receivables.append((day, net + vat, customer))
        for _ in range(rng.randint(3, 6)):
            day = self.day_in(month)
            net = chf(rng.uniform(40, 900))
            vat = vat_of(net)
            self.book(
                day,
                "KA",
                "Barverkauf Handelswaren",
                [
                    _dr("1000", net + vat, "SALES"),
                    _cr("3200", net, "SALES"),
                    _cr("2200", vat, "SALES"),
                ],
            )

    def collect_receivables(self, month: int) -> None:
        """Customers pay most invoices that are at least ~30 days old."""
        rng, year = self.rng, self.year
        settle_until = date(year, month, 28) - timedelta(days=30)
        still_open = []
        for inv_day, gross, customer in self.open_receivables:
            if inv_day <= settle_until and rng.random() < 0.95:
                pay_day = min(inv_day + timedelta(days=rng.randint(25, 45)), date(year, month, 28))
                pay_day = max(pay_day, date(year, month, 1))
                bank = "1020" if rng.random() < 0.85 else "1021"
                self.book(
                    pay_day,
                    "ZE",
                    f"Zahlungseingang {customer}",
                    [_dr(bank, gross), _cr("1100", gross)],
                )
            else:
                still_open.append((inv_day, gross, customer))
        self.open_receivables = still_open

    def purchase(self, month: int) -> None:
        """Supplier invoices for goods and services (Dr expense + input VAT / Cr payables)."""
        rng = self.rng
        for _ in range(rng.randint(3, 5)):
            day = self.day_in(month)
            account = rng.choice(("4200", "4200", "4400"))
            net = chf(rng.uniform(500, 7000))
            vat = vat_of(net)
            supplier = rng.choice(_SUPPLIERS)
            self.book(
                day,
                "KR",
                f"Lieferantenrechnung {supplier}",
                [_dr(account, net, "OPS"), _dr("1170", vat, "OPS"), _cr("2000", net + vat)],
            )
            self.input_vat[_quarter_of(month)]["1170"] += vat
            self.open_payables.append((day, net + vat, supplier))

    def pay_suppliers(self, month: int) -> None:
        """Pay the invoices that came in last month or earlier."""
        still_payable = []
        for inv_day, gross, supplier in self.open_payables:
            if inv_day.month < month:
                self.book(
                    date(self.year, month, self.rng.randint(5, 15)),
                    "ZA",
                    f"Zahlung {supplier}",
                    [_dr("2000", gross), _cr("1020", gross)],
                )
            else:
                still_payable.append((inv_day, gross, supplier))
        self.open_payables = still_payable

    def pay_staff_and_rent(self, month: int) -> None:
        """Salaries and social insurance on the 25th, the rent on the 1st."""
        period = period_of(date(self.year, month, 1))
        gross_salaries = chf(self.rng.uniform(38000, 42000))
        self.book(
            date(self.year, month, 25),
            "LO",
            f"Löhne {period}",
            [_dr("5000", gross_salaries, "ADMIN"), _cr("1020", gross_salaries)],
        )
        social = chf(gross_salaries * Decimal("0.128"))
        self.book(
            date(self.year, month, 25),
            "SV",
            f"Sozialversicherungen {period}",
            [_dr("5700", social, "ADMIN"), _cr("1020", social)],
        )
        self.book(
            date(self.year, month, 1),
            "MI",
            "Miete Büro und Lager",
            [_dr("6000", Decimal("4850.00"), "ADMIN"), _cr("1020", Decimal("4850.00"))],
        )

    def pay_expenses(self, month: int) -> None:
        """Other operating expenses with input VAT, paid by card (bank) or cash, and the bank
        fees at month end."""
        rng = self.rng
        for account, label, lo, hi, cc in _EXPENSES:
            for _ in range(rng.randint(1, 3)):
                day = self.day_in(month)
                net = chf(rng.uniform(lo, hi))
                vat = vat_of(net)
                pay = "1000" if net < 250 and rng.random() < 0.5 else "1020"
                self.book(
                    day,
                    "BE",
                    label,
                    [_dr(account, net, cc), _dr("1171", vat, cc), _cr(pay, net + vat)],
                )
                self.input_vat[_quarter_of(month)]["1171"] += vat
        for bank, fee in (("1020", "38.50"), ("1021", "12.00")):
            self.book(
                date(self.year, month, 28),
                "BS",
                f"Bankspesen {BY_NUMBER[bank].label}",
                [_dr("6900", Decimal(fee), "ADMIN"), _cr(bank, Decimal(fee))],
            )

    def move_money(self, month: int) -> None:
        """Transfers between the company's own accounts: cash above CHF 3'000 to the bank at
        month end, savings each quarter end, PostFinance to UBS twice a year."""
        cash = cash_balance(self.entries)
        if cash > Decimal("3000.00"):
            deposit = ((cash - Decimal("2000.00")) // 100 * 100).quantize(Decimal("0.01"))
            self.book(
                date(self.year, month, 28),
                "UE",
                "Bareinzahlung auf Bankkonto UBS",
                [_dr("1020", deposit), _cr("1000", deposit)],
            )
        if month % 3 == 0:
            amount = chf(self.rng.choice((5000, 7500, 10000)))
            self.book(
                date(self.year, month, 27),
                "UE",
                "Übertrag auf Sparkonto",
                [_dr("1022", amount), _cr("1020", amount)],
            )
        if month in (4, 9):
            self.book(
                date(self.year, month, 10),
                "UE",
                "Übertrag PostFinance an UBS",
                [_dr("1020", Decimal("40000.00")), _cr("1021", Decimal("40000.00"))],
            )

    def buy_machine(self) -> None:
        """The June investment, with input VAT on 1171."""
        net = Decimal("12400.00")
        vat = vat_of(net)
        self.book(
            date(self.year, 6, 18),
            "IN",
            "Kauf Verpackungsmaschine",
            [_dr("1500", net, "OPS"), _dr("1171", vat, "OPS"), _cr("1020", net + vat)],
        )
        self.input_vat[2]["1171"] += vat

    def settle_vat(self, month: int) -> None:
        """The previous quarter's VAT return at the end of the month after it: output VAT
        less input VAT, paid to (or refunded from) the bank."""
        q = _quarter_of(month) - 1
        output = quarter_output_for(self.entries, self.year, q)
        inputs = self.input_vat[q]
        due = output - inputs["1170"] - inputs["1171"]
        lines = [_dr("2200", output), _cr("1170", inputs["1170"]), _cr("1171", inputs["1171"])]
        lines.append(_cr("1020", due) if due >= 0 else _dr("1020", -due))
        self.book(date(self.year, month, 28), "MWST", f"MWST-Abrechnung Q{q} {self.year}", lines)


def _quarter_of(month: int) -> int:
    return (month - 1) // 3 + 1


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
    books = _Year(random.Random(seed), year)
    books.settle_prior_year()
    for month in range(1, 13):
        books.month(month)
    entries = sorted(books.entries, key=lambda e: (e.entry_date, e.number))
    dataset = TrusteeDataset(seed=seed, year=year, entries=entries)
    dataset.balances = monthly_balances(entries, year)
    return dataset
