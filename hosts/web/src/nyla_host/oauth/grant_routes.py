"""A person's own grants, without the command line: the MCP clients they allowed (their
access tokens, as ``nyla tokens list`` shows them) and the revocation of one, which cuts the
client off at once, its refresh token included."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, HTTPException, Request, Response

from nyla_host.auth import need_user
from nyla_host.identity import Identity
from nyla_host.oauth.store import OAuthStore
from nyla_host.state import host

router = APIRouter(tags=["oauth"])


@router.get("/api/oauth/grants")
async def my_grants(
    request: Request, identity: Identity = Depends(need_user)
) -> list[dict[str, Any]]:
    """The MCP clients the caller allowed and has not revoked, newest first."""
    return await OAuthStore(host(request).kernel.db).grants_of(identity.user_id)


@router.delete("/api/oauth/grants/{grant_id}", status_code=204)
async def revoke_grant(
    grant_id: str, request: Request, identity: Identity = Depends(need_user)
) -> Response:
    """Revoke one of the caller's grants (404 for anyone else's, so ids are not confirmed)."""
    state = host(request)
    grant = await OAuthStore(state.kernel.db).grant(grant_id[:32])
    if grant is None or grant.user_id != identity.user_id:
        raise HTTPException(404, "no such grant")
    if not await state.tokens.revoke(grant.token_id):
        raise HTTPException(404, "no such grant")
    return Response(status_code=204)
