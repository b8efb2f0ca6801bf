"""Health (public) and the caller's own identity."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request

from nyla_host.auth import need_user
from nyla_host.identity import Identity
from nyla_host.state import host
from nyla_host.timezone import request_now, request_timezone

router = APIRouter()


@router.get("/healthz", tags=["public"])
async def healthz(request: Request) -> dict[str, Any]:
    """Liveness and the database's reachability (public: no identity needed)."""
    kernel = host(request).kernel
    try:
        async with kernel.db.session() as s:
            from sqlalchemy import text

            await s.execute(text("SELECT 1"))
        database = "ok"
    except Exception as exc:
        database = f"error: {type(exc).__name__}"
    return {"status": "ok" if database == "ok" else "degraded", "database": database}


@router.get("/api/me")
async def me(identity: Identity = Depends(need_user)) -> dict[str, Any]:
    """Who the credential belongs to, and the request's timezone as the server sees it."""
    return {
        "userId": identity.user_id,
        "mandateId": identity.mandate_id,
        "role": identity.role.value,
        "via": identity.via,
        "name": identity.name,
        "timezone": request_timezone(),
        "now": request_now().isoformat(),
    }


@router.get("/api/openapi.json")
async def openapi(request: Request, identity: Identity = Depends(need_user)) -> dict[str, Any]:
    """The OpenAPI schema of this host."""
    from fastapi.openapi.utils import get_openapi

    app = request.app
    return get_openapi(title=app.title, version=app.version, routes=app.routes)
