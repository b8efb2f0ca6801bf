"""The QueryValidator: every error code, suggestion quality, and the ontology taking
precedence over the *_balance / *_total convention."""

from __future__ import annotations

import pytest

from nyla.features import validator as v
from nyla.features.validator import QueryValidator, closest
from nyla.models.feature import FeatureField, FeatureTable
from nyla.models.ontology import Constraint, ConstraintKind, OntologyDescriptor

from .conftest import trustee

FEATURE = trustee.TrusteeFeature()
TABLES = FEATURE.tables()
WITH_ONTOLOGY = QueryValidator(TABLES, FEATURE.get_agent_ontology())
CONVENTION_ONLY = QueryValidator(TABLES)
MARCH = {"field": "period", "op": "eq", "value": "2025-03"}


def code(validator, tool, args):
    r = validator.check(tool, args)
    return None if r is None else r.code


@pytest.mark.parametrize(
    ("wrong", "right"),
    [
        ("closingBalance", "closing_balance"),
        ("ClosingBalance", "closing_balance"),
        ("closing_balence", "closing_balance"),
        ("accountNumber", "account_number"),
        ("acount_number", "account_number"),
        ("acct_number", "account_number"),
        ("openingbalance", "opening_balance"),
        ("debitTotal", "debit_total"),
        ("periode", "period"),
        ("accountType", "account_type"),
    ],
)
def test_field_not_found_suggests_the_real_field(wrong, right):
    r = WITH_ONTOLOGY.check(
        "queryTable",
        {"table": "trustee_accounts", "filters": [MARCH, {"field": wrong, "value": 1}]},
    )
    assert r.code == v.FIELD_NOT_FOUND and r.field == wrong
    assert r.suggestion == right
    assert "browseTable" in r.hint


def test_field_not_found_in_fields_group_by_and_aggregate_target():
    assert (
        code(WITH_ONTOLOGY, "queryTable", {"table": "trustee_journal_lines", "fields": ["amout"]})
        == v.FIELD_NOT_FOUND
    )
    r = WITH_ONTOLOGY.check(
        "aggregateTable",
        {
            "table": "trustee_journal_lines",
            "function": "SUM",
            "field": "ammount",
            "groupBy": ["account_number"],
        },
    )
    assert (r.code, r.suggestion) == (v.FIELD_NOT_FOUND, "amount")
    r = WITH_ONTOLOGY.check(
        "aggregateTable",
        {
            "table": "trustee_journal_lines",
            "function": "SUM",
            "field": "amount",
            "groupBy": ["costCentre"],
        },
    )
    assert (r.code, r.suggestion) == (v.FIELD_NOT_FOUND, "cost_center")


def test_unknown_table_suggests_the_real_table():
    r = WITH_ONTOLOGY.check("queryTable", {"table": "journal_lines"})
    assert (r.code, r.suggestion) == (v.TABLE_NOT_FOUND, "trustee_journal_lines")
    r = WITH_ONTOLOGY.check("browseTable", {"table": "TrusteeAccounts"})
    assert (r.code, r.suggestion) == (v.TABLE_NOT_FOUND, "trustee_accounts")


@pytest.mark.parametrize(
    ("field", "op", "value"),
    [
        ("debit", "like", "1%"),  # LIKE on a number
        ("booking_date", "ilike", "2025%"),  # LIKE on a date
        ("account_number", ">", "1000"),  # > on a string
        ("reference", "between", ["A", "B"]),  # range on a string
        ("reference", "regex", ".*"),  # unknown operator
    ],
)
def test_operator_incompatible(field, op, value):
    table = "trustee_journal_entries" if field == "reference" else "trustee_journal_lines"
    r = WITH_ONTOLOGY.check(
        "queryTable", {"table": table, "filters": [{"field": field, "op": op, "value": value}]}
    )
    assert r.code == v.OPERATOR_INCOMPATIBLE and r.field == field
    assert r.suggestion


def test_operator_spellings_are_normalized():
    ok = {
        "table": "trustee_journal_lines",
        "filters": [{"field": "debit", "op": ">=", "value": 10}],
    }
    assert WITH_ONTOLOGY.check("queryTable", ok) is None


@pytest.mark.parametrize(
    ("field", "op", "value"),
    [
        ("debit", "gt", "a lot"),
        ("booking_date", "eq", "31.03.2025"),
        ("booking_date", "between", ["2025-01-01"]),
        ("account_number", "in", []),
        ("debit", "eq", None),
        ("debit", "eq", True),
    ],
)
def test_type_mismatch_on_filter_values(field, op, value):
    r = WITH_ONTOLOGY.check(
        "queryTable",
        {"table": "trustee_journal_lines", "filters": [{"field": field, "op": op, "value": value}]},
    )
    assert r.code == v.TYPE_MISMATCH and r.field == field


def test_type_mismatch_on_sum_of_text_suggests_a_numeric_field():
    r = WITH_ONTOLOGY.check(
        "aggregateTable",
        {"table": "trustee_journal_lines", "function": "SUM", "field": "account_number"},
    )
    assert r.code == v.TYPE_MISMATCH and r.suggestion in ("debit", "credit", "amount")
    # COUNT / MIN / MAX on text are fine
    for fn in ("COUNT", "MIN", "MAX"):
        assert (
            code(
                WITH_ONTOLOGY,
                "aggregateTable",
                {"table": "trustee_journal_lines", "function": fn, "field": "account_number"},
            )
            is None
        )


@pytest.mark.parametrize("function", ["SUM", "AVG", "sum"])
@pytest.mark.parametrize(
    "field", ["closing_balance", "opening_balance", "debit_total", "credit_total"]
)
def test_invalid_aggregate_target_with_and_without_ontology(function, field):
    args = {"table": "trustee_accounts", "function": function, "field": field, "filters": [MARCH]}
    for validator in (WITH_ONTOLOGY, CONVENTION_ONLY):
        r = validator.check("aggregateTable", args)
        assert r.code == v.INVALID_AGGREGATE_TARGET and r.field == field
        assert "queryTable" in r.suggestion
    # MIN / MAX of a balance are legitimate questions
    assert code(WITH_ONTOLOGY, "aggregateTable", {**args, "function": "MAX"}) is None


def test_ontology_constraints_take_precedence_over_the_suffix_convention():
    table = FeatureTable(
        name="invoices",
        fields=[
            FeatureField(name="net_total", type="number"),
            FeatureField(name="paid", type="number"),
            FeatureField(name="month", type="string"),
        ],
    )
    ontology = OntologyDescriptor(
        feature_code="x",
        constraints=[
            Constraint(kind=ConstraintKind.NEVER_AGGREGATE, table="invoices", fields=["paid"])
        ],
    )
    sum_of = lambda f: {"table": "invoices", "function": "SUM", "field": f}  # noqa: E731
    convention = QueryValidator([table])
    assert code(convention, "aggregateTable", sum_of("net_total")) == v.INVALID_AGGREGATE_TARGET
    assert code(convention, "aggregateTable", sum_of("paid")) is None
    with_onto = QueryValidator([table], ontology)
    assert (
        code(with_onto, "aggregateTable", sum_of("net_total")) is None
    )  # the ontology says it's fine
    assert code(with_onto, "aggregateTable", sum_of("paid")) == v.INVALID_AGGREGATE_TARGET
    assert with_onto.preferred_tables("invoices") == []


def test_invalid_aggregate_suggestion_names_the_preferred_table():
    r = WITH_ONTOLOGY.check(
        "aggregateTable",
        {
            "table": "trustee_accounts",
            "function": "SUM",
            "field": "debit_total",
            "filters": [MARCH],
        },
    )
    assert "trustee_journal_lines" in r.suggestion
    r = CONVENTION_ONLY.check(
        "aggregateTable", {"table": "trustee_accounts", "function": "SUM", "field": "debit_total"}
    )
    assert "trustee_journal_lines" not in r.suggestion


def test_order_by_invalid():
    r = WITH_ONTOLOGY.check(
        "queryTable",
        {"table": "trustee_accounts", "filters": [MARCH], "orderBy": "closingBalance desc"},
    )
    assert (r.code, r.suggestion) == (v.ORDER_BY_INVALID, "closing_balance")
    r = WITH_ONTOLOGY.check(
        "queryTable",
        {
            "table": "trustee_accounts",
            "filters": [MARCH],
            "orderBy": [{"field": "period", "direction": "sideways"}],
        },
    )
    assert r.code == v.ORDER_BY_INVALID
    # aggregates order by their group fields or the result column 'value'
    agg = {
        "table": "trustee_journal_lines",
        "function": "SUM",
        "field": "debit",
        "groupBy": ["account_number"],
    }
    assert code(WITH_ONTOLOGY, "aggregateTable", {**agg, "orderBy": "value desc"}) is None
    r = WITH_ONTOLOGY.check("aggregateTable", {**agg, "orderBy": "debit desc"})
    assert (r.code, r.suggestion) == (v.ORDER_BY_INVALID, "value")


def test_required_filter_only_with_ontology():
    args = {"table": "trustee_accounts", "filters": [{"field": "account_number", "value": "1020"}]}
    r = WITH_ONTOLOGY.check("queryTable", args)
    assert (r.code, r.field) == (v.REQUIRES_FILTER, "period")
    assert CONVENTION_ONLY.check("queryTable", args) is None
    assert WITH_ONTOLOGY.check("queryTable", {**args, "filters": [*args["filters"], MARCH]}) is None


def test_malformed_arguments_are_rejected_not_raised():
    assert code(WITH_ONTOLOGY, "queryTable", {"filters": "nope"}) == v.INVALID_ARGUMENT
    assert (
        code(
            WITH_ONTOLOGY,
            "aggregateTable",
            {"table": "trustee_journal_lines", "function": "MEDIAN", "field": "debit"},
        )
        == v.INVALID_ARGUMENT
    )
    assert (
        code(WITH_ONTOLOGY, "aggregateTable", {"table": "trustee_journal_lines", "function": "SUM"})
        == v.INVALID_ARGUMENT
    )
    assert code(WITH_ONTOLOGY, "dropTable", {}) == v.INVALID_ARGUMENT


def test_validate_returns_a_tool_result_with_error_details():
    result = WITH_ONTOLOGY.validate(
        "aggregateTable",
        {
            "table": "trustee_accounts",
            "function": "SUM",
            "field": "closing_balance",
            "filters": [MARCH],
        },
    )
    assert result.success is False and result.error
    wire = result.to_wire()
    assert wire["errorDetails"]["code"] == "INVALID_AGGREGATE_TARGET"
    assert set(wire["errorDetails"]) == {"code", "field", "suggestion", "hint"}


def test_closest_returns_none_for_nonsense():
    assert closest("zzzzqqq", ["account_number", "period"]) is None
