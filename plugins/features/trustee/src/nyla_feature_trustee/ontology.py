"""What the trustee tables mean: the ontology (phase 2) and the legacy domain hints (baseline)."""

from __future__ import annotations

from nyla.sdk import (
    CanonicalPattern,
    Cardinality,
    Constraint,
    ConstraintKind,
    Entity,
    EntityFilter,
    OntologyDescriptor,
    PatternStep,
    Relation,
)

ACCOUNTS = "trustee_accounts"
ENTRIES = "trustee_journal_entries"
LINES = "trustee_journal_lines"
BALANCE_FIELDS = ["opening_balance", "closing_balance", "debit_total", "credit_total"]


def _sub(name: str, description: str, field: str, op: str, value: str) -> Entity:
    return Entity(
        name=name,
        table=ACCOUNTS,
        description=description,
        parent_entity="Account",
        filters=[EntityFilter(field=field, operator=op, value=value)],
        key_fields=["account_number", "period"],
    )


def _lines_of(op: str, account: str, start: str, end: str) -> list[dict[str, object]]:
    """The filters of journal lines on matching accounts in a date range."""
    return [
        {"field": "account_number", "op": op, "value": account},
        {"field": "booking_date", "op": "between", "value": [start, end]},
    ]


def _sum_lines(field: str, filters: list[dict[str, object]], note: str = "") -> PatternStep:
    """An ``aggregateTable`` step: ``SUM(field)`` over the journal lines that match."""
    return PatternStep(
        tool="aggregateTable",
        arguments={"table": LINES, "function": "SUM", "field": field, "filters": filters},
        note=note,
    )


def build_ontology() -> OntologyDescriptor:
    """The trustee ontology: entities, relations, constraints and canonical patterns."""
    return OntologyDescriptor(
        feature_code="trustee",
        version="1",
        entities=_entities(),
        relations=_relations(),
        constraints=_constraints(),
        canonical_patterns=_patterns(),
    )


def _entities() -> list[Entity]:
    """The three tables, with the account kinds of the chart as sub-entities of Account."""
    return [
        Entity(
            name="Account",
            table=ACCOUNTS,
            description="An account of the Swiss SME chart, one row per month (period)",
            key_fields=["account_number", "period"],
        ),
        _sub("BankAccount", "Bank accounts 1020-1029", "account_number", "like", "102%"),
        _sub("CashAccount", "Cash on hand (Kasse)", "account_number", "eq", "1000"),
        _sub(
            "ReceivablesAccount", "Customer receivables (Debitoren)", "account_number", "eq", "1100"
        ),
        _sub("PayablesAccount", "Supplier payables (Kreditoren)", "account_number", "eq", "2000"),
        _sub(
            "InputVatAccount", "Input VAT to reclaim (Vorsteuer)", "account_number", "like", "117%"
        ),
        _sub("OutputVatAccount", "VAT owed (Umsatzsteuer)", "account_number", "eq", "2200"),
        _sub("RevenueAccount", "Revenue accounts 3xxx", "account_type", "eq", "revenue"),
        _sub("ExpenseAccount", "Expense accounts 4xxx-6xxx", "account_type", "eq", "expense"),
        Entity(
            name="JournalEntry",
            table=ENTRIES,
            description="A booking with date, reference and text",
            key_fields=["id"],
        ),
        Entity(
            name="JournalLine",
            table=LINES,
            description="A debit or credit posting of an entry on one account",
            key_fields=["id"],
        ),
    ]


def _relations() -> list[Relation]:
    """A journal line belongs to one entry and posts to one account."""
    return [
        Relation(
            from_entity="JournalLine",
            to_entity="JournalEntry",
            cardinality=Cardinality.MANY_TO_ONE,
            via_field="journal_entry_id",
            to_field="id",
            description="every line belongs to exactly one entry",
        ),
        Relation(
            from_entity="JournalLine",
            to_entity="Account",
            cardinality=Cardinality.MANY_TO_ONE,
            via_field="account_number",
            to_field="account_number",
            description="the account posted to (match the period of booking_date)",
        ),
    ]


def _constraints() -> list[Constraint]:
    """Monthly balances are never summed over periods; which table answers which question."""
    return [
        Constraint(
            kind=ConstraintKind.NEVER_AGGREGATE,
            table=ACCOUNTS,
            fields=list(BALANCE_FIELDS),
            reason=(
                "balances and totals are already aggregated per month; summing them "
                "over periods double-counts"
            ),
        ),
        Constraint(
            kind=ConstraintKind.REQUIRES_FILTER_ON,
            table=ACCOUNTS,
            fields=["period"],
            reason="every account has one row per month; without a period you mix months",
        ),
        Constraint(
            kind=ConstraintKind.PREFERRED_TABLE_FOR_INTENT,
            table=LINES,
            fields=["debit", "credit", "amount"],
            intent="movements and sums of bookings over a date range",
            reason="journal lines hold each posting; sum them with booking_date filters",
        ),
        Constraint(
            kind=ConstraintKind.PREFERRED_TABLE_FOR_INTENT,
            table=ACCOUNTS,
            fields=["closing_balance"],
            intent="balance of an account at the end of a month",
            reason="read closing_balance of that period; do not recompute from lines",
        ),
    ]


def _patterns() -> list[CanonicalPattern]:
    """Tool-call skeletons for the frequent questions, in the order the prompt lists them."""
    quarter = ("<quarter start>", "<quarter end>")
    return [
        CanonicalPattern(
            name="BANK_BALANCE_AT_DATE",
            intent="Bank balance at the end of a month",
            description="Read the closing balance of every bank account for that month and add the rows up.",
            steps=[
                _month_rows(
                    {"field": "account_number", "op": "like", "value": "102%"},
                    note="add the closing_balance of the returned rows",
                )
            ],
        ),
        CanonicalPattern(
            name="JOURNAL_SUM_AT_ACCOUNT",
            intent="Sum of the postings on one account in a date range",
            description="Aggregate the signed amount of the account's journal lines.",
            steps=[_sum_lines("amount", _lines_of("eq", "<account>", "<from>", "<to>"))],
        ),
        CanonicalPattern(
            name="ACCOUNT_MOVEMENT_IN_PERIOD",
            intent="Debits and credits of an account in a date range",
            description="Two aggregates on journal lines: SUM(debit) and SUM(credit).",
            steps=[
                _sum_lines("debit", _lines_of("eq", "<account>", "<from>", "<to>")),
                _sum_lines("credit", _lines_of("eq", "<account>", "<from>", "<to>")),
            ],
        ),
        CanonicalPattern(
            name="TOP_N_EXPENSE_ACCOUNTS",
            intent="Largest expense accounts of the year up to a month",
            description=(
                "Expense accounts start the year at zero, so their closing balance of a "
                "month is the year-to-date expense."
            ),
            steps=[
                _month_rows(
                    {"field": "account_type", "op": "eq", "value": "expense"},
                    orderBy=[{"field": "closing_balance", "direction": "desc"}],
                    limit="<n>",
                )
            ],
        ),
        CanonicalPattern(
            name="VAT_DUE_FOR_QUARTER",
            intent="VAT payable for a quarter",
            description="Output VAT credited on 2200 minus input VAT debited on 117x, both within the quarter.",
            steps=[
                _sum_lines("credit", _lines_of("eq", "2200", *quarter), note="output VAT"),
                _sum_lines(
                    "debit",
                    _lines_of("like", "117%", *quarter),
                    note="input VAT; VAT due = output - input",
                ),
            ],
        ),
        CanonicalPattern(
            name="ENTRY_LINES_BY_REFERENCE",
            intent="The postings of one booking, found by its reference",
            description="Find the entry by reference, then its lines by journal_entry_id.",
            steps=[
                _query(ENTRIES, {"field": "reference", "op": "eq", "value": "<reference>"}),
                _query(LINES, {"field": "journal_entry_id", "op": "eq", "value": "<id of step 1>"}),
            ],
        ),
    ]


def _query(table: str, where: dict[str, object]) -> PatternStep:
    """A ``queryTable`` step: the rows of ``table`` that match one filter."""
    return PatternStep(tool="queryTable", arguments={"table": table, "filters": [where]})


def _month_rows(where: dict[str, object], note: str = "", **more: object) -> PatternStep:
    """A ``queryTable`` step: number, label and closing balance of the matching accounts in
    one month (``more``: ordering and limit)."""
    period = {"field": "period", "op": "eq", "value": "<YYYY-MM>"}
    fields = ["account_number", "label", "closing_balance"]
    return PatternStep(
        tool="queryTable",
        arguments={"table": ACCOUNTS, "filters": [where, period], "fields": fields, **more},
        note=note,
    )


DOMAIN_HINTS = """\
Trustee accounting data of a Swiss SME (amounts in CHF).
- trustee_accounts has one row per account and month (period 'YYYY-MM') with opening_balance,
  debit_total, credit_total and closing_balance. Bank accounts are 1020-1029, cash is 1000,
  receivables 1100, payables 2000, input VAT 1170/1171, VAT owed 2200, revenue 3xxx,
  material 4xxx, personnel 5xxx, other expenses 6xxx.
- trustee_journal_entries holds each booking (entry_date, reference, description);
  trustee_journal_lines its postings (account_number, debit, credit, amount = debit - credit).
- For a balance at the end of a month read closing_balance for that period.
- For movements over a date range sum the journal lines with a booking_date filter.
"""
