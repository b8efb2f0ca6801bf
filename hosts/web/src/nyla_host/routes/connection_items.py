"""An item of a connection through a signed link: the browser opens a cited file of the
user's own local folder (or any connector without a web address for its items) without a
bearer token in the URL. Public: the signature (see :mod:`nyla_host.links`) is the
credential, and the download reads through the link maker's own connection."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.responses import Response

from nyla import NotFoundError, PermissionDeniedError
from nyla_host.connector_calls import connector_call
from nyla_host.links import item_target
from nyla_host.routes.files import attachment
from nyla_host.state import host

router = APIRouter(prefix="/api/connections", tags=["connections"])
#: the largest item a link downloads (the agent's own download limit)
ITEM_DOWNLOAD_LIMIT = 25 * 1024 * 1024


@router.get("/{connection_id}/items/download")
async def signed_item_download(
    connection_id: str,
    request: Request,
    item: str = Query(min_length=1, max_length=4096),
    user: str = Query(min_length=1, max_length=128),
    expires: int = Query(ge=0, le=2**40),
    signature: str = Query(min_length=1, max_length=128),
    mandate: str | None = Query(default=None, max_length=128),
) -> Any:
    """The item's bytes (403 for a wrong or expired signature; 404 when the connection is no
    longer the link maker's; the connector's own errors as elsewhere)."""
    state = host(request)
    why = state.runs.links.check(
        item_target(connection_id, item), user, mandate, expires, signature
    )
    if why is not None:
        raise HTTPException(403, why)
    connections = state.kernel.connections
    try:
        connection = await connections.get(connection_id, user_id=user)
    except (NotFoundError, PermissionDeniedError):
        raise HTTPException(404, f"no connection {connection_id}") from None
    adapter = state.kernel.plugins.connectors.get(connection.service)
    async with (
        connector_call(connection.service, adapter, connection.settings, {"item": item}),
        connections.open(connection_id, user_id=user) as ctx,
    ):
        got = await ctx.adapter.download(ctx, item, max_bytes=ITEM_DOWNLOAD_LIMIT)
    return Response(
        got.content,
        media_type=got.mime,
        headers={
            "Content-Disposition": attachment(got.name or item.rsplit("/", 1)[-1]),
            "X-Content-Type-Options": "nosniff",
            "Cache-Control": "private, no-store",
        },
    )
