"""What toolboxes over connectors share: finding the run user's connection that can do a
job (through the run's connections, ``ctx.services.connections``, never by importing a
connector), and turning
connector errors into tool results the model can act on."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

from nyla.connections.errors import ConnectorError
from nyla.connections.redact import redact_paths
from nyla.models.datasource import ConnectionInfo
from nyla.models.tool_services import ServiceUnavailableError, ToolConnections
from nyla.models.tools import ToolContext, ToolResult

#: what the model is told to do about each connector error code
SUGGESTIONS = {
    "needs_reconsent": "the user has to connect the account again; tell them",
    "auth_failed": "the account's sign-in failed; tell the user",
    "not_found": "check the id: take it from a search or listing result",
    "forbidden": "the account may not access this item; pick another one",
    "bad_request": "fix the argument the error names",
    "unsafe_path": "use an id or path exactly as a listing or search returned it",
    "rate_limited": "the service is throttling: try again later or narrow the request",
    "timeout": "try again or narrow the request",
    "vendor_unavailable": "the service is unavailable: try again later",
    "too_large": "the item is larger than allowed: search for something smaller",
    "not_supported": "this service cannot do that: use another tool or connection",
    "cursor_expired": "start the listing again without a cursor",
    "egress_refused": "this server may not reach the service's address: tell the user",
    "bad_response": "the service answered something unreadable: try later or tell the user",
}


class NoConnection(Exception):
    """No (or no unambiguous) connection for the job; ``result`` explains it to the model."""

    def __init__(self, result: ToolResult) -> None:
        super().__init__(result.error)
        self.result = result


async def pick_connection(
    ctx: ToolContext,
    connection_id: str | None,
    can: Callable[[Any], bool],
    what: str,
) -> ConnectionInfo:
    """The run user's active connection whose adapter ``can`` do the job: the one named, or
    the only one. Only the user's own connections in the run's mandate (or in none) count, so
    another user's id is answered as an unknown one. Raises :class:`NoConnection` with a
    result for the model otherwise."""
    try:
        service = ctx.services.connections
    except ServiceUnavailableError as exc:
        raise NoConnection(ToolResult.fail(str(exc), "NOT_AVAILABLE")) from None
    mine = [
        c
        for c in await service.list(ctx.run.user_id)
        if c.user_id == ctx.run.user_id
        and c.mandate_id in (None, ctx.run.mandate_id)
        and _usable(service, c, can)
    ]
    if connection_id:
        for conn in mine:
            if conn.id == connection_id:
                return conn
        raise NoConnection(
            ToolResult.fail(
                f"no {what} connection {connection_id!r} for this user",
                "INVALID_VALUE",
                field="connectionId",
                suggestion=_choices(mine, what),
            )
        )
    if len(mine) == 1:
        return mine[0]
    if not mine:
        raise NoConnection(
            ToolResult.fail(
                f"the user has no {what} connection",
                "NOT_AVAILABLE",
                suggestion="ask the user to connect an account (nyla connections add)",
            )
        )
    raise NoConnection(
        ToolResult.fail(
            f"the user has several {what} connections",
            "MISSING_FIELD",
            field="connectionId",
            suggestion=_choices(mine, what),
        )
    )


def _usable(service: ToolConnections, conn: ConnectionInfo, can: Callable[[Any], bool]) -> bool:
    adapter = service.adapters.get(conn.service)
    return conn.status == "active" and adapter is not None and can(adapter)


def _choices(conns: list[ConnectionInfo], what: str) -> str:
    if not conns:
        return f"the user has no {what} connection"
    listed = ", ".join(f"{c.id} ({c.service} {c.account})".strip() for c in conns)
    return f"pass connectionId, one of: {listed}"


def connector_failure(
    exc: ConnectorError, sent: Iterable[str] = (), hidden: Iterable[str] = ()
) -> ToolResult:
    """A connector error as a failed tool result with its code (the error's ``code`` in upper
    case) and what to do; server paths in its message and the values in ``hidden`` (the
    connection's server settings) are hidden, except paths the model sent itself (``sent``)."""
    suggestion = SUGGESTIONS.get(exc.code, "try another request")
    wait = getattr(exc, "retry_after", None)
    if exc.code == "rate_limited" and wait:
        suggestion = (
            f"the service is throttling: try again in {math.ceil(wait)} s or narrow the request"
        )
    return ToolResult.fail(
        redact_paths(str(exc), hidden=hidden, keep=sent), exc.code.upper(), suggestion=suggestion
    )
