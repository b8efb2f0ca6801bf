"""The pre-execute query validator of the table tools (seeds: ``QueryValidator``).

Every ``queryTable`` / ``aggregateTable`` call is checked before anything reaches the
database. A rejection is a failed :class:`~nyla.models.tools.ToolResult` whose
``error_details`` (``code``, ``field``, ``suggestion``, ``hint``) tells the model how to repair
the call in its next round. With an ontology its constraints are the rules
(``NEVER_AGGREGATE`` replaces the ``*_balance`` / ``*_total`` suffix convention,
``REQUIRES_FILTER_ON`` demands a filter, ``PREFERRED_TABLE_FOR_INTENT`` shapes suggestions).
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from nyla.features.arguments import (
    AGGREGATE_ALIAS,
    AGGREGATE_FUNCTIONS,
    OPERATORS,
    AggregateArgs,
    BrowseArgs,
    Filter,
    QueryArgs,
    normalize_operator,
)
from nyla.features.values import ValueTypeError, coerce_filter_value
from nyla.models.feature import FeatureTable
from nyla.models.ontology import ConstraintKind, OntologyDescriptor
from nyla.models.tools import ToolResult

FIELD_NOT_FOUND = "FIELD_NOT_FOUND"
TABLE_NOT_FOUND = "TABLE_NOT_FOUND"
OPERATOR_INCOMPATIBLE = "OPERATOR_INCOMPATIBLE"
INVALID_AGGREGATE_TARGET = "INVALID_AGGREGATE_TARGET"
ORDER_BY_INVALID = "ORDER_BY_INVALID"
TYPE_MISMATCH = "TYPE_MISMATCH"
REQUIRES_FILTER = "REQUIRES_FILTER"
INVALID_ARGUMENT = "INVALID_ARGUMENT"

ERROR_CODES: tuple[str, ...] = (
    FIELD_NOT_FOUND,
    TABLE_NOT_FOUND,
    OPERATOR_INCOMPATIBLE,
    INVALID_AGGREGATE_TARGET,
    ORDER_BY_INVALID,
    TYPE_MISMATCH,
    REQUIRES_FILTER,
    INVALID_ARGUMENT,
)

NUMERIC_TYPES = frozenset({"integer", "number"})
ORDERED_TYPES = frozenset({"integer", "number", "date", "datetime"})
TEXT_TYPES = frozenset({"string"})
# operator -> field types it applies to (None: every type)
OPERATOR_TYPES: dict[str, frozenset[str] | None] = {
    "eq": None,
    "ne": None,
    "in": None,
    "not_in": None,
    "is_null": None,
    "not_null": None,
    "lt": ORDERED_TYPES,
    "lte": ORDERED_TYPES,
    "gt": ORDERED_TYPES,
    "gte": ORDERED_TYPES,
    "between": ORDERED_TYPES,
    "like": TEXT_TYPES,
    "ilike": TEXT_TYPES,
    "not_like": TEXT_TYPES,
}
_SUFFIX_CONVENTION = re.compile(r"(_balance|_total|Balance|Total)$")


def _norm(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def closest(name: str, candidates: list[str]) -> str | None:
    """The candidate a misspelt ``name`` most likely means: same letters ignoring case and
    separators (``closingBalance`` -> ``closing_balance``), else the closest by edit
    similarity, else one containing it or contained in it."""
    if not candidates:
        return None
    by_norm = {_norm(c): c for c in candidates}
    key = _norm(name)
    if key in by_norm:
        return by_norm[key]
    match = difflib.get_close_matches(key, list(by_norm), n=1, cutoff=0.6)
    if match:
        return by_norm[match[0]]
    contained = [c for n, c in by_norm.items() if key and (key in n or n in key)]
    if contained:
        return min(contained, key=lambda c: abs(len(_norm(c)) - len(key)))
    return None


@dataclass(frozen=True)
class Rejection:
    """Why a call was rejected, with the repair hint for the model."""

    code: str
    message: str
    field: str | None = None
    suggestion: str | None = None
    hint: str | None = None

    def to_result(self) -> ToolResult:
        """The failed tool result the model sees, marked as a validation failure (the agent
        loop's repair counters read ``data["validationFailure"]``)."""
        result = ToolResult.fail(
            self.message,
            code=self.code,
            field=self.field,
            suggestion=self.suggestion,
            hint=self.hint,
        )
        result.data = {"validationFailure": True}
        return result


class QueryValidator:
    """Checks table-tool arguments against the feature's tables (and ontology).

    ``validate(tool_name, args)`` returns ``None`` when the call may run, else a failed
    :class:`ToolResult` with ``error_details``. ``check`` returns the :class:`Rejection`.
    """

    def __init__(
        self, tables: list[FeatureTable], ontology: OntologyDescriptor | None = None
    ) -> None:
        self.tables = {t.name: t for t in tables}
        self.ontology = ontology
        self._types = {t.name: {f.name: f.type for f in t.fields} for t in tables}

    # ---- rules ------------------------------------------------------------------------

    def never_aggregate(self, table: str) -> set[str]:
        """Fields of ``table`` that SUM/AVG must not touch: the ontology's ``NEVER_AGGREGATE``
        constraints when there is an ontology, else the ``*_balance``/``*_total`` convention."""
        if self.ontology is not None:
            return {
                f
                for c in self.ontology.constraints
                if c.kind == ConstraintKind.NEVER_AGGREGATE and c.table == table
                for f in c.fields
            }
        return {f for f in self._types.get(table, {}) if _SUFFIX_CONVENTION.search(f)}

    def required_filters(self, table: str) -> list[tuple[str, str]]:
        """``(field, reason)`` pairs every query/aggregate on ``table`` must filter on."""
        if self.ontology is None:
            return []
        return [
            (f, c.reason)
            for c in self.ontology.constraints
            if c.kind == ConstraintKind.REQUIRES_FILTER_ON and c.table == table
            for f in c.fields
        ]

    def preferred_tables(self, exclude: str) -> list[tuple[str, list[str], str]]:
        """``(table, fields, intent)`` of the ontology's ``PREFERRED_TABLE_FOR_INTENT``
        constraints on other tables than ``exclude``."""
        if self.ontology is None:
            return []
        return [
            (c.table, list(c.fields), c.intent or "")
            for c in self.ontology.constraints
            if c.kind == ConstraintKind.PREFERRED_TABLE_FOR_INTENT and c.table != exclude
        ]

    # ---- entry points -------------------------------------------------------------------

    def validate(self, tool_name: str, args: BaseModel | dict[str, Any]) -> ToolResult | None:
        """``None`` if the call may run, else the failed result with repair hints."""
        rejection = self.check(tool_name, args)
        return None if rejection is None else rejection.to_result()

    def check(self, tool_name: str, args: BaseModel | dict[str, Any]) -> Rejection | None:
        """The first problem of a table-tool call, or ``None``."""
        models: dict[str, type[BaseModel]] = {
            "browseTable": BrowseArgs,
            "queryTable": QueryArgs,
            "aggregateTable": AggregateArgs,
        }
        model = models.get(tool_name)
        if model is None:
            return Rejection(INVALID_ARGUMENT, f"{tool_name} is not a table tool")
        if isinstance(args, dict):
            try:
                args = model.model_validate(args)
            except Exception as exc:
                return Rejection(INVALID_ARGUMENT, f"invalid arguments: {exc}")
        if isinstance(args, BrowseArgs):
            return self._table(args.table) if args.table is not None else None
        if isinstance(args, QueryArgs):
            return self._check_query(args)
        if isinstance(args, AggregateArgs):
            return self._check_aggregate(args)
        return Rejection(INVALID_ARGUMENT, f"unexpected arguments for {tool_name}")

    # ---- checks -------------------------------------------------------------------------

    def _table(self, name: str) -> Rejection | None:
        if name in self.tables:
            return None
        suggestion = closest(name, list(self.tables))
        return Rejection(
            TABLE_NOT_FOUND,
            f"unknown table {name!r}",
            field="table",
            suggestion=suggestion,
            hint=f"tables: {', '.join(self.tables)}; call browseTable to see them",
        )

    def _field(self, table: str, name: str, where: str) -> Rejection | None:
        if name in self._types[table]:
            return None
        suggestion = closest(name, list(self._types[table]))
        return Rejection(
            FIELD_NOT_FOUND,
            f"unknown field {name!r} in {where} of {table}",
            field=name,
            suggestion=suggestion,
            hint=(f"use {suggestion!r}" if suggestion else "no similar field")
            + f"; call browseTable with table={table!r} for the fields and their types",
        )

    def _filters(self, table: str, filters: list[Filter]) -> Rejection | None:
        for f in filters:
            problem = self._field(table, f.field, "filters")
            if problem:
                return problem
            ftype = self._types[table][f.field]
            op = normalize_operator(f.op)
            if op not in OPERATORS:
                return Rejection(
                    OPERATOR_INCOMPATIBLE,
                    f"unknown operator {f.op!r}",
                    field=f.field,
                    suggestion=closest(op, list(OPERATORS)) or "eq",
                    hint=f"operators: {', '.join(OPERATORS)}",
                )
            allowed = OPERATOR_TYPES[op]
            if allowed is not None and ftype not in allowed:
                fitting = [o for o, ts in OPERATOR_TYPES.items() if ts is None or ftype in ts]
                return Rejection(
                    OPERATOR_INCOMPATIBLE,
                    f"operator {op!r} does not apply to {f.field} ({ftype})",
                    field=f.field,
                    suggestion="eq"
                    if op in ("like", "ilike")
                    else ("in" if ftype == "string" else "eq"),
                    hint=f"operators for a {ftype} field: {', '.join(fitting)}",
                )
            try:
                coerce_filter_value(ftype, op, f.value)
            except ValueTypeError as exc:
                return Rejection(
                    TYPE_MISMATCH,
                    f"value for {f.field} ({ftype}): {exc}",
                    field=f.field,
                    suggestion=exc.example,
                    hint=f"{f.field} is a {ftype} field",
                )
        return None

    def _required(self, table: str, filters: list[Filter]) -> Rejection | None:
        present = {f.field for f in filters}
        for field, reason in self.required_filters(table):
            if field not in present:
                example = json.dumps({"field": field, "op": "eq", "value": "..."})
                return Rejection(
                    REQUIRES_FILTER,
                    f"queries on {table} need a filter on {field}",
                    field=field,
                    suggestion=example,
                    hint=reason or f"add a filter on {field}",
                )
        return None

    def _check_query(self, args: QueryArgs) -> Rejection | None:
        problem = self._table(args.table)
        if problem:
            return problem
        for name in args.fields or []:
            problem = self._field(args.table, name, "fields")
            if problem:
                return problem
        problem = self._filters(args.table, args.filters)
        if problem:
            return problem
        for ob in args.order_by:
            if ob.field not in self._types[args.table]:
                return self._order_problem(ob.field, list(self._types[args.table]))
            if ob.direction.lower() not in ("asc", "desc"):
                return Rejection(
                    ORDER_BY_INVALID,
                    f"order direction {ob.direction!r} is neither asc nor desc",
                    field=ob.field,
                    suggestion="desc",
                )
        return self._required(args.table, args.filters)

    def _order_problem(self, name: str, candidates: list[str]) -> Rejection:
        suggestion = closest(name, candidates)
        return Rejection(
            ORDER_BY_INVALID,
            f"cannot order by {name!r}",
            field=name,
            suggestion=suggestion,
            hint=f"order by one of: {', '.join(candidates)}",
        )

    def _check_aggregate(self, args: AggregateArgs) -> Rejection | None:
        problem = self._table(args.table)
        if problem:
            return problem
        types = self._types[args.table]
        function = args.function.strip().upper()
        if function not in AGGREGATE_FUNCTIONS:
            return Rejection(
                INVALID_ARGUMENT,
                f"unknown aggregate function {args.function!r}",
                field="function",
                suggestion=closest(function, list(AGGREGATE_FUNCTIONS)),
                hint=f"functions: {', '.join(AGGREGATE_FUNCTIONS)}",
            )
        if args.field is None or args.field == "*":
            if function != "COUNT":
                return Rejection(
                    INVALID_ARGUMENT,
                    f"{function} needs a field",
                    field="field",
                    hint="only COUNT works without a field",
                )
        else:
            problem = self._field(args.table, args.field, "field")
            if problem:
                return problem
            if function in ("SUM", "AVG"):
                if types[args.field] not in NUMERIC_TYPES:
                    numeric = [n for n, t in types.items() if t in NUMERIC_TYPES]
                    return Rejection(
                        TYPE_MISMATCH,
                        f"{function} needs a numeric field; {args.field} is {types[args.field]}",
                        field=args.field,
                        suggestion=numeric[0] if numeric else None,
                        hint="use COUNT, or pick a numeric field: " + ", ".join(numeric),
                    )
                if args.field in self.never_aggregate(args.table):
                    return self._aggregate_target(args, function)
        for name in args.group_by:
            problem = self._field(args.table, name, "groupBy")
            if problem:
                return problem
        problem = self._filters(args.table, args.filters)
        if problem:
            return problem
        allowed_order = [*args.group_by, AGGREGATE_ALIAS]
        for ob in args.order_by:
            if ob.field not in allowed_order:
                problem = self._order_problem(ob.field, allowed_order)
                if ob.field == args.field or problem.suggestion is None:
                    # ordering by the aggregated field means ordering by the aggregate
                    problem = Rejection(
                        problem.code,
                        problem.message,
                        field=problem.field,
                        suggestion=AGGREGATE_ALIAS,
                        hint=problem.hint,
                    )
                return problem
        return self._required(args.table, args.filters)

    def _aggregate_target(self, args: AggregateArgs, function: str) -> Rejection:
        preferred = self.preferred_tables(exclude=args.table)
        required = [f for f, _ in self.required_filters(args.table)] or ["period"]
        if preferred:
            table, fields, intent = preferred[0]
            suggestion = (
                f"queryTable on {args.table} with a filter on {required[0]} and read "
                f"{args.field} per row; for {intent} use aggregateTable on {table} "
                f"({', '.join(fields)})"
            )
        else:
            suggestion = (
                f"queryTable on {args.table} with a filter on {required[0]} and read "
                f"{args.field} per row"
            )
        return Rejection(
            INVALID_AGGREGATE_TARGET,
            f"{function} on {args.field} is not allowed: it is already an aggregated value",
            field=args.field,
            suggestion=suggestion,
            hint="balances and totals are per period; summing them over periods double-counts",
        )
