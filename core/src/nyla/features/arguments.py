"""Arguments of the table tools (``browseTable``, ``queryTable``, ``aggregateTable``).

Field names, operators and functions are plain strings here on purpose: the
:class:`~nyla.features.validator.QueryValidator` checks them and answers with structured
repair hints, which a JSON-schema enum rejection could not give.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import AliasChoices, Field, field_validator

from nyla.models.base import WireModel

MAX_LIMIT = 500
#: rows a query may skip (PostgreSQL takes a bigint; nobody pages further)
MAX_OFFSET = 1_000_000_000

# Spellings models use for operators -> the canonical operator.
OPERATOR_ALIASES: dict[str, str] = {
    "=": "eq",
    "==": "eq",
    "equals": "eq",
    "!=": "ne",
    "<>": "ne",
    "neq": "ne",
    "<": "lt",
    "<=": "lte",
    ">": "gt",
    ">=": "gte",
    "ge": "gte",
    "le": "lte",
    "not in": "not_in",
    "notin": "not_in",
    "is null": "is_null",
    "isnull": "is_null",
    "is not null": "not_null",
    "notnull": "not_null",
    "is_not_null": "not_null",
    "not like": "not_like",
}
OPERATORS: tuple[str, ...] = (
    "eq",
    "ne",
    "lt",
    "lte",
    "gt",
    "gte",
    "between",
    "like",
    "ilike",
    "not_like",
    "in",
    "not_in",
    "is_null",
    "not_null",
)
AGGREGATE_FUNCTIONS: tuple[str, ...] = ("SUM", "COUNT", "AVG", "MIN", "MAX")
AGGREGATE_ALIAS = "value"


def normalize_operator(op: str) -> str:
    """The canonical name of an operator spelling (unknown spellings come back lowered)."""
    key = op.strip().lower()
    return OPERATOR_ALIASES.get(key, key.replace(" ", "_"))


class Filter(WireModel):
    """One condition: ``field`` ``op`` ``value``. Conditions of a call are combined with AND.

    ``op`` is one of eq, ne, lt, lte, gt, gte, between (value ``[from, to]``), like / ilike /
    not_like (``%`` wildcards), in / not_in (value a list), is_null, not_null.
    """

    field: str = Field(description="A field of the table.")
    op: str = Field(
        default="eq",
        validation_alias=AliasChoices("op", "operator"),
        description="eq, ne, lt, lte, gt, gte, between, like, ilike, not_like, in, not_in, "
        "is_null, not_null",
    )
    value: Any = Field(
        default=None, description="The value; [from, to] for between, a list for in / not_in."
    )


class OrderBy(WireModel):
    """Sort key: a field (for aggregates also ``value``) and ``asc`` or ``desc``."""

    field: str = Field(description="A field (for aggregateTable a groupBy field or 'value').")
    direction: str = Field(default="asc", description="asc or desc")


def _coerce_order_by(value: Any) -> Any:
    """Accept ``"field desc"``, ``["a", "b desc"]`` and ``{"field":..}`` alike."""
    if value is None:
        return []
    if isinstance(value, str | dict):
        value = [value]
    if not isinstance(value, list | tuple):
        raise ValueError(
            'orderBy must be a list like [{"field": "...", "direction": "asc"}] or "field desc"'
        )
    out = []
    for item in value:
        if isinstance(item, str):
            parts = re.split(r"\s+", item.strip())
            direction = parts[1].lower() if len(parts) > 1 else "asc"
            out.append({"field": parts[0], "direction": direction})
        else:
            out.append(item)
    return out


class BrowseArgs(WireModel):
    """``browseTable``: without ``table`` the list of tables; with it the schema (fields with
    types and descriptions) and ``sample_rows`` example rows."""

    table: str | None = Field(default=None, description="A table; omit to list the tables.")
    sample_rows: int = Field(default=3, ge=0, le=20, description="Example rows to show.")


class QueryArgs(WireModel):
    """``queryTable``: rows of ``table`` matching ``filters``, optionally only ``fields``,
    sorted by ``order_by``, paged by ``limit`` / ``offset``."""

    table: str = Field(description="The table to read.")
    filters: list[Filter] = Field(
        default_factory=list, description="Conditions, combined with AND."
    )
    fields: list[str] | None = Field(default=None, description="Fields to return (default all).")
    order_by: list[OrderBy] = Field(default_factory=list, description="Sort keys.")
    limit: int = Field(default=50, ge=1, le=MAX_LIMIT, description="Rows to return (max 500).")
    offset: int = Field(default=0, ge=0, le=MAX_OFFSET, description="Rows to skip (paging).")

    @field_validator("order_by", mode="before")
    @classmethod
    def _order(cls, v: Any) -> Any:
        return _coerce_order_by(v)


class AggregateArgs(WireModel):
    """``aggregateTable``: ``function`` (SUM, COUNT, AVG, MIN, MAX) of ``field`` over the rows
    matching ``filters``, per ``group_by`` group; the result column is called ``value``."""

    table: str = Field(description="The table to aggregate.")
    function: str = Field(description="SUM, COUNT, AVG, MIN or MAX.")
    field: str | None = Field(default=None, description="The field; omit for COUNT of rows.")
    filters: list[Filter] = Field(
        default_factory=list, description="Conditions, combined with AND."
    )
    group_by: list[str] = Field(default_factory=list, description="Fields to group by.")
    order_by: list[OrderBy] = Field(
        default_factory=list, description="Sort keys: groupBy fields or 'value'."
    )
    limit: int = Field(default=100, ge=1, le=MAX_LIMIT, description="Groups to return.")

    @field_validator("order_by", mode="before")
    @classmethod
    def _order(cls, v: Any) -> Any:
        return _coerce_order_by(v)

    @field_validator("group_by", mode="before")
    @classmethod
    def _group(cls, v: Any) -> Any:
        if v is None:
            return []
        return [v] if isinstance(v, str) else v
