"""Files through the kernel's file store: upload, list, metadata, download, delete, and
short-lived signed download links (see :mod:`nyla_host.links`)."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from fastapi import APIRouter, Depends, HTTPException, Query, Request, UploadFile
from fastapi.responses import Response

from nyla import FileAccessError, RunContext
from nyla.sdk import download_name
from nyla_host.auth import need_user
from nyla_host.identity import Identity
from nyla_host.links import file_target
from nyla_host.routes.catalog import run_context
from nyla_host.state import host
from nyla_host.timezone import request_timezone

router = APIRouter(prefix="/api/files", tags=["files"])


@router.post("", status_code=201)
async def upload(
    file: UploadFile, request: Request, identity: Identity = Depends(need_user)
) -> dict[str, Any]:
    """Store an uploaded file (multipart field ``file``) in the caller's personal scope."""
    limit = host(request).settings.max_upload_bytes
    content = await file.read(limit + 1)
    if len(content) > limit:
        raise HTTPException(413, f"files above {limit} bytes are refused")
    if not file.filename:
        raise HTTPException(400, "the upload needs a file name")
    try:
        item = await host(request).kernel.files.save(
            file.filename, content, run_context(identity), mime_type=file.content_type or None
        )
    except ValueError as exc:  # the name: empty once cleaned, or too long
        raise HTTPException(400, str(exc)) from exc
    return item.to_wire()


@router.get("")
async def list_files(
    request: Request, search: str | None = None, identity: Identity = Depends(need_user)
) -> dict[str, Any]:
    """The files the caller may read, newest first."""
    items = await host(request).kernel.files.list(run_context(identity), search=search)
    return {"files": [i.to_wire() for i in items]}


@router.get("/{file_id}")
async def file_info(
    file_id: str, request: Request, identity: Identity = Depends(need_user)
) -> dict[str, Any]:
    """A file's metadata."""
    item = await host(request).kernel.files.get(file_id, run_context(identity))
    if item is None:
        raise HTTPException(404, f"no file {file_id}")
    return item.to_wire()


async def callers_files(request: Request, identity: Identity, file_ids: list[str]) -> list[Any]:
    """The files ``file_ids`` name, each one the caller may read (404 for any other: a file
    of someone else is not told apart from none)."""
    store = host(request).kernel.files
    context = run_context(identity)
    items = []
    for file_id in dict.fromkeys(file_ids):
        item = await store.get(file_id, context)
        if item is None:
            raise HTTPException(404, f"no file {file_id}")
        items.append(item)
    return items


@router.get("/{file_id}/content")
async def download(file_id: str, request: Request, identity: Identity = Depends(need_user)) -> Any:
    """The file's bytes."""
    return await _file_response(request, file_id, run_context(identity))


async def _file_response(request: Request, file_id: str, context: RunContext) -> Response:
    store = host(request).kernel.files
    item = await store.get(file_id, context)
    if item is None:
        raise HTTPException(404, f"no file {file_id}")
    try:
        content = await store.read_bytes(file_id, context)
    except FileAccessError as exc:
        raise HTTPException(404, str(exc)) from exc
    return Response(
        content,
        media_type=item.mime_type,
        headers={
            "Content-Disposition": attachment(item.name),
            "X-Content-Type-Options": "nosniff",
            "Cache-Control": "private, no-store",
        },
    )


@router.post("/{file_id}/link")
async def make_link(
    file_id: str, request: Request, identity: Identity = Depends(need_user)
) -> dict[str, Any]:
    """A short-lived URL that downloads the file without a bearer token (for a link the
    browser opens); it works for a few minutes and only for what the caller may read."""
    (item,) = await callers_files(request, identity, [file_id])
    url, expires = host(request).runs.links.link(item.id, identity.user_id, identity.mandate_id)
    return {"url": url, "expiresAt": expires.isoformat()}


@router.get("/{file_id}/download")
async def signed_download(
    file_id: str,
    request: Request,
    user: str = Query(min_length=1, max_length=128),
    expires: int = Query(ge=0, le=2**40),
    signature: str = Query(min_length=1, max_length=128),
    mandate: str | None = Query(default=None, max_length=128),
) -> Any:
    """The file's bytes through a signed link (public: the signature is the credential;
    403 when it is wrong or expired)."""
    why = host(request).runs.links.check(file_target(file_id), user, mandate, expires, signature)
    if why is not None:
        raise HTTPException(403, why)
    context = RunContext(user_id=user, mandate_id=mandate, timezone=request_timezone())
    return await _file_response(request, file_id, context)


def attachment(name: str) -> str:
    """The ``Content-Disposition`` of a download of ``name`` (RFC 6266): an ASCII
    ``filename`` every client reads and, when the name is more than that, the whole name as
    UTF-8 in ``filename*`` (RFC 8187). HTTP headers are Latin-1 and end at a line break, so a
    name is never put in one as it is, and only its base name is offered (a stored
    ``../../etc/passwd`` downloads as ``passwd``)."""
    name = "".join(ch for ch in download_name(name) if ch.isprintable()) or "download"
    ascii_name = "".join(ch if " " <= ch <= "~" and ch not in '"\\' else "_" for ch in name)
    header = f'attachment; filename="{ascii_name}"'
    if ascii_name != name:
        header += "; filename*=UTF-8''" + quote(name.encode("utf-8", "replace"), safe="")
    return header


@router.delete("/{file_id}")
async def delete(file_id: str, request: Request, identity: Identity = Depends(need_user)) -> Any:
    """Delete a file the caller may read."""
    if not await host(request).kernel.files.delete(file_id, run_context(identity)):
        raise HTTPException(404, f"no file {file_id}")
    return {"deleted": file_id}
