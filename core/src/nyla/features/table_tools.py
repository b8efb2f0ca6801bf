"""The three tools of the feature data agent, bound to one feature instance."""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Callable
from typing import Any, Protocol

from pydantic import BaseModel

from nyla.errors import DatabaseQueryError
from nyla.features.arguments import AggregateArgs, BrowseArgs, QueryArgs
from nyla.features.sql import QueryArgumentError
from nyla.features.validator import QueryValidator
from nyla.models.tools import Tool, ToolContext, ToolResult

log = logging.getLogger(__name__)

CallHook = Callable[[str, dict[str, Any], ToolResult], None]


class TableAccess(Protocol):
    """The three reads the table tools run (:class:`~nyla.features.service.FeatureService`
    is one)."""

    async def browse_table(
        self, code: str, instance_id: str, args: BrowseArgs | dict[str, Any]
    ) -> dict[str, Any]: ...

    async def query_table(
        self, code: str, instance_id: str, args: QueryArgs | dict[str, Any]
    ) -> dict[str, Any]: ...

    async def aggregate_table(
        self, code: str, instance_id: str, args: AggregateArgs | dict[str, Any]
    ) -> dict[str, Any]: ...


BROWSE_DESCRIPTION = (
    "List the feature's tables (no arguments), or show one table's fields with types and "
    "descriptions plus a few sample rows."
)
QUERY_DESCRIPTION = (
    "Read rows of a table. filters: [{field, op, value}] combined with AND; op is one of eq, "
    "ne, lt, lte, gt, gte, between ([from, to]), like, ilike, not_like, in, not_in, is_null, "
    "not_null. Optional fields (columns to return), orderBy [{field, direction}], limit, offset."
)
AGGREGATE_DESCRIPTION = (
    "Compute SUM, COUNT, AVG, MIN or MAX of a field over the rows matching filters, optionally "
    "per groupBy fields; the result column is 'value' (orderBy may use it). Never SUM or AVG "
    "fields that are already balances or totals."
)


def build_table_tools(
    service: TableAccess,
    code: str,
    instance_id: str,
    *,
    validator: QueryValidator | None,
    on_call: CallHook | None = None,
) -> list[Tool]:
    """Tools over ``service`` (a :class:`~nyla.features.service.FeatureService`) for one
    instance. With a ``validator`` every call is checked before the database; without it
    (eval baseline) arguments go straight to the (still parameterised) SQL builder."""

    def make(name: str, run: Callable[[str, Any], Any]) -> Callable[..., Any]:
        async def handler(args: BaseModel, ctx: ToolContext) -> ToolResult:
            raw = args.model_dump(mode="json", by_alias=True)
            result = validator.validate(name, args) if validator is not None else None
            if result is None:
                result = await _execute(run, instance_id, args)
            if on_call is not None:
                on_call(name, raw, result)
            return result

        return handler

    spec: list[tuple[str, str, type[BaseModel], Callable[..., Any]]] = [
        ("browseTable", BROWSE_DESCRIPTION, BrowseArgs, service.browse_table),
        ("queryTable", QUERY_DESCRIPTION, QueryArgs, service.query_table),
        ("aggregateTable", AGGREGATE_DESCRIPTION, AggregateArgs, service.aggregate_table),
    ]
    return [
        Tool.from_model(
            name, description, model, make(name, functools.partial(method, code)), read_only=True
        )
        for name, description, model, method in spec
    ]


async def _execute(run: Callable[[str, Any], Any], instance_id: str, args: BaseModel) -> ToolResult:
    """Run one call; argument and database problems become failed results (no repair
    details: those come only from the validator)."""
    try:
        data = await run(instance_id, args)
    except QueryArgumentError as exc:
        return ToolResult(success=False, error=f"invalid query: {exc}")
    except DatabaseQueryError as exc:
        # the database's own message (SQL, internals) is for the log, not for the model
        log.warning("table tool query failed: %s", exc)
        return ToolResult(
            success=False,
            error="database error: the database could not run this query; check the fields "
            "and values against browseTable",
        )
    return ToolResult.ok(content=json.dumps(data, ensure_ascii=False), data=data)
