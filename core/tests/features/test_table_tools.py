"""The table tools against the seeded embedded PostgreSQL: filters, every aggregate, group
by, paging, empty results, real query failures, caching and invalidation."""

from __future__ import annotations

import json
from datetime import date
from decimal import Decimal

import pytest

from nyla.errors import DatabaseQueryError
from nyla.features.sql import QueryArgumentError

from .conftest import INSTANCE

pytestmark = pytest.mark.db


def _lines(dataset, account=None, start=None, end=None):
    return [
        ln
        for e, ln in dataset.lines()
        if (account is None or ln.account_number == account)
        and (start is None or e.entry_date >= start)
        and (end is None or e.entry_date <= end)
    ]


async def test_query_filters_return_matching_rows(seeded_kernel, dataset):
    res = await seeded_kernel.features.query_table(
        "trustee",
        INSTANCE,
        {
            "table": "trustee_accounts",
            "filters": [
                {"field": "account_number", "op": "like", "value": "102%"},
                {"field": "period", "op": "eq", "value": "2025-03"},
            ],
            "fields": ["account_number", "closing_balance"],
            "orderBy": "account_number",
        },
    )
    expected = sorted(
        (b.account_number, float(b.closing_balance))
        for b in dataset.balances
        if b.period == "2025-03" and b.account_number.startswith("102")
    )
    assert [(r["account_number"], r["closing_balance"]) for r in res["rows"]] == expected
    assert set(res["rows"][0]) == {"account_number", "closing_balance"}


async def test_between_in_and_ordering(seeded_kernel, dataset):
    res = await seeded_kernel.features.query_table(
        "trustee",
        INSTANCE,
        {
            "table": "trustee_journal_lines",
            "filters": [
                {"field": "account_number", "op": "in", "value": ["6000", "6900"]},
                {"field": "booking_date", "op": "between", "value": ["2025-02-01", "2025-02-28"]},
            ],
            "orderBy": [{"field": "debit", "direction": "desc"}],
            "limit": 500,
        },
    )
    expected = [
        ln
        for acc in ("6000", "6900")
        for ln in _lines(dataset, acc, date(2025, 2, 1), date(2025, 2, 28))
    ]
    assert res["rowCount"] == len(expected) > 0
    debits = [r["debit"] for r in res["rows"]]
    assert debits == sorted(debits, reverse=True)
    assert debits[0] == float(max(ln.debit for ln in expected))


async def test_limit_and_offset_page_through(seeded_kernel):
    base = {"table": "trustee_journal_entries", "limit": 5}
    first = await seeded_kernel.features.query_table("trustee", INSTANCE, base)
    second = await seeded_kernel.features.query_table("trustee", INSTANCE, {**base, "offset": 5})
    assert len(first["rows"]) == len(second["rows"]) == 5
    assert not {r["id"] for r in first["rows"]} & {r["id"] for r in second["rows"]}


@pytest.mark.parametrize("function", ["SUM", "COUNT", "AVG", "MIN", "MAX"])
async def test_every_aggregate(seeded_kernel, dataset, function):
    res = await seeded_kernel.features.aggregate_table(
        "trustee",
        INSTANCE,
        {
            "table": "trustee_journal_lines",
            "function": function,
            "field": "debit",
            "filters": [{"field": "account_number", "op": "eq", "value": "6570"}],
        },
    )
    debits = [ln.debit for ln in _lines(dataset, "6570")]
    expected = {
        "SUM": sum(debits),
        "COUNT": len(debits),
        "AVG": sum(debits) / len(debits),
        "MIN": min(debits),
        "MAX": max(debits),
    }[function]
    assert res["rows"][0]["value"] == pytest.approx(float(expected), abs=0.005)


async def test_group_by_with_order_and_limit(seeded_kernel, dataset):
    res = await seeded_kernel.features.aggregate_table(
        "trustee",
        INSTANCE,
        {
            "table": "trustee_journal_lines",
            "function": "SUM",
            "field": "debit",
            "groupBy": ["account_number"],
            "filters": [{"field": "account_number", "op": "like", "value": "6%"}],
            "orderBy": [{"field": "value", "direction": "desc"}],
            "limit": 3,
        },
    )
    sums: dict[str, Decimal] = {}
    for ln in _lines(dataset):
        if ln.account_number.startswith("6"):
            sums[ln.account_number] = sums.get(ln.account_number, Decimal(0)) + ln.debit
    top = sorted(sums.items(), key=lambda kv: kv[1], reverse=True)[:3]
    assert [(r["account_number"], r["value"]) for r in res["rows"]] == [
        (k, float(v)) for k, v in top
    ]


async def test_count_without_field_and_empty_result(seeded_kernel, dataset):
    res = await seeded_kernel.features.aggregate_table(
        "trustee", INSTANCE, {"table": "trustee_journal_entries", "function": "COUNT"}
    )
    assert res["rows"][0]["value"] == len(dataset.entries)
    empty = await seeded_kernel.features.query_table(
        "trustee",
        INSTANCE,
        {"table": "trustee_journal_entries", "filters": [{"field": "reference", "value": "NOPE"}]},
    )
    assert empty["rows"] == [] and empty["rowCount"] == 0


async def test_other_instances_are_invisible(seeded_kernel):
    res = await seeded_kernel.features.aggregate_table(
        "trustee", "someone-else", {"table": "trustee_journal_entries", "function": "COUNT"}
    )
    assert res["rows"][0]["value"] == 0


async def test_browse_lists_tables_and_shows_schema_with_samples(seeded_kernel):
    listing = await seeded_kernel.features.browse_table("trustee", INSTANCE, {})
    assert {t["name"] for t in listing["tables"]} == {
        "trustee_accounts",
        "trustee_journal_entries",
        "trustee_journal_lines",
    }
    schema = await seeded_kernel.features.browse_table(
        "trustee", INSTANCE, {"table": "trustee_accounts", "sampleRows": 2}
    )
    types = {f["name"]: f["type"] for f in schema["fields"]}
    assert types["closing_balance"] == "number" and types["period"] == "string"
    assert len(schema["sampleRows"]) == 2
    assert "feature_instance_id" not in schema["sampleRows"][0]


async def test_unknown_names_never_reach_sql(seeded_kernel):
    with pytest.raises(QueryArgumentError):
        await seeded_kernel.features.query_table(
            "trustee", INSTANCE, {"table": "trustee_accounts", "fields": ["feature_instance_id"]}
        )
    with pytest.raises(QueryArgumentError):
        await seeded_kernel.features.query_table("trustee", INSTANCE, {"table": "pg_user"})


async def test_real_query_failure_raises_database_query_error(seeded_kernel):
    # Without the validator a SUM over a text column reaches PostgreSQL, which refuses it.
    with pytest.raises(DatabaseQueryError):
        await seeded_kernel.features.aggregate_table(
            "trustee",
            INSTANCE,
            {"table": "trustee_journal_lines", "function": "SUM", "field": "cost_center"},
        )


async def test_tool_results_are_json_and_failures_are_values(seeded_kernel):
    tools = {
        t.name: t for t in seeded_kernel.features.table_tools("trustee", INSTANCE, validate=False)
    }
    agg = tools["aggregateTable"]
    ok = await agg.handler(
        agg.args_model.model_validate(
            {"table": "trustee_journal_entries", "function": "COUNT", "field": "id"}
        ),
        None,
    )
    assert ok.success and json.loads(ok.content)["rows"][0]["value"] > 0
    bad = await agg.handler(
        agg.args_model.model_validate(
            {"table": "trustee_journal_lines", "function": "SUM", "field": "cost_center"}
        ),
        None,
    )
    assert not bad.success and "database error" in bad.error and bad.error_details is None
