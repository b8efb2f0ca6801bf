"""Result caching (TTL and data-version invalidation) and the proof that no argument a model
sends can inject SQL (property test with hostile strings against the real database)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import update

from nyla.errors import DatabaseQueryError
from nyla.features.arguments import AggregateArgs, QueryArgs
from nyla.features.sql import QueryArgumentError, build_aggregate, build_query
from nyla.kernel import Kernel
from nyla.plugins import PluginHost

from .conftest import INSTANCE, trustee

pytestmark = pytest.mark.db

COUNT_LINES = {"table": "trustee_journal_lines", "function": "COUNT", "field": "id"}
CASH_MARCH = {
    "table": "trustee_accounts",
    "filters": [
        {"field": "account_number", "op": "eq", "value": "1000"},
        {"field": "period", "op": "eq", "value": "2025-03"},
    ],
}


class FakeClock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def fresh_kernel(db):
    kernel = Kernel(plugins=PluginHost.from_plugins([trustee], names=["trustee"]), db=db)
    await kernel.features.seed("trustee", INSTANCE)
    return kernel


async def test_repeated_call_is_served_from_cache_until_data_changes(fresh_kernel):
    features = fresh_kernel.features
    first = await features.query_table("trustee", INSTANCE, CASH_MARCH)
    hits = features.cache.hits
    # Change the row behind the cache's back: the cached answer is still served ...
    accounts = trustee.tables.accounts
    async with fresh_kernel.db.session() as s:
        await s.execute(
            update(accounts)
            .where(accounts.c.feature_instance_id == INSTANCE)
            .where(accounts.c.account_number == "1000")
            .where(accounts.c.period == "2025-03")
            .values(closing_balance=4242)
        )
    again = await features.query_table("trustee", INSTANCE, CASH_MARCH)
    assert features.cache.hits == hits + 1
    assert again == first
    # ... until the instance's data version moves.
    await features.feature("trustee").data_provider().touch(INSTANCE)
    fresh = await features.query_table("trustee", INSTANCE, CASH_MARCH)
    assert fresh["rows"][0]["closing_balance"] == 4242.0


async def test_cache_entries_expire_after_five_minutes(fresh_kernel):
    features = fresh_kernel.features
    clock = FakeClock()
    features.cache.clock = clock
    await features.aggregate_table("trustee", INSTANCE, COUNT_LINES)
    clock.now += 299
    await features.aggregate_table("trustee", INSTANCE, COUNT_LINES)
    assert features.cache.hits == 1
    clock.now += 2  # 301 s after storing
    misses = features.cache.misses
    await features.aggregate_table("trustee", INSTANCE, COUNT_LINES)
    assert features.cache.misses == misses + 1


async def test_reseeding_invalidates_and_key_covers_arguments(fresh_kernel):
    features = fresh_kernel.features
    a = await features.aggregate_table("trustee", INSTANCE, COUNT_LINES)
    other = await features.aggregate_table(
        "trustee",
        INSTANCE,
        {**COUNT_LINES, "filters": [{"field": "debit", "op": "gt", "value": 0}]},
    )
    assert other["rows"][0]["value"] < a["rows"][0]["value"]  # different args, different entry
    await features.seed("trustee", INSTANCE, seed=7)
    b = await features.aggregate_table("trustee", INSTANCE, COUNT_LINES)
    assert b["rows"][0]["value"] != a["rows"][0]["value"]


CLASSIC = [
    "'; DROP TABLE trustee_journal_lines; --",
    "1 OR 1=1",
    "' OR '1'='1",
    '" OR ""="',
    "%' OR '1'='1' --",
    "1020'); DELETE FROM trustee_accounts; --",
    "closing_balance) FROM trustee_accounts; --",
    "period; SELECT pg_sleep(10)",
    "\\'; TRUNCATE trustee_instances; --",
    "x\x00y",
    "$$ OR 1=1 $$",
    "ＳＥＬＥＣＴ",
]


def _hostile_strings() -> list[str]:
    found: list[str] = []

    @settings(
        max_examples=40, database=None, derandomize=True, suppress_health_check=list(HealthCheck)
    )
    @given(
        st.text(
            alphabet=st.sampled_from("';\"-%_()*=\\/ \x00abcORDELTSN1$"), min_size=1, max_size=40
        )
    )
    def collect(s: str) -> None:
        found.append(s)

    collect()
    return CLASSIC + found


async def _row_counts(kernel) -> dict[str, int]:
    out = {}
    for table in ("trustee_accounts", "trustee_journal_entries", "trustee_journal_lines"):
        res = await kernel.features.aggregate_table(
            "trustee", INSTANCE, {"table": table, "function": "COUNT"}
        )
        out[table] = res["rows"][0]["value"]
    return out


async def test_hostile_strings_in_any_argument_never_inject(seeded_kernel):
    features = seeded_kernel.features
    validator = features.validator("trustee")
    bindings = features.bindings("trustee")
    before = await _row_counts(seeded_kernel)
    for evil in _hostile_strings():
        calls = [
            # as values: bound parameters, so at most no match
            (
                "queryTable",
                {
                    "table": "trustee_journal_entries",
                    "filters": [{"field": "reference", "op": "eq", "value": evil}],
                },
            ),
            (
                "queryTable",
                {
                    "table": "trustee_journal_entries",
                    "filters": [{"field": "description", "op": "like", "value": evil}],
                },
            ),
            (
                "queryTable",
                {
                    "table": "trustee_journal_entries",
                    "filters": [
                        {"field": "reference", "op": "in", "value": [evil, "RE-2025-0001"]}
                    ],
                },
            ),
            (
                "queryTable",
                {
                    "table": "trustee_journal_lines",
                    "filters": [{"field": "booking_date", "op": "eq", "value": evil}],
                },
            ),
            (
                "queryTable",
                {
                    "table": "trustee_journal_lines",
                    "filters": [{"field": "debit", "op": "gt", "value": evil}],
                },
            ),
            # as names: looked up among declared fields, never spliced
            ("queryTable", {"table": evil}),
            ("queryTable", {"table": "trustee_journal_entries", "fields": [evil]}),
            (
                "queryTable",
                {"table": "trustee_journal_entries", "filters": [{"field": evil, "value": 1}]},
            ),
            (
                "queryTable",
                {
                    "table": "trustee_journal_entries",
                    "filters": [{"field": "reference", "op": evil, "value": "x"}],
                },
            ),
            ("queryTable", {"table": "trustee_journal_entries", "orderBy": [{"field": evil}]}),
            (
                "queryTable",
                {
                    "table": "trustee_journal_entries",
                    "orderBy": [{"field": "reference", "direction": evil}],
                },
            ),
            (
                "aggregateTable",
                {"table": "trustee_journal_lines", "function": evil, "field": "debit"},
            ),
            (
                "aggregateTable",
                {"table": "trustee_journal_lines", "function": "SUM", "field": evil},
            ),
            (
                "aggregateTable",
                {"table": "trustee_journal_lines", "function": "COUNT", "groupBy": [evil]},
            ),
        ]
        with pytest.raises(QueryArgumentError):
            await features.browse_table("trustee", INSTANCE, {"table": evil})
        for tool, raw in calls:
            model = QueryArgs if tool == "queryTable" else AggregateArgs
            args = model.model_validate(raw)
            table = bindings.get(args.table)
            if table is not None:
                try:
                    stmt = (build_query if tool == "queryTable" else build_aggregate)(
                        table, INSTANCE, args
                    )
                except QueryArgumentError:
                    pass
                else:
                    sql = str(stmt.compile())
                    if len(evil) >= 6:  # shorter strings occur in any SQL by chance
                        assert evil not in sql, (raw, sql)
            validator.validate(tool, args)  # never raises, whatever it gets
            run = features.query_table if tool == "queryTable" else features.aggregate_table
            try:
                res = await run("trustee", INSTANCE, args)
            except QueryArgumentError:
                continue
            except DatabaseQueryError as exc:  # pragma: no cover - would mean SQL was altered
                pytest.fail(f"{tool} {raw!r} reached PostgreSQL as SQL: {exc}")
            # Whatever executed found no row through the hostile text.
            if (
                tool == "queryTable"
                and raw["table"] == "trustee_journal_entries"
                and "filters" in raw
            ):
                refs = {r.get("reference") for r in res["rows"]}
                assert refs <= {"RE-2025-0001"}, (raw, refs)
    assert await _row_counts(seeded_kernel) == before
