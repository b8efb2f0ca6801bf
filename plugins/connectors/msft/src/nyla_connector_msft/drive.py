"""OneDrive and SharePoint over Graph: sites, document libraries, folder listings, drive
search scoped to a folder, Microsoft Search (``/search/query``) across all of them, downloads
with the size checked first, and ``root/delta`` sync."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any, Self
from urllib.parse import quote

from pydantic import Field

from nyla.sdk.connectors import (
    Checkpoint,
    ConnectorContext,
    Download,
    Item,
    ItemFailure,
    ItemPage,
    SyncPage,
    odata_pages,
)
from nyla_connector_msft import items
from nyla_connector_msft.drive_tree import DriveTree, is_folder, parent_of
from nyla_connector_msft.mail import check_size, delta_get, graph_get, page_of
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


class DriveCheckpoint(Checkpoint):
    """Where a drive sync resumes: the delta link, whether the run is a full listing, the
    drive, and the folder tree the paths come from."""

    link: str | None = None
    full: bool = True
    drive: str | None = None
    tree: DriveTree = Field(default_factory=DriveTree)

    @classmethod
    def load(cls, data: Mapping[str, Any] | None, scope: str | None = None) -> Self:
        """A stored checkpoint; one without a tree (an older nyla's) starts over in full,
        since its items' paths could not be told."""
        if not isinstance(data, Mapping) or "tree" not in data:
            return cls.fresh()
        return super().load(data, scope)


#: why a OneNote notebook is left out (reported once, when the listing first meets it)
ONENOTE = "skipped: a OneNote notebook is not a file (open it in OneNote)"


async def sync_drive(
    ctx: ConnectorContext, target: Target, checkpoint: dict[str, Any] | None
) -> AsyncIterator[SyncPage]:
    """``/drives/{id}/root/delta``, narrowed to the target folder here (Graph has folder
    delta only on personal OneDrive). Paths come from the folder tree the checkpoint keeps
    (:mod:`nyla_connector_msft.drive_tree`); a renamed or moved folder re-lists what is
    below it; ``deleted`` items and files moved out of the folder are tombstones; an item met
    again with the same cTag is skipped."""
    state = DriveCheckpoint.load(checkpoint, scope=target.path)
    full = state.link is None or state.full
    drive = state.drive or await drive_id(ctx, target)
    url = state.link or f"/drives/{seg(drive, 'drive id')}/root/delta"
    seen: set[tuple[str, str | None]] = set()
    async for body in odata_pages(lambda link, query: delta_get(ctx, link, query), url):
        walk = _PageWalk(ctx, target, drive, state.tree, full, seen)
        page = await walk.page(body.get("value", []))
        nxt, delta = body.get("@odata.nextLink"), body.get("@odata.deltaLink")
        state = DriveCheckpoint(
            link=nxt or delta,
            full=bool(nxt) and full,
            drive=drive,
            tree=state.tree,
            scope=target.path,
        )
        page.checkpoint = state.dump()
        page.done, page.full_listing = nxt is None, full
        yield page


class _PageWalk:
    """One delta page turned into a sync page (see :func:`sync_drive`)."""

    def __init__(
        self,
        ctx: ConnectorContext,
        target: Target,
        drive: str,
        tree: DriveTree,
        full: bool,
        seen: set[tuple[str, str | None]],
    ) -> None:
        self.ctx, self.target, self.drive, self.tree = ctx, target, drive, tree
        self.full, self.seen = full, seen
        self.out = SyncPage()
        self.folder_gone = False

    async def page(self, values: list[dict[str, Any]]) -> SyncPage:
        """Folders first (a page may name a folder after its children), then the items."""
        moved: list[str] = []
        for raw in values:
            if "deleted" in raw or "@removed" in raw:
                if self.tree.forget(str(raw["id"])):
                    self.folder_gone = True  # its files may not each come as deleted
                self.out.tombstones.append(f"file:{self.drive}:{raw['id']}")
            elif is_folder(raw):
                if "package" in raw and str(raw["id"]) not in self.tree.folders:
                    self.out.failures.append(ItemFailure(item_id=self._id(raw), reason=ONENOTE))
                if self.tree.observe(raw) and not self.full:
                    moved.append(str(raw["id"]))
        for raw in values:
            if not ("deleted" in raw or "@removed" in raw or "root" in raw):
                await self.take(raw)
        for folder_id in moved:
            async for raw in self._below_folder(folder_id):
                await self.take(raw)
        # the delta names every changed, moved and deleted file, but a deleted folder alone
        self.out.deletions_reported = not self.full and not self.folder_gone
        return self.out

    def _id(self, raw: dict[str, Any]) -> str:
        return f"file:{self.drive}:{raw['id']}"

    async def take(self, raw: dict[str, Any]) -> None:
        """An item of the drive: kept when below the target, a tombstone when a file has
        left it (an incremental run), left out when inside a OneNote notebook."""
        parent = parent_of(raw)
        await self.tree.resolve(self.ctx, self.drive, parent)
        if "package" in raw or self.tree.in_package(parent):
            return
        folder = self.tree.folder_path(parent)
        if folder is None:
            reason = "its folder could not be found in the drive"
            self.out.failures.append(ItemFailure(item_id=self._id(raw), reason=reason))
            return
        item = items.drive_item(raw, self.target.drive_prefix, folder, self.drive)
        if _below(f"{folder}/{raw.get('name') or raw['id']}", self.target):
            if (item.id, item.version) not in self.seen:
                self.seen.add((item.id, item.version))
                self.out.items.append(item)
        elif not self.full and not is_folder(raw):
            self.out.tombstones.append(item.id)

    async def _below_folder(self, folder_id: str) -> AsyncIterator[dict[str, Any]]:
        """Everything below a moved or renamed folder (the delta names only the folder)."""
        queue = [folder_id]
        drive = seg(self.drive, "drive id")
        while queue:
            url = f"/drives/{drive}/items/{seg(queue.pop())}/children"
            async for body in odata_pages(graph_get(self.ctx), url, {"$top": "200"}):
                for raw in body.get("value", []):
                    if is_folder(raw):
                        self.tree.observe(raw)
                        queue.append(str(raw["id"]))
                    yield raw


def _below(relpath: str, target: Target) -> bool:
    return not target.subpath or relpath.startswith("/" + target.subpath.strip("/") + "/")


async def file_ids(ctx: ConnectorContext, target: Target) -> AsyncIterator[list[str]]:
    """Every item id below the target folder, from a fresh delta listing whose paths come
    from ids (raises on any failed page, so an early end never looks complete)."""
    drive = await drive_id(ctx, target)
    tree = DriveTree()
    listed: list[tuple[str, str | None, str]] = []
    url = f"/drives/{seg(drive, 'drive id')}/root/delta"
    query = {"$select": "id,name,parentReference,folder,file,deleted,root,package"}
    async for body in odata_pages(lambda link, params: delta_get(ctx, link, params), url, query):
        for raw in body.get("value", []):
            if "deleted" in raw or "@removed" in raw:
                continue
            if is_folder(raw):
                tree.observe(raw)
            if "root" not in raw and "package" not in raw:
                listed.append((str(raw["id"]), parent_of(raw), str(raw.get("name") or raw["id"])))
    ids = []
    for item_id, parent, name in listed:
        await tree.resolve(ctx, drive, parent)
        folder = tree.folder_path(parent)
        if (
            folder is not None
            and not tree.in_package(parent)
            and _below(f"{folder}/{name}", target)
        ):
            ids.append(f"file:{drive}:{item_id}")
    for start in range(0, max(1, len(ids)), 500):
        yield ids[start : start + 500]
