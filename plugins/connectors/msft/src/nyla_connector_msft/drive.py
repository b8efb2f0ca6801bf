"""OneDrive and SharePoint over Graph: sites, document libraries, folder listings, drive
search scoped to a folder, Microsoft Search (``/search/query``) across all of them, downloads
with the size checked first, and ``root/delta`` sync."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import quote

from nyla.sdk.connectors import ConnectorContext, Download, Item, ItemPage, SyncPage
from nyla_connector_msft import items
from nyla_connector_msft.mail import check_size, delta_get, page_of
from nyla_connector_msft.paths import Target, offset, seg

#: hits per ``/search/query`` page (Graph allows up to 500 for driveItem)
SEARCH_SIZE = 25


async def drive_id(ctx: ConnectorContext, target: Target) -> str:
    """The id of the target's drive (one request for the user's own OneDrive)."""
    if target.drive:
        return target.drive
    raw = await ctx.http.get_json("/me/drive", params={"$select": "id"})
    return str(raw["id"])


async def browse_sites(ctx: ConnectorContext, target: Target, cursor: str | None) -> ItemPage:
    """Every site the user can reach (``/sites?search=*``) or one site's libraries."""
    if target.kind == "sites":
        body = await ctx.http.get_json(
            cursor or "/sites", params=None if cursor else {"search": "*"}
        )
        return page_of(body, items.site_item)
    url = f"/sites/{seg(target.site, 'site id')}/drives"
    body = await ctx.http.get_json(cursor or url)
    return page_of(body, lambda raw: items.library_item(raw, target.site))


async def search_sites(ctx: ConnectorContext, query: str, cursor: str | None) -> ItemPage:
    """Sites by name (``/sites?search=``)."""
    body = await ctx.http.get_json(cursor or "/sites", params=None if cursor else {"search": query})
    return page_of(body, items.site_item)


async def browse_folder(ctx: ConnectorContext, target: Target, cursor: str | None) -> ItemPage:
    """The children of a drive folder."""
    if cursor:
        body = await ctx.http.get_json(cursor)
    else:
        body = await ctx.http.get_json(f"{target.folder_api()}/children", params={"$top": "100"})
    return page_of(body, lambda raw: items.drive_item(raw, target.drive_prefix))


async def search_folder(
    ctx: ConnectorContext, target: Target, query: str, cursor: str | None
) -> ItemPage:
    """``root:/<folder>:/search(q='…')`` (names and content) scoped to the folder."""
    if cursor:
        body = await ctx.http.get_json(cursor)
    else:
        q = query.replace("'", "''")
        body = await ctx.http.get_json(f"{target.folder_api()}/search(q='{quote(q)}')")
    return page_of(body, lambda raw: items.drive_item(raw, target.drive_prefix))


async def search_everywhere(ctx: ConnectorContext, query: str, cursor: str | None) -> ItemPage:
    """Microsoft Search over every drive the user reaches (``POST /search/query``); the
    cursor is the offset of the next page."""
    start = offset(cursor)
    request = {
        "requests": [
            {
                "entityTypes": ["driveItem"],
                "query": {"queryString": query},
                "from": start,
                "size": SEARCH_SIZE,
            }
        ]
    }
    body = (await ctx.http.request("POST", "/search/query", json=request)).json()
    found: list[Item] = []
    more = False
    for answer in body.get("value", []):
        for container in answer.get("hitsContainers", []):
            more = more or bool(container.get("moreResultsAvailable"))
            for hit in container.get("hits", []):
                resource = hit.get("resource") or {}
                if resource.get("id"):
                    item = items.drive_item(resource)
                    if hit.get("summary"):
                        item.content = hit["summary"]
                    found.append(item)
    nxt = f"from:{start + SEARCH_SIZE}" if more else None
    return ItemPage(items=found, cursor=nxt)


async def file_meta(ctx: ConnectorContext, drive: str, item_id: str) -> Item:
    """One driveItem's metadata."""
    url = f"/drives/{seg(drive, 'drive id')}/items/{seg(item_id)}"
    return items.drive_item(await ctx.http.get_json(url))


async def download_file(
    ctx: ConnectorContext, drive: str, item_id: str, max_bytes: int | None
) -> Download:
    """A file's bytes: the listed size is checked first, then the content is streamed under
    the cap (Graph answers ``/content`` with a redirect to a pre-authenticated URL)."""
    meta = await file_meta(ctx, drive, item_id)
    check_size(meta, max_bytes)
    url = f"/drives/{seg(drive, 'drive id')}/items/{seg(item_id)}/content"
    data = await ctx.http.download(url, max_bytes=max_bytes)
    return Download(item=meta, content=data, mime=meta.mime or "application/octet-stream")


def _below(item: Item, target: Target) -> bool:
    base = target.drive_prefix.rstrip("/") + ("/" + target.subpath if target.subpath else "")
    return item.path.startswith(base.rstrip("/") + "/")


async def sync_drive(
    ctx: ConnectorContext, target: Target, checkpoint: dict[str, Any] | None
) -> AsyncIterator[SyncPage]:
    """``/drives/{id}/root/delta`` (Graph has folder delta only on personal OneDrive, so the
    folder is applied here). The deltaLink is the checkpoint; ``deleted`` items are
    tombstones; an item met again with the same cTag is skipped."""
    link = (checkpoint or {}).get("link")
    full = checkpoint is None or bool((checkpoint or {}).get("full"))
    drive = (checkpoint or {}).get("drive") or await drive_id(ctx, target)
    url = link or f"/drives/{seg(drive, 'drive id')}/root/delta"
    seen: set[tuple[str, str | None]] = set()
    while True:
        body = await delta_get(ctx, url)
        page_items, gone = [], []
        for raw in body.get("value", []):
            if "deleted" in raw or "@removed" in raw:
                gone.append(f"file:{drive}:{raw['id']}")
                continue
            if "root" in raw:
                continue
            item = items.drive_item(raw, target.drive_prefix)
            if _below(item, target) and (item.id, item.version) not in seen:
                seen.add((item.id, item.version))
                page_items.append(item)
        nxt, delta = body.get("@odata.nextLink"), body.get("@odata.deltaLink")
        yield SyncPage(
            items=page_items,
            tombstones=gone,
            checkpoint={"link": nxt or delta, "full": bool(nxt) and full, "drive": drive},
            done=nxt is None,
            full_listing=full,
        )
        if nxt is None:
            return
        url = nxt


async def file_ids(ctx: ConnectorContext, target: Target) -> AsyncIterator[list[str]]:
    """Every file id below the target folder, from a fresh delta listing (raises on any
    failed page, so an early end never looks complete)."""
    drive = await drive_id(ctx, target)
    url: str | None = f"/drives/{seg(drive, 'drive id')}/root/delta"
    params: dict[str, str] | None = {"$select": "id,name,parentReference,folder,file,deleted,root"}
    while url:
        body = await delta_get(ctx, url, params)
        ids = []
        for raw in body.get("value", []):
            if "deleted" in raw or "root" in raw:
                continue
            item = items.drive_item(raw, target.drive_prefix)
            if _below(item, target):
                ids.append(item.id)
        yield ids
        url, params = body.get("@odata.nextLink"), None
