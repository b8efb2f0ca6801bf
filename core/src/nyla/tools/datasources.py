"""The ``datasources`` toolbox (on by default): the user's own data in external services.

The seeds' six tools — ``listConnections``, ``browseDataSource``, ``searchDataSource``
(primary: the service's own server-side search), ``downloadFromDataSource`` (through the file
bridge, inheriting the data source's ``neutralize`` and ``scope``), ``uploadToExternal`` and
``sendMail`` (writes: barriers the before-tool-call policy sees) — plus ``getDataSourceItem``
(one item's full metadata) and ``listDataSources`` (the connected folders and whether they are
indexed). Every connection id is checked against the run's user before anything is called.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from typing import Any

from pydantic import Field

from nyla.connections.base import capabilities
from nyla.connections.errors import ConnectorError
from nyla.connections.inline import inline_line, inline_listing
from nyla.connections.redact import redact_paths, sent_values
from nyla.connections.tooling import connector_failure
from nyla.errors import NotFoundError, PermissionDeniedError
from nyla.hookspecs import hookimpl
from nyla.models.datasource import Item, OutgoingMessage
from nyla.models.tool_services import ConnectionSession, ToolConnections
from nyla.models.tools import Tool, Toolbox, ToolContext, ToolResult
from nyla.tools._args import Args, ToolSpec, tools_from

#: bytes ``downloadFromDataSource`` takes at most (the RAG file-size default)
DOWNLOAD_LIMIT = 25 * 1024 * 1024

SEARCH_FIRST_RULE = (
    "The user's own data sources are connected (below). Search first: use searchDataSource "
    "with a precise query in the service's syntax; it runs server-side and returns inline "
    "metadata (dates, senders, status ...) that often answers without a download. Use "
    "browseDataSource only to look into one folder, and download only the items you need."
)


def item_data(item: Item) -> dict[str, Any]:
    """The item's metadata block as tool data (camelCase, without content)."""
    return item.model_dump(mode="json", by_alias=True, exclude={"content"})


def _fail(exc: Exception, sent: list[str]) -> ToolResult:
    if isinstance(exc, ConnectorError):
        return connector_failure(exc, sent)
    return ToolResult.fail(
        redact_paths(str(exc), keep=sent),
        "NOT_FOUND",
        field="connectionId",
        suggestion="use listConnections for ids",
    )


def guarded(
    fn: Callable[[Any, ToolContext], Awaitable[ToolResult]],
) -> Callable[[Any, ToolContext], Awaitable[ToolResult]]:
    """Connector and ownership errors become error values the model can act on."""

    async def wrapper(args: Any, ctx: ToolContext) -> ToolResult:
        try:
            return await fn(args, ctx)
        except (ConnectorError, NotFoundError, PermissionDeniedError) as exc:
            return _fail(exc, sent_values(args))
        except ValueError as exc:
            return ToolResult.fail(redact_paths(str(exc), keep=sent_values(args)), "INVALID_VALUE")

    wrapper.__name__ = fn.__name__
    wrapper.__doc__ = fn.__doc__
    return wrapper


def _open(args: ConnectionArgs, ctx: ToolContext) -> AbstractAsyncContextManager[ConnectionSession]:
    return ctx.services.connections.open(args.connection_id, user_id=ctx.run.user_id)


def _need(session: ConnectionSession, capability: str) -> ToolResult | None:
    if capability in capabilities(session.adapter):
        return None
    return ToolResult.fail(
        f"{session.connection.service} cannot {capability}",
        "NOT_SUPPORTED",
        field="connectionId",
        suggestion="listConnections shows what each connection can do",
    )


# ---- reading ----------------------------------------------------------------------------


class NoArgs(Args):
    pass


@guarded
async def list_connections(args: NoArgs, ctx: ToolContext) -> ToolResult:
    service = ctx.services.connections
    rows = await service.list(ctx.run.user_id)
    if not rows:
        return ToolResult.ok("no connections: the user has not connected any service", data=[])
    data, lines = [], []
    for c in rows:
        adapter = service.adapters.get(c.service)
        caps = sorted(capabilities(adapter)) if adapter else []
        data.append({"connectionId": c.id, "service": c.service, "label": c.label,
                     "account": c.account, "status": c.status, "can": caps})  # fmt: skip
        lines.append(f"- {c.label} ({c.service}, {c.account or 'no account'}) id {c.id}, "
                     f"status {c.status}, can: {', '.join(caps) or 'nothing installed'}")  # fmt: skip
    return ToolResult.ok(f"{len(rows)} connections:\n" + "\n".join(lines), data=data)


class ConnectionArgs(Args):
    connection_id: str = Field(description="Id of the connection (listConnections).")


class SearchArgs(ConnectionArgs):
    query: str = Field(min_length=1, description="Query in the service's own syntax.")
    scope: str = Field("", description="Folder, label or project to search in ('' = all).")
    cursor: str | None = Field(None, description="Cursor of the previous page, for more.")


@guarded
async def search_data_source(args: SearchArgs, ctx: ToolContext) -> ToolResult:
    async with _open(args, ctx) as session:
        if (denied := _need(session, "search")) is not None:
            return denied
        page = await session.adapter.search(session, args.query, args.scope, args.cursor)
    return ToolResult.ok(
        f"results for {args.query!r}:\n" + inline_listing(page.items, page.cursor),
        data={"items": [item_data(i) for i in page.items], "cursor": page.cursor},
    )


class BrowseArgs(ConnectionArgs):
    path: str = Field("", description="Folder to list ('' = the root).")
    cursor: str | None = Field(None, description="Cursor of the previous page, for more.")


@guarded
async def browse_data_source(args: BrowseArgs, ctx: ToolContext) -> ToolResult:
    async with _open(args, ctx) as session:
        if (denied := _need(session, "browse")) is not None:
            return denied
        page = await session.adapter.browse(session, args.path, args.cursor)
    return ToolResult.ok(
        f"items in {args.path or '/'}:\n" + inline_listing(page.items, page.cursor),
        data={"items": [item_data(i) for i in page.items], "cursor": page.cursor},
    )


class ItemArgs(ConnectionArgs):
    item_id: str = Field(description="Id of the item (from search or browse results).")


@guarded
async def get_data_source_item(args: ItemArgs, ctx: ToolContext) -> ToolResult:
    async with _open(args, ctx) as session:
        if (denied := _need(session, "item")) is not None:
            return denied
        item = await session.adapter.item(session, args.item_id)
    extra = "\n".join(f"  {k}: {v}" for k, v in item.extra.items())
    return ToolResult.ok(inline_line(item) + (f"\n{extra}" if extra else ""), data=item_data(item))


@guarded
async def list_data_sources(args: ConnectionArgs, ctx: ToolContext) -> ToolResult:
    await ctx.services.connections.get(args.connection_id, user_id=ctx.run.user_id)
    rows = await ctx.services.knowledge.data_sources(args.connection_id)
    if not rows:
        return ToolResult.ok("no folders of this connection are set up as data sources", data=[])
    lines = [
        f"- {r.path} (id {r.id}) indexed: {'yes' if r.rag_index_effective else 'no'}" for r in rows
    ]
    return ToolResult.ok("\n".join(lines), data=[r.to_wire() for r in rows])


@guarded
async def download_from_data_source(args: ItemArgs, ctx: ToolContext) -> ToolResult:
    async with _open(args, ctx) as session:
        if (denied := _need(session, "download")) is not None:
            return denied
        got = await session.adapter.download(session, args.item_id, max_bytes=DOWNLOAD_LIMIT)
        service = session.connection.service
    from nyla.tools.datasource_files import store_download

    return await store_download(ctx, args.connection_id, service, got)


# ---- writing (barriers) -----------------------------------------------------------------


class UploadArgs(ConnectionArgs):
    file_id: str = Field(description="Id of the workspace file to upload.")
    path: str = Field("", description="Target folder in the service ('' = the root).")
    name: str | None = Field(None, description="Name in the service (default: the file's).")


@guarded
async def upload_to_external(args: UploadArgs, ctx: ToolContext) -> ToolResult:
    files = ctx.services.files
    item = await files.get(args.file_id, ctx.run)
    if item is None:
        return ToolResult.fail(f"no file {args.file_id!r}", "NOT_FOUND", field="fileId")
    content = await files.read_bytes(args.file_id, ctx.run)
    async with _open(args, ctx) as session:
        if (denied := _need(session, "upload")) is not None:
            return denied
        made = await session.adapter.upload(
            session, args.path, args.name or item.name, content, item.mime_type
        )
    return ToolResult.ok(f"uploaded: {inline_line(made)}", data=item_data(made))


class MailArgs(ConnectionArgs):
    to: list[str] = Field(min_length=1, description="Recipient addresses.")
    subject: str = Field(description="Subject line.")
    body: str = Field(description="Plain-text body.")
    cc: list[str] = Field(default_factory=list, description="Copy recipients.")


@guarded
async def send_mail(args: MailArgs, ctx: ToolContext) -> ToolResult:
    message = OutgoingMessage(to=args.to, subject=args.subject, body=args.body, cc=args.cc)
    async with _open(args, ctx) as session:
        if (denied := _need(session, "send")) is not None:
            return denied
        sent_id = await session.adapter.send(session, message)
    return ToolResult.ok(f"sent to {', '.join(args.to)} (id {sent_id})", data={"id": sent_id})


SEARCH_DESCRIPTION = (
    "PRIMARY tool for the user's external data: runs the service's own server-side search "
    "(scoped, paged) and returns items with inline metadata."
)


def describe_search(tools: list[Tool], adapters: Mapping[str, Any]) -> None:
    """Put each installed service's query syntax into ``searchDataSource``'s description."""
    syntax = [
        f"{service}: {adapter.query_syntax}"
        for service, adapter in sorted(adapters.items())
        if "search" in capabilities(adapter)
    ]
    for tool in tools:
        if tool.name == "searchDataSource":
            tool.description = SEARCH_DESCRIPTION + (
                " Query syntax per service: " + "; ".join(syntax) + "." if syntax else ""
            )


async def data_source_prompt(
    service: ToolConnections, user_id: str, tools: list[Tool]
) -> str | None:
    """The search-first block of the system prompt when the user has connections (and
    the query syntax in ``searchDataSource``'s description); ``None`` without connections."""
    if not any(t.name == "searchDataSource" for t in tools):
        return None
    connections = await service.list(user_id)
    if not connections:
        return None
    describe_search(tools, service.adapters)
    lines = [SEARCH_FIRST_RULE]
    for c in connections:
        adapter = service.adapters.get(c.service)
        syntax = getattr(adapter, "query_syntax", "") if adapter else "(connector not installed)"
        lines.append(f"- {c.label} ({c.service}) connectionId {c.id}, status {c.status}: {syntax}")
    return "\n".join(lines)


def datasource_tools() -> list[Tool]:
    """The toolbox's tools (``searchDataSource``'s description gets each connected
    service's query syntax at run time)."""
    spec: list[ToolSpec] = [
        ("listConnections", "List the user's connections to external services (mail, "
         "calendars, drives, task tools) with what each can do.", NoArgs, list_connections, True),
        ("searchDataSource", SEARCH_DESCRIPTION, SearchArgs, search_data_source, True),
        ("browseDataSource", "List one folder of a connection (a directory listing, not a "
         "search; for mail/calendar folders: the newest items).", BrowseArgs,
         browse_data_source, True),
        ("getDataSourceItem", "Full metadata of one item of a connection.", ItemArgs,
         get_data_source_item, True),
        ("listDataSources", "The folders of a connection set up as data sources, and whether "
         "they are indexed into the knowledge store.", ConnectionArgs, list_data_sources, True),
        ("downloadFromDataSource", "Download one item into the workspace (a file you can read; "
         "inherits the data source's neutralization and scope).", ItemArgs,
         download_from_data_source, False),
        ("uploadToExternal", "Upload a workspace file to a connection's folder (a write).",
         UploadArgs, upload_to_external, False),
        ("sendMail", "Send an e-mail through a mail connection (a write).", MailArgs,
         send_mail, False),
    ]  # fmt: skip
    return tools_from(spec)


@hookimpl
def nyla_toolboxes() -> list[Toolbox]:
    """The kernel's ``datasources`` toolbox (always active)."""
    return [
        Toolbox(
            id="datasources",
            label="External data sources",
            description="Search, browse and download the user's data in connected services; "
            "upload files and send mail.",
            tools=datasource_tools(),
            default_active=True,
        )
    ]
