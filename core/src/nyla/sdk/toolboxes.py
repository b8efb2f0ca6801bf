"""What a toolbox over a connector shares with every other: the run user's connection opened
for a handler, each connector error as a failure the model can act on, the switch that turns
its writes off, and a download saved into the user's files under its data source's policy.

A tool handler over a connection is written once, without plumbing::

    class ReadArgs(ConnectionArgs):
        connection_id: str | None = connection_field("ClickUp")
        task: str

    @with_connection("clickup", need="read_task")
    async def read_task(args: ReadArgs, ctx: ToolContext, session: ConnectionSession) -> ToolResult:
        detail = await session.adapter.read_task(session, args.task)
        return ToolResult.ok(detail.description)

The decorated handler takes ``(args, ctx)`` like every tool handler
(``Tool.from_model("readClickUpTask", ..., ReadArgs, read_task)``). The connector is reached
through the run's connections (``ctx.services.connections``), never imported, so the toolbox runs over any installed connector
of that service.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Collection
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from nyla.config import config_value
from nyla.connections.base import capabilities
from nyla.connections.errors import ConnectorError
from nyla.connections.mail import mail_capabilities
from nyla.connections.redact import sent_values, server_values
from nyla.connections.tasks import task_capabilities
from nyla.connections.tooling import NoConnection, connector_failure, pick_connection
from nyla.errors import NotFoundError, PermissionDeniedError
from nyla.models.datasource import ConnectionInfo, Download
from nyla.models.files import FileItem, Scope
from nyla.models.tool_services import ConnectionSession, ServiceUnavailableError
from nyla.models.tools import Tool, ToolContext, ToolResult

__all__ = [
    "ConnectionArgs",
    "ConnectionSession",
    "connection_field",
    "has_capability",
    "save_download",
    "switched_off",
    "with_connection",
    "write_barrier",
]

#: the values of a setting that switch a feature off (anything else, or no value, is on)
OFF_VALUES = ("off", "0", "false", "no")


def connection_field(label: str = "") -> Any:
    """The ``connectionId`` argument, described for the model with the service's ``label``
    (``"The ClickUp connection; needed only when the user has several."``)."""
    what = f"The {label} connection" if label else "The connection"
    return Field(
        default=None,
        alias="connectionId",
        description=f"{what}; needed only when the user has several.",
    )


class ConnectionArgs(BaseModel):
    """Base of a connector tool's arguments: unknown fields are refused, and
    ``connectionId`` names one of the user's connections when they have several (the tool
    registry checks that it is the run user's before the handler runs; override the field
    with :func:`connection_field` to name the service)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    connection_id: str | None = connection_field()


A = TypeVar("A", bound=ConnectionArgs)
#: a handler written against an open connection
SessionHandler = Callable[[A, ToolContext, ConnectionSession], Awaitable[ToolResult]]
#: what a tool calls: ``handler(args, ctx)``
ToolHandler = Callable[[A, ToolContext], Awaitable[ToolResult]]


def has_capability(adapter: Any, need: str) -> bool:
    """Whether ``adapter`` implements the capability ``need``: a connector capability
    (``search``, ``download``, ...), a mail one (``search_mail``, ``draft``, ...) or a task
    one (``search_tasks``, ``update_task``, ...)."""
    found = capabilities(adapter) | mail_capabilities(adapter) | task_capabilities(adapter)
    return need in found


def with_connection(
    service: str | Collection[str] | None,
    *,
    need: str | Callable[[Any], str] | None = None,
    label: str | None = None,
) -> Callable[[SessionHandler[A]], ToolHandler[A]]:
    """Decorator: the handler runs on the run user's connection and every failure on the
    way comes back as a result, never as an exception.

    ``service`` is the connector service (or several; ``None``: any) whose connection is
    wanted, ``need`` the capability its adapter must have (or a function of the arguments
    naming it), ``label`` how messages name the service (default: the adapter's label).

    The connection is ``args.connection_id`` or, without one, the user's only suitable one.
    Only the run user's active connections in the run's mandate count, so another user's id
    is answered like an id that does not exist (``INVALID_VALUE``); none at all is
    ``NOT_AVAILABLE``, several without an id ``MISSING_FIELD``, each with the choices in
    the suggestion. A connector error in the handler becomes its code in upper case
    (``NOT_FOUND``, ``FORBIDDEN``, ``RATE_LIMITED``, ``UNSAFE_PATH``, ``NEEDS_RECONSENT``,
    ``TIMEOUT``, ...) with what to do as the suggestion; server paths and the connection's
    server settings are hidden from its message, paths the model sent are kept.
    """

    def decorate(handler: SessionHandler[A]) -> ToolHandler[A]:
        async def run(args: A, ctx: ToolContext) -> ToolResult:
            wanted = need(args) if callable(need) else need
            try:
                conn = await pick_connection(
                    ctx, args.connection_id, _suitable(service, wanted), _label(ctx, service, label)
                )
            except NoConnection as exc:
                return exc.result
            return await _run_on(conn, handler, args, ctx)

        run.__name__ = getattr(handler, "__name__", "handler")
        run.__qualname__ = getattr(handler, "__qualname__", run.__name__)
        run.__doc__ = handler.__doc__
        return run

    return decorate


def _suitable(service: str | Collection[str] | None, need: str | None) -> Callable[[Any], bool]:
    """Whether an adapter serves ``service`` and can do ``need``."""
    services = {service} if isinstance(service, str) else set(service or ())

    def suitable(adapter: Any) -> bool:
        if services and getattr(adapter, "service", None) not in services:
            return False
        return need is None or has_capability(adapter, need)

    return suitable


def _label(ctx: ToolContext, service: str | Collection[str] | None, label: str | None) -> str:
    """How messages name the service: ``label``, else the adapter's label."""
    if label:
        return label
    if isinstance(service, str):
        try:
            adapter = ctx.services.connections.adapters.get(service)
        except ServiceUnavailableError:
            adapter = None
        return str(getattr(adapter, "label", "") or service)
    return "suitable"


async def _run_on(
    conn: ConnectionInfo, handler: SessionHandler[A], args: A, ctx: ToolContext
) -> ToolResult:
    """``handler`` on an open session of ``conn``, its connector errors as results."""
    connections = ctx.services.connections
    adapter = connections.adapters.get(conn.service)
    hidden = server_values(adapter, conn.settings)
    try:
        async with contextlib.AsyncExitStack() as stack:
            try:
                opened = connections.open(conn.id, user_id=ctx.run.user_id)
                session = await stack.enter_async_context(opened)
            except (NotFoundError, PermissionDeniedError):  # removed since it was picked
                return ToolResult.fail(
                    f"connection {conn.id!r} not found",
                    "NOT_FOUND",
                    field="connectionId",
                    suggestion="pass the id of one of the user's connections, or none",
                )
            return await handler(args, ctx, session)
    except ConnectorError as exc:
        return connector_failure(exc, sent_values(args), hidden)


def switched_off(setting: str) -> bool:
    """Whether the setting ``setting`` is ``off``, ``0``, ``false`` or ``no`` (unset: on)."""
    return (config_value(setting) or "on").strip().lower() in OFF_VALUES


BeforeToolCall = Callable[[Tool, dict[str, Any], ToolContext], ToolResult | None]


def write_barrier(
    setting: str, tools: Collection[str], what: str, suggestion: str
) -> BeforeToolCall:
    """A ``nyla_before_tool_call`` policy: while ``setting`` is switched off
    (:func:`switched_off`), every call of one of ``tools`` is denied (``DENIED``: "``what``
    is switched off here", with ``suggestion``); everything else passes (``None``)."""
    names = frozenset(tools)

    def barrier(tool: Tool, arguments: dict[str, Any], context: ToolContext) -> ToolResult | None:
        if tool.name not in names or not switched_off(setting):
            return None
        return ToolResult.fail(
            f"{what} is switched off here ({setting}=off)", "DENIED", suggestion=suggestion
        )

    return barrier


async def save_download(ctx: ToolContext, session: ConnectionSession, got: Download) -> FileItem:
    """Save ``got`` into the run user's files under the policy of the data source that
    covers its path (``neutralize``, ``scope``, and the data source it belongs to), as a
    download through the ``datasources`` tools would be; returns the saved file item
    (``id``, ``name``, ``neutralize``, ...). A name or content the file store refuses
    raises ``ValueError``."""
    resolve = ctx.services.knowledge.resolve_policy
    path = got.item.path or "/"
    neutralize = await resolve(session.connection.id, path, "neutralize")
    scope = await resolve(session.connection.id, path, "scope")
    return await ctx.services.files.save(
        got.name,
        got.content,
        ctx.run,
        mime_type=got.mime,
        neutralize=bool(neutralize.value),
        scope=Scope(scope.value) if scope.value else Scope.PERSONAL,
        data_source_id=neutralize.source_id or scope.source_id,
    )
