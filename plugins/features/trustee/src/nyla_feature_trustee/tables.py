"""The trustee feature's tables (SQLAlchemy Core) and how the data agent sees them.

The tables live on the feature's own :data:`METADATA`; the kernel's feature service creates
them on first use. Every table is keyed by ``feature_instance_id``; the data agent never sees
that column, the kernel's table tools filter on it.
"""

from __future__ import annotations

from sqlalchemy import (
    Column,
    Date,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    Numeric,
    String,
    Table,
)

from nyla.sdk import FeatureField, FeatureTable

METADATA = MetaData()

MONEY = Numeric(14, 2)

instances = Table(
    "trustee_instances",
    METADATA,
    Column("feature_instance_id", String(64), primary_key=True),
    Column("data_version", Integer, nullable=False, default=0),
    Column("seed", Integer),
    Column("year", Integer),
    Column("updated_at", DateTime(timezone=True)),
)

accounts = Table(
    "trustee_accounts",
    METADATA,
    Column("id", String(36), primary_key=True),
    Column("feature_instance_id", String(64), nullable=False),
    Column("account_number", String(10), nullable=False),
    Column("label", String(200), nullable=False),
    Column("account_type", String(20), nullable=False),
    Column("currency", String(3), nullable=False),
    Column("period", String(7), nullable=False),
    Column("opening_balance", MONEY, nullable=False),
    Column("debit_total", MONEY, nullable=False),
    Column("credit_total", MONEY, nullable=False),
    Column("closing_balance", MONEY, nullable=False),
    Index("ix_trustee_accounts_instance_period", "feature_instance_id", "period"),
)

journal_entries = Table(
    "trustee_journal_entries",
    METADATA,
    Column("id", String(36), primary_key=True),
    Column("feature_instance_id", String(64), nullable=False, index=True),
    Column("entry_date", Date, nullable=False),
    Column("reference", String(40), nullable=False),
    Column("description", String(300), nullable=False),
)

journal_lines = Table(
    "trustee_journal_lines",
    METADATA,
    Column("id", String(36), primary_key=True),
    Column("feature_instance_id", String(64), nullable=False),
    Column(
        "journal_entry_id",
        String(36),
        ForeignKey("trustee_journal_entries.id", ondelete="CASCADE"),
        nullable=False,
        index=True,
    ),
    Column("booking_date", Date, nullable=False),
    Column("account_number", String(10), nullable=False),
    Column("debit", MONEY, nullable=False),
    Column("credit", MONEY, nullable=False),
    Column("amount", MONEY, nullable=False),
    Column("currency", String(3), nullable=False),
    Column("cost_center", String(20)),
    Index("ix_trustee_journal_lines_instance_account", "feature_instance_id", "account_number"),
)

DATA_TABLES = {t.name: t for t in (accounts, journal_entries, journal_lines)}


def _f(name: str, type_: str, description: str, nullable: bool = False) -> FeatureField:
    return FeatureField(name=name, type=type_, description=description, nullable=nullable)


FEATURE_TABLES: list[FeatureTable] = [
    FeatureTable(
        name="trustee_accounts",
        description=(
            "Chart of accounts with one row per account and month (period): the month's "
            "opening balance, debit and credit totals and closing balance. Balances are "
            "signed debit-positive: assets and expenses are positive, liabilities, equity "
            "and revenue negative."
        ),
        fields=[
            _f("id", "string", "Row id"),
            _f("account_number", "string", "Account number of the Swiss SME chart (e.g. '1020')"),
            _f("label", "string", "Account name"),
            _f(
                "account_type",
                "string",
                "asset, liability, equity, revenue or expense",
            ),
            _f("currency", "string", "ISO currency code (CHF)"),
            _f("period", "string", "Month the figures belong to, 'YYYY-MM'"),
            _f("opening_balance", "number", "Balance at the start of the period"),
            _f("debit_total", "number", "Sum of debits booked in the period"),
            _f("credit_total", "number", "Sum of credits booked in the period"),
            _f("closing_balance", "number", "Balance at the end of the period"),
        ],
    ),
    FeatureTable(
        name="trustee_journal_entries",
        description="Journal entries (Buchungen): one row per booking with date and reference.",
        fields=[
            _f("id", "string", "Entry id (journal lines refer to it as journal_entry_id)"),
            _f("entry_date", "date", "Booking date"),
            _f("reference", "string", "Document reference, e.g. 'RE-2025-0001' for an invoice"),
            _f("description", "string", "Booking text"),
        ],
    ),
    FeatureTable(
        name="trustee_journal_lines",
        description=(
            "Journal lines: the debit and credit postings of each entry on the accounts. "
            "amount = debit - credit."
        ),
        fields=[
            _f("id", "string", "Line id"),
            _f("journal_entry_id", "string", "The entry this line belongs to"),
            _f("booking_date", "date", "Booking date of the entry"),
            _f("account_number", "string", "Account posted to"),
            _f("debit", "number", "Debit amount (0 when a credit)"),
            _f("credit", "number", "Credit amount (0 when a debit)"),
            _f("amount", "number", "Signed amount, debit positive"),
            _f("currency", "string", "ISO currency code (CHF)"),
            _f("cost_center", "string", "Cost centre (ADMIN, SALES, CONSULTING, OPS)", True),
        ],
    ),
]
