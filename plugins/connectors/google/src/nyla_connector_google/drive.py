"""Google Drive v3: My Drive and shared drives (``supportsAllDrives`` /
``includeItemsFromAllDrives`` on every call), folder listings, ``fullText contains``
search scoped to a folder, downloads (Google Docs, Sheets and Slides exported to text,
drawings and other Google files to PDF), and ``changes.list`` sync with the
``startPageToken`` taken *before* the first full sweep."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from pydantic import Field

from nyla.sdk.connectors import (
    Checkpoint,
    ConnectorContext,
    ConnectorError,
    CursorExpiredError,
    Download,
    Item,
    ItemPage,
    SyncPage,
    Unlisted,
    VendorAuthError,
    VendorBadRequestError,
    VendorNotFoundError,
    VendorRateLimitError,
    token_pages,
)
from nyla_connector_google import items
from nyla_connector_google.gmail import check_size
from nyla_connector_google.items import FOLDER_MIME
from nyla_connector_google.paths import Target, api, getter, quoted

FILE_FIELDS = (
    "id,name,mimeType,parents,driveId,modifiedTime,size,md5Checksum,version,webViewLink,"
    "trashed,lastModifyingUser(displayName,emailAddress),owners(displayName)"
)
ALL_DRIVES = {"supportsAllDrives": "true", "includeItemsFromAllDrives": "true"}
PAGE = 100
#: Google's own formats have no bytes: they are exported (files.export) to these
EXPORTS = {
    "application/vnd.google-apps.document": ("text/plain", ".txt"),
    "application/vnd.google-apps.spreadsheet": ("text/csv", ".csv"),
    "application/vnd.google-apps.presentation": ("text/plain", ".txt"),
}
EXPORT_FALLBACK = ("application/pdf", ".pdf")


def _q(text: str) -> str:
    """A string literal of Drive's query language."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def list_params(target: Target, q: str, cursor: str | None) -> dict[str, str]:
    """``files.list`` parameters: the shared drive as corpus when there is one."""
    params = {
        **ALL_DRIVES,
        "q": q,
        "pageSize": str(PAGE),
        "fields": f"nextPageToken,incompleteSearch,files({FILE_FIELDS})",
    }
    if target.drive:
        params.update(corpora="drive", driveId=target.drive)
    else:
        params["corpora"] = "user"
    if cursor:
        params["pageToken"] = cursor
    return params


async def files_page(
    ctx: ConnectorContext, target: Target, q: str, cursor: str | None
) -> tuple[list[dict[str, Any]], str | None]:
    """One page of ``files.list``."""
    body = await ctx.http.get_json(
        api(ctx, "drive", "/files"), params=list_params(target, q, cursor)
    )
    return body.get("files") or [], body.get("nextPageToken")


def children_q(folder: str) -> str:
    """The direct, untrashed children of a folder."""
    return f"{_q(folder)} in parents and trashed = false"


async def browse_drives(ctx: ConnectorContext, cursor: str | None) -> ItemPage:
    """The shared drives the user is a member of (``drives.list``)."""
    params = {"pageSize": "100", **({"pageToken": cursor} if cursor else {})}
    body = await ctx.http.get_json(api(ctx, "drive", "/drives"), params=params)
    found = [items.shared_drive_item(raw) for raw in body.get("drives") or []]
    return ItemPage(items=found, cursor=body.get("nextPageToken"))


async def browse_folder(ctx: ConnectorContext, target: Target, cursor: str | None) -> ItemPage:
    """A folder's children (files and folders)."""
    files, nxt = await files_page(ctx, target, children_q(target.ident), cursor)
    return ItemPage(items=[items.file_item(raw, target.path) for raw in files], cursor=nxt)


async def search(
    ctx: ConnectorContext, target: Target | None, text: str, cursor: str | None
) -> ItemPage:
    """``fullText contains`` (names and content) in the folder, or in every drive the user
    reaches when there is no folder."""
    words = text.strip()
    q = f"fullText contains {_q(words)} and trashed = false" if words else "trashed = false"
    scope = target or Target("drive", "/drive", ident="")
    if target is not None and target.ident:
        q += f" and {_q(target.ident)} in parents"
    params = list_params(scope, q, cursor)
    if target is None:
        params["corpora"] = "allDrives"
    body = await ctx.http.get_json(api(ctx, "drive", "/files"), params=params)
    prefix = target.path if target is not None else ""
    found = [items.file_item(raw, prefix) for raw in body.get("files") or []]
    return ItemPage(items=found, cursor=body.get("nextPageToken"))


async def file_meta(ctx: ConnectorContext, file_id: str) -> Item:
    """One file's metadata (``files.get``)."""
    raw = await ctx.http.get_json(
        api(ctx, "drive", f"/files/{quoted(file_id)}"),
        params={"supportsAllDrives": "true", "fields": FILE_FIELDS},
    )
    return items.file_item(raw)


async def download(ctx: ConnectorContext, file_id: str, max_bytes: int | None) -> Download:
    """A file's bytes (``alt=media``, listed size checked first), or a Google Doc exported
    (``files.export``; their size is unknown, so the cap applies while streaming)."""
    meta = await file_meta(ctx, file_id)
    if meta.kind == "folder":
        raise VendorBadRequestError(f"google: {meta.title} is a folder", service="google")
    url = api(ctx, "drive", f"/files/{quoted(file_id)}")
    if (meta.mime or "").startswith("application/vnd.google-apps."):
        mime, suffix = EXPORTS.get(meta.mime or "", EXPORT_FALLBACK)
        data = await ctx.http.download(
            f"{url}/export", params={"mimeType": mime}, max_bytes=max_bytes
        )
        title = meta.title if meta.title.endswith(suffix) else meta.title + suffix
        meta = meta.model_copy(update={"title": title, "size": len(data), "mime": mime})
        return Download(item=meta, content=data, mime=mime)
    check_size(meta, max_bytes)
    data = await ctx.http.download(
        url, params={"alt": "media", "supportsAllDrives": "true"}, max_bytes=max_bytes
    )
    return Download(item=meta, content=data, mime=meta.mime or "application/octet-stream")


async def folder_id(ctx: ConnectorContext, target: Target) -> str:
    """The real id of the target folder (``root`` is an alias changes never name)."""
    if target.ident != "root":
        return target.ident
    raw = await ctx.http.get_json(api(ctx, "drive", "/files/root"), params={"fields": "id"})
    return str(raw["id"])


async def start_token(ctx: ConnectorContext, target: Target) -> str:
    """``changes.getStartPageToken`` (of the shared drive when there is one)."""
    params = {"supportsAllDrives": "true", **({"driveId": target.drive} if target.drive else {})}
    body = await ctx.http.get_json(api(ctx, "drive", "/changes/startPageToken"), params=params)
    return str(body["startPageToken"])


class DriveCheckpoint(Checkpoint):
    """Where a folder tree's sync resumes: the ``changes.list`` page token (taken before the
    sweep), the tree's folders (id -> path) and, while the sweep is under way (``full``),
    the folders still to list and the page of the first one."""

    token: str | None = None
    folders: dict[str, str] = Field(default_factory=dict)
    full: bool = False
    queue: list[str] = Field(default_factory=list)
    page: str | None = None


async def sync_drive(
    ctx: ConnectorContext, target: Target, checkpoint: dict[str, Any] | None
) -> AsyncIterator[SyncPage]:
    """Full sweep of the folder tree, then ``changes.list`` from the token taken before
    the sweep. The checkpoint keeps the tree's folders (id -> path), so a change is in scope
    when one of its parents is, and its path is known."""
    cp = DriveCheckpoint.load(checkpoint, scope=target.path)
    if cp.token and not cp.full:
        async for page in _changes(ctx, target, cp.token, cp.folders):
            yield page
        return
    token = cp.token or await start_token(ctx, target)
    folders = cp.folders or {await folder_id(ctx, target): target.path}
    queue = cp.queue or list(folders)
    page_token = cp.page
    while queue:
        here = folders[queue[0]]
        files, page_token, unlisted = await _children(ctx, target, here, queue[0], page_token)
        found = []
        for raw in files:
            if raw.get("mimeType") == FOLDER_MIME:
                if raw["id"] not in folders:
                    folders[raw["id"]] = f"{here.rstrip('/')}/{raw.get('name') or raw['id']}"
                    queue.append(raw["id"])
                continue
            found.append(items.file_item(raw, here))
        if page_token is None:
            queue = queue[1:]
        more = bool(queue)
        state = DriveCheckpoint(token=token, folders=folders, full=more, scope=target.path)
        if more:
            state.queue, state.page = queue, page_token
        yield SyncPage(
            items=found,
            unlisted=unlisted,
            checkpoint=state.dump(),
            done=not more,
            full_listing=True,
        )


async def _children(
    ctx: ConnectorContext, target: Target, here: str, folder: str, token: str | None
) -> tuple[list[dict[str, Any]], str | None, list[Unlisted]]:
    """One page of a folder's children for the tree sweep. A subfolder Drive will not list
    (403, deleted meanwhile, a server error on it) is reported as unlisted and the sweep
    goes on; the scope's own folder, the credentials and the quota fail the sync."""
    try:
        files, token = await files_page(ctx, target, children_q(folder), token)
    except (VendorAuthError, VendorRateLimitError):
        raise
    except ConnectorError as exc:
        if here == target.path:
            raise
        return [], None, [Unlisted(path=here, reason=str(exc))]
    return files, token, []


def _in_scope(raw: dict[str, Any], folders: dict[str, str]) -> str | None:
    """The path of the folder (of the tree) a changed file is in, if any."""
    return next((folders[p] for p in raw.get("parents") or [] if p in folders), None)


async def _changes(
    ctx: ConnectorContext, target: Target, token: str, tree: dict[str, str]
) -> AsyncIterator[SyncPage]:
    """``changes.list`` from ``token``: changes in the tree (``folders``), new subfolders
    added to it, files removed or moved out of it as tombstones."""
    folders = dict(tree)
    params = {
        **ALL_DRIVES,
        "pageSize": str(PAGE),
        "fields": f"nextPageToken,newStartPageToken,changes(fileId,removed,time,file({FILE_FIELDS}))",
        **({"driveId": target.drive} if target.drive else {}),
    }

    async def fetch(query: dict[str, Any]) -> Any:
        try:
            return await ctx.http.get_json(api(ctx, "drive", "/changes"), params=query)
        except (VendorBadRequestError, VendorNotFoundError) as exc:
            # the stored page token is the only thing that varies between these calls
            raise CursorExpiredError(
                f"google: Drive refused the stored page token ({exc}); full re-sync",
                service="google",
                status_code=exc.status_code,
            ) from exc

    async for body in token_pages(fetch, params, start=token):
        found, gone = [], []
        folder_left = False
        for change in body.get("changes") or []:
            raw = change.get("file") or {}
            here = _in_scope(raw, folders)
            if change.get("removed") or raw.get("trashed") or here is None:
                gone.append(f"file:{change['fileId']}")
                folder_left = (
                    folder_left
                    or change["fileId"] in folders
                    or (raw.get("mimeType") == FOLDER_MIME)
                )
            elif raw.get("mimeType") == FOLDER_MIME:
                # a new subfolder: its files are in scope too
                folders[raw["id"]] = f"{here.rstrip('/')}/{raw.get('name') or raw['id']}"
            else:
                found.append(items.file_item(raw, here))
        nxt = body.get("nextPageToken")
        token = nxt or body.get("newStartPageToken") or token
        yield SyncPage(
            items=found,
            tombstones=gone,
            checkpoint=DriveCheckpoint(token=token, folders=folders, scope=target.path).dump(),
            done=nxt is None,
            full_listing=False,
            # each removed file is a change of its own, but a folder that left may take
            # files with it that are not: then the walker lists ids to find them
            deletions_reported=not folder_left,
        )


async def file_ids(ctx: ConnectorContext, target: Target) -> AsyncIterator[list[str]]:
    """Every file id in the folder tree (a slim listing; raises on any failed page)."""
    queue = [await folder_id(ctx, target)]
    seen = set(queue)
    while queue:
        folder = queue.pop(0)
        params = list_params(target, children_q(folder), None)
        params["fields"] = "nextPageToken,files(id,mimeType)"
        async for body in token_pages(getter(ctx, api(ctx, "drive", "/files")), params):
            ids = []
            for raw in body.get("files") or []:
                if raw.get("mimeType") == FOLDER_MIME:
                    if raw["id"] not in seen:
                        seen.add(raw["id"])
                        queue.append(raw["id"])
                else:
                    ids.append(f"file:{raw['id']}")
            yield ids
