"""The quick check of tool schemas never says yes where the JSON Schema meta-schema says no,
and it says yes for the schemas tools actually declare (so discovery skips the slow check)."""

from __future__ import annotations

from typing import Any, Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from pydantic import BaseModel, Field

from nyla.plugin_answers import check_tool_schema
from nyla.plugin_schema import plainly_valid
from nyla.plugins import PluginHost


def _meta_valid(schema: Any) -> bool:
    return not list(Draft202012Validator(Draft202012Validator.META_SCHEMA).iter_errors(schema))


TYPES = st.sampled_from(["string", "object", "integer", "number", "array", "null", "strin"])
TEXT = st.text(alphabet="ab", max_size=2)
NUMBER = st.integers(-2, 3) | st.floats(-2, 2, allow_nan=False) | st.booleans()
ANY = st.none() | NUMBER | TEXT | st.lists(TEXT, max_size=2)


def _schemas(depth: int) -> st.SearchStrategy[Any]:
    """Schemas built from the quick check's keywords, each value mostly of the right kind and
    sometimes not (a negative count, a boolean for a number, a list for ``items``...)."""
    sub = st.booleans() if depth == 0 else _schemas(depth - 1)
    values: dict[str, st.SearchStrategy[Any]] = {
        "type": TYPES | st.lists(TYPES, max_size=3),
        "title": TEXT | NUMBER,
        "description": TEXT,
        "format": TEXT | NUMBER,
        "default": ANY,
        "const": ANY,
        "enum": st.lists(ANY, max_size=3) | TEXT,
        "examples": st.lists(ANY, max_size=2) | NUMBER,
        "properties": st.dictionaries(TEXT, sub, max_size=2) | st.lists(sub, max_size=1),
        "additionalProperties": sub | TEXT,
        "items": sub | st.lists(sub, max_size=2),
        "required": st.lists(TEXT, max_size=3) | TEXT,
        "anyOf": st.lists(sub, max_size=2) | sub,
        "allOf": st.lists(sub, max_size=2),
        "minimum": NUMBER | TEXT,
        "exclusiveMaximum": NUMBER,
        "multipleOf": NUMBER,
        "minLength": NUMBER,
        "maxItems": NUMBER,
        "uniqueItems": NUMBER,
        "readOnly": NUMBER,
        "$defs": st.dictionaries(TEXT, sub, max_size=2) | TEXT,
        "$ref": TEXT | st.sampled_from(["#/$defs/A", "#/$defs/", "#/definitions/A", "x y"]),
        "pattern": st.sampled_from(["a+", "(", "^#[0-9a-f]{6}$", "[", "(?P<x>a)"]) | NUMBER,
        "prefixItems": st.lists(sub, max_size=1),
    }
    pairs = st.sampled_from(sorted(values)).flatmap(lambda k: st.tuples(st.just(k), values[k]))
    return st.booleans() | st.lists(pairs, max_size=4).map(dict)


@settings(max_examples=400, deadline=None)
@given(_schemas(2))
def test_a_quick_yes_is_a_meta_schema_yes(schema: Any):
    if plainly_valid(schema):
        assert _meta_valid(schema), schema


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "strin"},
        {"type": ["string", "string"]},
        {"type": []},
        {"required": ["a", "a"]},
        {"items": [{"type": "string"}]},
        {"minLength": -1},
        {"minimum": True},
        {"multipleOf": 0},
        {"anyOf": []},
        {"properties": {"a": {"type": 3}}},
        {"additionalProperties": "no"},
        {"pattern": "("},
        {"$ref": 3},
        {"$defs": {"A": {"type": "strin"}}},
    ],
)
def test_an_invalid_schema_is_no_quick_yes_and_the_full_check_names_it(schema: Any):
    assert not plainly_valid(schema)

    class FakeTool:
        name = "fake"
        parameters = {"type": "object", "properties": {"arg": schema}}

    assert any("invalid JSON schema" in p for p in check_tool_schema(FakeTool()))


class Colour(BaseModel):
    hex: str = Field(pattern=r"^#[0-9a-fA-F]{6}$", description="The colour.")


class Series(BaseModel):
    values: list[float] = Field(min_length=1, max_length=100)
    colour: Colour | None = None


class ChartArgs(BaseModel):
    kind: Literal["bar", "line"] = "bar"
    series: list[Series]
    width: int = Field(800, ge=100, le=4000)
    tags: dict[str, str] = {}


def test_what_pydantic_and_the_kernel_tools_declare_gets_the_quick_yes():
    schema = ChartArgs.model_json_schema()
    assert "$defs" in schema  # nested models, Optional, Literal, constraints, a pattern
    assert plainly_valid(schema)
    builtins = PluginHost.discover(builtins=True, strict=False)
    kernel_tools = [
        t
        for t in builtins.tools()
        if builtins.owner_of("tools", t.name)
        in ("nyla.core_tools", "nyla.ai_tools", "nyla.datasource_tools")
    ]
    assert kernel_tools
    assert [t.name for t in kernel_tools if not plainly_valid(t.parameters)] == []
