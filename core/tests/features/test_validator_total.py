"""The validator is total (issue 12): every reproduction of the held-out campaign is a
validator code with a suggestion, and a property test over the whole argument space of the
table tools shows that no PostgreSQL error and no exception ever reaches the model."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nyla.agent.registry import ToolRegistry
from nyla.features.validator import ERROR_CODES, QueryValidator
from nyla.models.ai import ToolCall
from nyla.models.tools import ToolContext

from .conftest import INSTANCE, trustee

FEATURE = trustee.TrusteeFeature()
TABLES = FEATURE.tables()
VALIDATOR = QueryValidator(TABLES, FEATURE.get_agent_ontology())
ACCOUNTS = "trustee_accounts"
MARCH = {"field": "period", "op": "eq", "value": "2025-03"}
#: codes a registry answers with before the validator (schema problems, repeats)
SCHEMA_CODES = {"INVALID_JSON", "INVALID_TYPE", "INVALID_VALUE", "MISSING_FIELD", "UNKNOWN_FIELD"}


def rejection(args: dict, tool: str = "queryTable"):
    return VALIDATOR.check(tool, args)


@pytest.mark.parametrize("order_by", [5, True, 1.5])
def test_scalar_order_by_is_a_validation_error(order_by):
    from pydantic import ValidationError

    from nyla.features.arguments import QueryArgs

    with pytest.raises(ValidationError):
        QueryArgs.model_validate({"table": ACCOUNTS, "orderBy": order_by})
    found = rejection({"table": ACCOUNTS, "orderBy": order_by})
    assert found is not None and found.code == "INVALID_ARGUMENT"


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("label", "caf\ud800"),
        ("closing_balance", "1E+999999"),
        ("closing_balance", 10**5000),
        ("closing_balance", "-1e-999999"),
        ("label", 10**5000),
    ],
    ids=["surrogate", "huge-exponent", "huge-int", "tiny-exponent", "huge-int-as-text"],
)
def test_values_out_of_range_or_invalid_are_type_mismatches(field, value):
    args = {"table": ACCOUNTS, "filters": [MARCH, {"field": field, "op": "eq", "value": value}]}
    found = rejection(args)
    assert found is not None and found.code == "TYPE_MISMATCH", found
    assert found.field == field and found.hint


@pytest.mark.parametrize("value", ["--5", "²", "9" * 30, 2**64])
def test_integer_fields_reject_odd_digits_without_raising(value):
    from nyla.models.feature import FeatureField, FeatureTable

    table = FeatureTable(name="t", fields=[FeatureField(name="n", type="integer")])
    found = QueryValidator([table]).check(
        "queryTable", {"table": "t", "filters": [{"field": "n", "value": value}]}
    )
    assert found is not None and found.code == "TYPE_MISMATCH", found


def test_offset_is_capped():
    found = rejection({"table": ACCOUNTS, "filters": [MARCH], "offset": 2**63})
    assert found is not None and found.code == "INVALID_ARGUMENT"


# ---- the property test ------------------------------------------------------------------

FIELDS = sorted({f.name for t in TABLES for f in t.fields})
TEXT = st.text(
    alphabet=st.characters(codec=None, exclude_categories=()), max_size=12
) | st.sampled_from(["2025-03", "102%", "\\", "%", "1E+999999", "NaN", "--5", "²", "caf\ud800"])
SCALAR = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | TEXT
)
VALUE = st.recursive(SCALAR, lambda inner: st.lists(inner, max_size=3), max_leaves=5)
FILTER = st.fixed_dictionaries(
    {
        "field": st.sampled_from(FIELDS) | TEXT,
        "op": st.sampled_from(["eq", "ne", "lt", "gte", "between", "like", "in", "is_null", "~"]),
        "value": VALUE,
    }
)
ANY = VALUE | st.dictionaries(TEXT, SCALAR, max_size=2)
ARGS = st.fixed_dictionaries(
    {"table": st.sampled_from([t.name for t in TABLES]) | TEXT},
    optional={
        "filters": st.lists(FILTER, max_size=3) | ANY,
        "fields": st.lists(st.sampled_from(FIELDS) | TEXT, max_size=3) | ANY,
        "orderBy": ANY | st.lists(st.sampled_from(FIELDS).map(lambda f: f + " desc")),
        "limit": st.integers(min_value=-5, max_value=2**64) | ANY,
        "offset": st.integers(min_value=-5, max_value=2**64) | ANY,
        "function": st.sampled_from(["SUM", "COUNT", "AVG", "MIN", "MAX", "MEDIAN"]) | TEXT,
        "field": st.sampled_from(FIELDS) | ANY,
        "groupBy": st.lists(st.sampled_from(FIELDS), max_size=2) | ANY,
        "sampleRows": st.integers(min_value=-3, max_value=2**64) | ANY,
    },
)
TOOL = st.sampled_from(["browseTable", "queryTable", "aggregateTable"])

FIGURES = {"calls": 0, "ok": 0, "rejected": 0}


@pytest.mark.db
@settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)
@given(tool=TOOL, arguments=ARGS)
async def test_no_database_error_or_exception_reaches_the_model(seeded_kernel, tool, arguments):
    tools = seeded_kernel.features.table_tools("trustee", INSTANCE)
    registry = ToolRegistry(tools)
    try:
        raw = json.dumps(arguments)
    except (ValueError, TypeError):
        return  # not JSON a model could send
    done = await registry.dispatch(ToolCall(id="c", name=tool, arguments=raw), ToolContext())
    result = done.result
    FIGURES["calls"] += 1
    if result.success:
        FIGURES["ok"] += 1
        return
    FIGURES["rejected"] += 1
    assert result.error_details is not None, result.error
    assert result.error_details.code in (*ERROR_CODES, *SCHEMA_CODES), result.error
    assert "database" not in (result.error or "").lower(), result.error
    assert result.error_details.suggestion or result.error_details.hint, result.error
