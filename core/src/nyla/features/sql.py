"""SQL of the table tools, built only with SQLAlchemy Core from checked arguments.

Names the model sends are used only to *look up* columns among the fields the feature
declares; values are always bound parameters. Nothing a model writes is ever spliced into
SQL text, with or without the validator.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import Select, Table, and_, asc, desc, func, select
from sqlalchemy.sql.elements import ColumnElement

from nyla.features.arguments import (
    AGGREGATE_ALIAS,
    AGGREGATE_FUNCTIONS,
    AggregateArgs,
    Filter,
    QueryArgs,
    normalize_operator,
)
from nyla.features.values import ValueTypeError, coerce_filter_value

INSTANCE_COLUMN = "feature_instance_id"
_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "SUM": func.sum,
    "COUNT": func.count,
    "AVG": func.avg,
    "MIN": func.min,
    "MAX": func.max,
}


class QueryArgumentError(ValueError):
    """Arguments that cannot be turned into a query (only reachable without the validator)."""


class TableBinding:
    """A feature table as the tools use it: the SQLAlchemy table and the declared field types
    (the only names a model may refer to)."""

    def __init__(self, table: Table, types: dict[str, str]) -> None:
        missing = [n for n in (*types, INSTANCE_COLUMN) if n not in table.c]
        if missing:
            raise ValueError(f"table {table.name} lacks declared column(s) {missing}")
        self.table = table
        self.types = types

    def column(self, name: str) -> Any:
        """The column of a declared field; anything else is refused."""
        if name not in self.types:
            raise QueryArgumentError(f"unknown field {name!r} in {self.table.name}")
        return self.table.c[name]

    def condition(self, f: Filter) -> ColumnElement[bool]:
        """One filter as a bound SQL condition."""
        col = self.column(f.field)
        op = normalize_operator(f.op)
        try:
            value = coerce_filter_value(self.types[f.field], op, f.value)
        except ValueTypeError as exc:
            raise QueryArgumentError(f"{f.field}: {exc}") from None
        if op == "eq":
            return col == value
        if op == "ne":
            return col != value
        if op == "lt":
            return col < value
        if op == "lte":
            return col <= value
        if op == "gt":
            return col > value
        if op == "gte":
            return col >= value
        if op == "between":
            return col.between(value[0], value[1])
        if op == "like":
            return col.like(value)
        if op == "ilike":
            return col.ilike(value)
        if op == "not_like":
            return col.not_like(value)
        if op == "in":
            return col.in_(value)
        if op == "not_in":
            return col.not_in(value)
        if op == "is_null":
            return col.is_(None)
        if op == "not_null":
            return col.is_not(None)
        raise QueryArgumentError(f"unknown operator {f.op!r}")

    def where(self, instance_id: str, filters: list[Filter]) -> ColumnElement[bool]:
        """The instance scope AND every filter."""
        conditions = [self.table.c[INSTANCE_COLUMN] == instance_id]
        conditions.extend(self.condition(f) for f in filters)
        return and_(*conditions)

    def default_order(self) -> list[Any]:
        """A stable order (the primary key) so pages and cached results are reproducible."""
        return [c for c in self.table.primary_key.columns if c.name != INSTANCE_COLUMN]


def _direction(column: Any, direction: str) -> Any:
    return desc(column) if direction.lower() == "desc" else asc(column)


def build_query(binding: TableBinding, instance_id: str, args: QueryArgs) -> Select[Any]:
    """``queryTable`` as a SELECT of declared columns."""
    names = args.fields or list(binding.types)
    stmt = select(*[binding.column(n) for n in names]).where(
        binding.where(instance_id, args.filters)
    )
    order = [_direction(binding.column(o.field), o.direction) for o in args.order_by]
    stmt = stmt.order_by(*order, *binding.default_order())
    return stmt.limit(args.limit).offset(args.offset)


def build_aggregate(binding: TableBinding, instance_id: str, args: AggregateArgs) -> Select[Any]:
    """``aggregateTable`` as a SELECT with one aggregate column ``value`` per group."""
    function = args.function.strip().upper()
    if function not in AGGREGATE_FUNCTIONS:
        raise QueryArgumentError(f"unknown aggregate function {args.function!r}")
    if args.field in (None, "*"):
        if function != "COUNT":
            raise QueryArgumentError(f"{function} needs a field")
        target = func.count()
    else:
        target = _FUNCTIONS[function](binding.column(args.field))
    value = target.label(AGGREGATE_ALIAS)
    groups = [binding.column(g) for g in args.group_by]
    stmt = select(*groups, value).where(binding.where(instance_id, args.filters))
    if groups:
        stmt = stmt.group_by(*groups)
    order = []
    for o in args.order_by:
        column = value if o.field == AGGREGATE_ALIAS else binding.column(o.field)
        if o.field != AGGREGATE_ALIAS and o.field not in args.group_by:
            raise QueryArgumentError(f"cannot order aggregates by {o.field!r}")
        order.append(_direction(column, o.direction))
    stmt = stmt.order_by(*order, *groups)
    return stmt.limit(args.limit)


def build_sample(binding: TableBinding, instance_id: str, rows: int) -> Select[Any]:
    """A few example rows for ``browseTable``."""
    columns = [binding.column(n) for n in binding.types]
    return (
        select(*columns)
        .where(binding.table.c[INSTANCE_COLUMN] == instance_id)
        .order_by(*binding.default_order())
        .limit(rows)
    )


def jsonable(value: Any) -> Any:
    """A database value as JSON: Decimal -> float, dates -> ISO text."""
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, datetime | date):
        return value.isoformat()
    return value
