"""The three SharePoint tools: ``findSharePointSites``, ``searchSharePoint``,
``readSharePointFile``. They speak the connector protocol (search, browse, download) of the
user's ``msft`` connection, reached through the kernel; paths follow that connector's
grammar (``/sites/<site>/<library>/<folder>``)."""

from __future__ import annotations

from pydantic import Field

from nyla.sdk import (
    ConnectionArgs,
    ConnectionSession,
    Tool,
    ToolContext,
    ToolResult,
    connection_field,
    save_download,
    with_connection,
)
from nyla.sdk.connectors import inline_line, inline_listing

#: the largest document read into the user's files
MAX_FILE_BYTES = 50 * 1024 * 1024
#: libraries listed per site, sites whose libraries are listed
MAX_SITES_WITH_LIBRARIES = 5
INLINE_TEXT_CHARS = 8_000
_TEXT_MIMES = ("text/", "application/json", "application/xml", "application/csv")


class _Args(ConnectionArgs):
    connection_id: str | None = connection_field("Microsoft 365")


class FindSitesArgs(_Args):
    """Arguments of ``findSharePointSites``."""

    query: str = Field(default="", description="Words of the site name; empty: every site.")
    include_libraries: bool = Field(default=True, alias="includeLibraries")


class SearchArgs(_Args):
    """Arguments of ``searchSharePoint``."""

    query: str = Field(min_length=1, description="Words to find in document names and content.")
    path: str = Field(
        default="",
        description="Library or folder path from findSharePointSites "
        "(/sites/<site>/<library>/<folder>); empty: every site the user can read.",
    )
    cursor: str | None = Field(default=None, description="From a previous result: next page.")


class ReadArgs(_Args):
    """Arguments of ``readSharePointFile``."""

    item_id: str = Field(alias="itemId", description="A document id (file:…) from a search.")


#: the handlers run on the user's Microsoft 365 connection (a service that can search)
on_msft = with_connection("msft", need="search", label="Microsoft 365")


@on_msft
async def find_sites(args: FindSitesArgs, ctx: ToolContext, s: ConnectionSession) -> ToolResult:
    """Sites (by name) and their document libraries, with the paths to search in."""
    if args.query.strip():
        page = await s.adapter.search(s, args.query, "/sites")
    else:
        page = await s.adapter.browse(s, "/sites")
    lines, data = [], []
    for n, site in enumerate(page.items):
        lines.append(inline_line(site))
        libraries = []
        if args.include_libraries and n < MAX_SITES_WITH_LIBRARIES:
            libraries = (await s.adapter.browse(s, site.path)).items
            lines += [f"    {inline_line(lib)}" for lib in libraries]
        data.append({"site": site.to_wire(), "libraries": [lib.to_wire() for lib in libraries]})
    if not lines:
        return ToolResult.ok("no SharePoint site matches", data={"sites": []})
    lines.append("(search a library with searchSharePoint(path=<its path>))")
    return ToolResult.ok("\n".join(lines), data={"sites": data, "cursor": page.cursor})


@on_msft
async def search_documents(args: SearchArgs, ctx: ToolContext, s: ConnectionSession) -> ToolResult:
    """Documents by name and content below ``path`` (or everywhere), one line each."""
    path = args.path.strip()
    if path and not path.startswith(("/sites/", "/drives/", "/drive")):
        return ToolResult.fail(
            f"{path!r} is not a SharePoint or OneDrive path",
            "INVALID_VALUE",
            field="path",
            suggestion="take a library path from findSharePointSites, or leave path empty",
        )
    page = await s.adapter.search(s, args.query, path, args.cursor)
    data = {
        "connectionId": s.connection.id,
        "items": [i.to_wire() for i in page.items],
        "cursor": page.cursor,
    }
    return ToolResult.ok(inline_listing(page.items, page.cursor), data=data)


@on_msft
async def read_file(args: ReadArgs, ctx: ToolContext, s: ConnectionSession) -> ToolResult:
    """Download a document into the user's files (its size is checked first); a text
    document's content comes back inline."""
    if not args.item_id.startswith("file:"):
        return ToolResult.fail(
            f"{args.item_id!r} is not a document id",
            "INVALID_VALUE",
            field="itemId",
            suggestion="use an id starting with file: from searchSharePoint",
        )
    got = await s.adapter.download(s, args.item_id, MAX_FILE_BYTES)
    try:
        saved = await save_download(ctx, s, got)
    except ValueError as exc:
        return ToolResult.fail(f"cannot store {got.name}: {exc}", "INVALID_VALUE")
    lines = [inline_line(got.item), f"saved as file {saved.id} ({saved.name})"]
    if saved.neutralize:
        lines.append("(personal data is neutralized when this file is indexed)")
    if got.mime.startswith(_TEXT_MIMES):
        text = got.content.decode("utf-8", "replace")
        cut = text[:INLINE_TEXT_CHARS] + (" [...]" if len(text) > INLINE_TEXT_CHARS else "")
        lines += ["", cut]
    else:
        lines.append("open it with readFile(fileId) for its text")
    data = {"fileId": saved.id, "item": got.item.to_wire(), "neutralize": saved.neutralize}
    return ToolResult.ok("\n".join(lines), data=data)


def sharepoint_tools() -> list[Tool]:
    """The three tools."""
    return [
        Tool.from_model(
            "findSharePointSites",
            "Find SharePoint sites by name and list their document libraries with the paths "
            "to search in.",
            FindSitesArgs,
            find_sites,
            read_only=True,
            timeout_s=60,
        ),
        Tool.from_model(
            "searchSharePoint",
            "Search SharePoint / OneDrive documents by name and content on the server, below "
            "a library or folder path or everywhere. One line per document with path, size, "
            "last change and author. Search before reading.",
            SearchArgs,
            search_documents,
            read_only=True,
            timeout_s=60,
        ),
        Tool.from_model(
            "readSharePointFile",
            "Read one document: it is saved into the user's files (under the data source's "
            "neutralization and scope); text comes back inline.",
            ReadArgs,
            read_file,
            read_only=False,
            timeout_s=120,
        ),
    ]
