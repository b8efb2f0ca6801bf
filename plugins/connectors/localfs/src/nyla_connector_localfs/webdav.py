"""A WebDAV share as a data source (service ``webdav``): kDrive, Nextcloud, ownCloud, any
RFC 4918 server. Requests go through nyla's vendor HTTP layer; ``PROPFIND`` answers are
parsed with ``webdav4``.

Settings: ``baseUrl`` (the share's root URL) and ``pageSize``; the token is
``user:password`` (sent as HTTP Basic). Item ids are paths below the root. WebDAV has no
server-side search or change feed: search walks the tree matching names, and every sync is a
full listing (one directory at a time, ``pageSize`` files per page; the checkpoint is the
directory queue and the position in its head), so the walker's sweep finds deletions.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import unquote, urlsplit

from pydantic import Field

from nyla.sdk.connectors import (
    BaseConnector,
    Checkpoint,
    ConnectorContext,
    ConnectorError,
    ConnectorSettings,
    Download,
    HttpPolicy,
    Item,
    ItemPage,
    SyncPage,
    Unlisted,
    VendorAuthError,
    VendorRateLimitError,
    confine_path,
    safe_segment,
    setting,
    url_path,
)

PROPFIND_BODY = (
    '<?xml version="1.0" encoding="utf-8"?>'
    '<d:propfind xmlns:d="DAV:"><d:prop><d:displayname/><d:getcontentlength/>'
    "<d:getcontenttype/><d:getetag/><d:getlastmodified/><d:resourcetype/></d:prop>"
    "</d:propfind>"
)
SEARCH_LIMIT = 25


def _base_path(ctx: ConnectorContext) -> str:
    return urlsplit(ctx.connection.base_url or "/").path.rstrip("/")


def _url(item_id: str, *, folder: bool = False) -> str:
    """The request path relative to the share's root (the client's base URL): the id
    normalised and confined below the root (``UnsafePathError`` for ``..`` and its encoded
    and look-alike forms), each segment percent-encoded."""
    path = "/" + url_path(confine_path("", item_id, service="webdav"))
    return path.rstrip("/") + "/" if folder else path


async def propfind(ctx: ConnectorContext, item_id: str, depth: int) -> list[Item]:
    """The items of a PROPFIND (``depth`` 0: the item itself; 1: it and its children)."""
    response = await ctx.http.request(
        "PROPFIND",
        _url(item_id, folder=bool(depth)),
        content=PROPFIND_BODY,
        headers={"Depth": str(depth), "Content-Type": "application/xml"},
    )
    from webdav4.multistatus import MultiStatusResponse  # imported on use: discovery stays light

    base = _base_path(ctx)
    items = []
    for entry in MultiStatusResponse(response.text).responses.values():
        rel = unquote(entry.path_norm)[len(base) :].strip("/")
        props = entry.properties
        folder = bool(props.collection)
        items.append(
            Item(
                id=rel,
                title=props.display_name or rel.rsplit("/", 1)[-1] or "/",
                kind="folder" if folder else "file",
                path="/" + rel,
                modified=props.modified,
                size=None if folder else props.content_length,
                mime=None if folder else props.content_type,
                version=props.etag,
                depth=len([p for p in rel.split("/") if p]),
            )
        )
    return items


async def children(ctx: ConnectorContext, folder: str) -> list[Item]:
    """The items directly in ``folder`` (sorted by path)."""
    folder = confine_path("", folder, service="webdav")
    return sorted((i for i in await propfind(ctx, folder, 1) if i.id != folder), key=lambda i: i.id)


class WebDavCheckpoint(Checkpoint):
    """Where a listing resumes: the folders still to list (the first one in progress;
    empty: start at the scope) and the offset into the first one's files."""

    queue: list[str] = Field(default_factory=list)
    offset: int = Field(default=0, ge=0)


class WebDavSettings(ConnectorSettings):
    """A WebDAV share: where it is, and how many files a sync page holds."""

    base_url: str = setting(
        kind="url",
        label="Share URL",
        help="the URL of the share's root folder",
        server_only=True,
        min_length=1,
    )
    page_size: int = setting(
        100, kind="number", label="Files per sync page", help="files per sync page", ge=1, le=1000
    )


class WebDav(BaseConnector):
    """A WebDAV share: search (names), browse, download, upload, sync."""

    service = "webdav"
    label = "WebDAV share (kDrive, Nextcloud)"
    query_syntax = "words that must all appear in a file's path (WebDAV has no text search)"
    http_policy = HttpPolicy(
        max_concurrency=4, rate_requests=240, rate_window_s=60, auth_scheme="Basic"
    )
    auth_modes = ("password",)
    settings = WebDavSettings

    async def search(
        self, ctx: ConnectorContext, query: str, scope: str = "", cursor: str | None = None
    ) -> ItemPage:
        words = [w.lower() for w in query.split()]
        hits: list[Item] = []
        queue = [scope.strip("/")]
        while queue:
            for item in await children(ctx, queue.pop(0)):
                if item.is_folder:
                    queue.append(item.id)
                elif all(w in item.id.lower() for w in words):
                    hits.append(item)
        start = int(cursor or 0)
        page = hits[start : start + SEARCH_LIMIT]
        more = start + len(page) < len(hits)
        return ItemPage(items=page, cursor=str(start + len(page)) if more else None)

    async def browse(
        self, ctx: ConnectorContext, path: str = "", cursor: str | None = None
    ) -> ItemPage:
        return ItemPage(items=await children(ctx, path))

    async def item(self, ctx: ConnectorContext, item_id: str) -> Item:
        return (await propfind(ctx, item_id, 0))[0]

    async def download(
        self, ctx: ConnectorContext, item_id: str, max_bytes: int | None = None
    ) -> Download:
        meta = await self.item(ctx, item_id)
        data = await ctx.http.download(_url(item_id), max_bytes=max_bytes)
        return Download(item=meta, content=data, mime=meta.mime or "application/octet-stream")

    async def upload(
        self, ctx: ConnectorContext, path: str, name: str, content: bytes, mime: str
    ) -> Item:
        name = safe_segment(name, what="file name", service=self.service)
        item_id = confine_path("", path, name, service=self.service)
        await ctx.http.request(
            "PUT", _url(item_id), content=content, headers={"Content-Type": mime}
        )
        return await self.item(ctx, item_id)

    async def sync(
        self, ctx: ConnectorContext, scope: str, checkpoint: dict[str, Any] | None
    ) -> AsyncIterator[SyncPage]:
        size = int(ctx.connection.settings.get("pageSize") or 100)
        top = scope.strip("/")
        cp = WebDavCheckpoint.load(checkpoint, scope=top)
        queue, offset = (cp.queue, cp.offset) if cp.queue else ([top], 0)
        while queue:
            entries, unlisted = await _folder(ctx, queue[0], top)
            if offset == 0:
                queue.extend(i.id for i in entries if i.is_folder)
            files = [i for i in entries if not i.is_folder]
            for start in range(offset, max(len(files), 1), size):
                batch = files[start : start + size]
                end = start + len(batch)
                last = end >= len(files) and len(queue) == 1
                rest = queue[1:] if end >= len(files) else queue
                point = WebDavCheckpoint(
                    queue=rest, offset=0 if end >= len(files) else end, scope=top
                )
                yield SyncPage(
                    items=batch,
                    unlisted=unlisted,
                    checkpoint=point.dump(),
                    done=last,
                    full_listing=True,
                )
                if last:
                    return
            queue, offset = queue[1:], 0


#: failures that are the account's or the service's as a whole, not one folder's
_WHOLE = (VendorAuthError, VendorRateLimitError)


async def _folder(
    ctx: ConnectorContext, folder: str, top: str
) -> tuple[list[Item], list[Unlisted]]:
    """A folder's entries for a sync; a subfolder the server will not list (403, gone since
    its parent was read, a server error on it) is reported as unlisted and the sync goes on.
    The scope's own folder, the credentials and the rate budget fail the sync instead."""
    try:
        return await children(ctx, folder), []
    except _WHOLE:
        raise
    except ConnectorError as exc:
        if folder == top:
            raise
        return [], [Unlisted(path="/" + folder, reason=str(exc))]
