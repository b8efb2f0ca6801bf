"""kDrive over Infomaniak's REST API (``https://api.infomaniak.com``, API v3; downloads v2).

A directory is named by its id (``/kdrive/<dirId>``; ``/kdrive`` is the root, id 1). Items
below a directory carry the path ``/kdrive/<dirId>/<path below it>``, so a data source on a
directory covers everything its listing returns.

Endpoints (as kDrive's clients call them): ``GET /3/drive/{drive}/files/{dir}/files``
(children, ``cursor``/``limit``), ``GET /3/drive/{drive}/files/{dir}/listing`` and
``…/listing/continue?cursor=`` (the whole tree, then its changes: ``actions`` with
``file_delete`` / ``file_trash`` / ``file_move_out`` for what left), ``GET
/3/drive/{drive}/files/search?query=&directory_id=`` and ``GET
/2/drive/{drive}/files/{id}/download``. Answers are ``{"result": "success", "data": …,
"cursor": …, "has_more": …}``; times are Unix seconds.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

from nyla.sdk.connectors import (
    ConnectorContext,
    CursorExpiredError,
    DeltaCheckpoint,
    Download,
    Item,
    ItemPage,
    ItemTooLargeError,
    SyncPage,
    VendorBadRequestError,
    VendorNotFoundError,
)

ROOT_ID = 1
LIMIT = 200
#: actions of ``listing/continue`` after which the file is gone from the directory
GONE = {"file_delete", "file_trash", "file_move_out"}


def drive_id(ctx: ConnectorContext) -> str:
    """The connection's kDrive id (setting ``driveId``)."""
    value = str(ctx.connection.settings.get("driveId") or "")
    if not is_number(value):
        raise VendorBadRequestError(
            "infomaniak: the connection's driveId setting is not a kDrive id (the number in "
            "the kDrive URL)",
            service="infomaniak",
        )
    return value


def is_number(value: str) -> bool:
    """Whether ``value`` is a kDrive id: ASCII digits only (``str.isdigit`` takes ``²``)."""
    return 0 < len(value) <= 20 and value.isascii() and value.isdigit()


def dir_of(path: str) -> int:
    """The directory id of ``/kdrive`` or ``/kdrive/<dirId>``."""
    parts = [p for p in path.split("/") if p]
    if parts[:1] != ["kdrive"] or len(parts) > 2 or (len(parts) == 2 and not is_number(parts[1])):
        raise VendorBadRequestError(
            f"infomaniak: {path!r} is not a kDrive directory (/kdrive or /kdrive/<dirId>)",
            service="infomaniak",
        )
    return int(parts[1]) if len(parts) == 2 else ROOT_ID


def file_item(raw: dict[str, Any], prefix: str, below: str = "") -> Item:
    """A kDrive file or directory. ``prefix`` is the listed directory's path; ``below`` the
    listed directory's own kDrive path, cut from the file's full ``path``."""
    is_dir = raw.get("type") == "dir"
    full = raw.get("path") or ""
    rel = full[len(below) :] if below and full.startswith(below) else f"/{raw.get('name', '')}"
    changed = raw.get("last_modified_at") or raw.get("added_at")
    return Item(
        id=f"kdrive:{raw['id']}",
        title=raw.get("name") or str(raw["id"]),
        kind="folder" if is_dir else "file",
        path=f"/kdrive/{raw['id']}" if is_dir else f"{prefix.rstrip('/')}{rel}",
        modified=datetime.fromtimestamp(changed, UTC) if changed else None,
        size=None if is_dir else raw.get("size"),
        mime=raw.get("mime_type"),
        version=str(changed) if changed else None,
        extra={"vendor": {"parentId": raw.get("parent_id"), "path": full}},
    )


def _page(body: dict[str, Any], prefix: str, below: str = "") -> ItemPage:
    files = body.get("data") or []
    cursor = body.get("cursor") if body.get("has_more") else None
    return ItemPage(items=[file_item(f, prefix, below) for f in files], cursor=cursor)


async def _dir_path(ctx: ConnectorContext, drive: str, dir_id: int) -> str:
    if dir_id == ROOT_ID:
        return ""
    body = await ctx.http.get_json(f"/3/drive/{drive}/files/{dir_id}", params={"with": "path"})
    return str((body.get("data") or {}).get("path") or "")


async def browse(ctx: ConnectorContext, path: str, cursor: str | None) -> ItemPage:
    """The children of one directory (cursor paging)."""
    drive, dir_id = drive_id(ctx), dir_of(path)
    params = {"limit": str(LIMIT), "with": "path"}
    if cursor:
        params["cursor"] = cursor
    body = await ctx.http.get_json(f"/3/drive/{drive}/files/{dir_id}/files", params=params)
    return _page(body, f"/kdrive/{dir_id}" if dir_id != ROOT_ID else "/kdrive")


async def search(ctx: ConnectorContext, query: str, scope: str, cursor: str | None) -> ItemPage:
    """kDrive's search (names and content), within the scope's directory."""
    drive, dir_id = drive_id(ctx), dir_of(scope or "/kdrive")
    params = {"query": query, "limit": str(LIMIT), "with": "path"}
    if dir_id != ROOT_ID:
        params["directory_id"] = str(dir_id)
    if cursor:
        params["cursor"] = cursor
    body = await ctx.http.get_json(f"/3/drive/{drive}/files/search", params=params)
    below = await _dir_path(ctx, drive, dir_id)
    return _page(body, f"/kdrive/{dir_id}" if dir_id != ROOT_ID else "/kdrive", below)


async def download(ctx: ConnectorContext, file_id: str, max_bytes: int | None) -> Download:
    """A file's bytes, its listed size checked first."""
    drive = drive_id(ctx)
    body = await ctx.http.get_json(f"/3/drive/{drive}/files/{file_id}", params={"with": "path"})
    meta = file_item(body.get("data") or {}, "/kdrive")
    if max_bytes is not None and meta.size is not None and meta.size > max_bytes:
        raise ItemTooLargeError(
            f"infomaniak: {meta.title} has {meta.size} bytes, more than {max_bytes}",
            size=meta.size,
            limit=max_bytes,
            service="infomaniak",
        )
    data = await ctx.http.download(
        f"/2/drive/{drive}/files/{file_id}/download", max_bytes=max_bytes
    )
    return Download(item=meta, content=data, mime=meta.mime or "application/octet-stream")


async def _listing(ctx: ConnectorContext, url: str, params: dict[str, str]) -> dict[str, Any]:
    try:
        body = await ctx.http.get_json(url, params=params)
    except (VendorBadRequestError, VendorNotFoundError) as exc:
        if "cursor" in str(exc).lower():
            raise CursorExpiredError(str(exc), service="infomaniak") from exc
        raise
    return body.get("data") or {}


class KDriveCheckpoint(DeltaCheckpoint):
    """Where a directory's sync resumes: the ``listing/continue`` cursor and whether the run
    lists the whole directory."""


async def sync(
    ctx: ConnectorContext, scope: str, checkpoint: dict[str, Any] | None
) -> AsyncIterator[SyncPage]:
    """``listing`` (everything below the directory) then ``listing/continue`` with the
    cursor as the checkpoint; an expired cursor raises CursorExpiredError."""
    drive, dir_id = drive_id(ctx), dir_of(scope or "/kdrive")
    prefix = f"/kdrive/{dir_id}" if dir_id != ROOT_ID else "/kdrive"
    base = f"/3/drive/{drive}/files/{dir_id}/listing"
    cp = KDriveCheckpoint.load(checkpoint, scope=prefix)
    cursor, full = cp.cursor, cp.listing_all
    below = await _dir_path(ctx, drive, dir_id)
    seen: set[tuple[str, str | None]] = set()
    while True:
        params = {"limit": str(LIMIT), "with": "path"}
        if cursor:
            params["cursor"] = cursor
        data = await _listing(ctx, f"{base}/continue" if cursor else base, params)
        items, gone = [], []
        for raw in data.get("files") or []:
            item = file_item(raw, prefix, below)
            if item.kind != "folder" and (item.id, item.version) not in seen:
                seen.add((item.id, item.version))
                items.append(item)
        for action in data.get("actions") or []:
            if action.get("action") in GONE:
                gone.append(f"kdrive:{action.get('file_id')}")
        cursor, more = data.get("cursor"), bool(data.get("has_more"))
        yield SyncPage(
            items=items,
            tombstones=gone,
            checkpoint=cp.then(cursor, more).dump(),
            done=not more,
            full_listing=full,
        )
        if not more:
            return


async def list_ids(ctx: ConnectorContext, scope: str) -> AsyncIterator[list[str]]:
    """Every file id below the directory, from a fresh ``listing`` (raises on any failure)."""
    drive, dir_id = drive_id(ctx), dir_of(scope or "/kdrive")
    base = f"/3/drive/{drive}/files/{dir_id}/listing"
    cursor = None
    while True:
        params = {"limit": str(LIMIT)}
        if cursor:
            params["cursor"] = cursor
        data = await _listing(ctx, f"{base}/continue" if cursor else base, params)
        yield [f"kdrive:{f['id']}" for f in data.get("files") or [] if f.get("type") != "dir"]
        cursor = data.get("cursor")
        if not data.get("has_more"):
            return
