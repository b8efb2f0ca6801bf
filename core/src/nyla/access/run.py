"""Service access inside an agent run: what the run's caller lacks is read once when the run
is prepared (:func:`run_denials`) and carried on its context; a tool that needs one of those
services is refused before its handler runs (:func:`tool_refusal`, called by the tool
registry), with the permission named.

What a tool needs: ``service.connector.<name>`` for each service its toolbox requires
(``Toolbox.connection_services``) and for the connection (or data source) it names by id;
``service.knowledge`` for the tools that read the knowledge store (:data:`KNOWLEDGE_TOOLS`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from nyla.access.permissions import (
    AGENT,
    CONNECTOR,
    KNOWLEDGE,
    ServiceAccessDenied,
    connector,
    label,
)
from nyla.access.service import subject_of
from nyla.models.tools import ToolContext, ToolResult

if TYPE_CHECKING:
    from nyla.access.service import ServiceAccess
    from nyla.db import Database
    from nyla.models.agent import RunContext

#: tools that read the knowledge store's index (the indexed sections of a file)
KNOWLEDGE_TOOLS = frozenset({"readSection"})
#: argument names that carry the id of a connection / of a data source
_CONNECTION_ARGS = ("connection_id", "connectionId")
_DATA_SOURCE_ARGS = ("data_source_id", "dataSourceId", "data_source_ids", "dataSourceIds")


async def run_denials(
    access: ServiceAccess, context: RunContext, connector_services: Iterable[str]
) -> list[str]:
    """The permissions the run's caller lacks (with those the context already denies);
    raises :class:`ServiceAccessDenied` when it lacks ``service.agent``."""
    from nyla.access.service import service_permissions

    grants = await access.grants(subject_of(context))
    grants.check(AGENT)
    denied = set(context.denied_services)
    denied.update(grants.denied(service_permissions(connector_services)))
    return sorted(denied)


def knowledge_allowed(context: RunContext) -> bool:
    """Whether the run may use the knowledge store (its context block, round memory)."""
    return KNOWLEDGE not in context.denied_services


def _refused(tool_name: str, permission: str, context: RunContext) -> ToolResult:
    error = ServiceAccessDenied(permission, subject_of(context))
    return ToolResult.fail(
        f"{tool_name}: {error}",
        "PERMISSION_DENIED",
        field=permission,
        suggestion=f"answer without tools that {label(permission)}",
    )


def _static_needs(tool: Any, ctx: ToolContext) -> list[str]:
    """Permissions a tool needs by what it is (its toolbox's connections, knowledge)."""
    needs = [KNOWLEDGE] if tool.name in KNOWLEDGE_TOOLS else []
    toolboxes = getattr(ctx.toolboxes, "toolboxes", None) or {}
    toolbox = toolboxes.get(getattr(tool, "toolbox", None))
    for service in getattr(toolbox, "connection_services", None) or ():
        needs.append(connector(service))
    return needs


def _arg_ids(args: BaseModel, names: tuple[str, ...]) -> list[str]:
    ids: list[str] = []
    for name in names:
        value = getattr(args, name, None)
        if isinstance(value, str):
            ids.append(value)
        elif isinstance(value, list | tuple):
            ids.extend(str(v) for v in value if v is not None)
    return ids


async def _connection_services(args: BaseModel, db: Database | None) -> list[str]:
    """The services of the connections (and data sources) ``args`` names by id."""
    connections = _arg_ids(args, _CONNECTION_ARGS)
    sources = _arg_ids(args, _DATA_SOURCE_ARGS)
    if db is None or not (connections or sources):
        return []
    from sqlalchemy import select

    from nyla.tables.knowledge import DataSource, UserConnection

    async with db.read_session() as s:
        services: set[str] = set()
        if connections:
            query = select(UserConnection.service).where(UserConnection.id.in_(connections))
            services.update((await s.scalars(query)).all())
        if sources:
            query = (
                select(UserConnection.service)
                .join(DataSource, DataSource.connection_id == UserConnection.id)
                .where(DataSource.id.in_(sources))
            )
            services.update((await s.scalars(query)).all())
    return sorted(services)


async def tool_refusal(
    tool: Any, args: BaseModel, ctx: ToolContext, db: Database | None
) -> ToolResult | None:
    """``None`` when the run's caller may use what ``tool`` needs, else a
    ``PERMISSION_DENIED`` result naming the permission (in ``errorDetails.field``). Only
    called for runs with denials (``ctx.run.denied_services``)."""
    denied = set(ctx.run.denied_services)
    for permission in _static_needs(tool, ctx):
        if permission in denied:
            return _refused(tool.name, permission, ctx.run)
    if any(p == CONNECTOR or p.startswith(CONNECTOR + ".") for p in denied):
        for service in await _connection_services(args, db):
            if connector(service) in denied:
                return _refused(tool.name, connector(service), ctx.run)
    return None
