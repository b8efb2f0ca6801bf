"""Connections: list, add, remove, the knowledge consent toggle, stopping their jobs, and the
OAuth round trip of connectors that sign in that way (the callback is public: the provider
redirects the browser there; the one-time ``state`` ties it to the user who started it)."""

from __future__ import annotations

import secrets
import time
import uuid
from typing import Any

from fastapi import APIRouter, Depends, HTTPException, Request
from pydantic import Field

from nyla import JobStore, get_connection, list_connections, list_data_sources, remove_connection
from nyla.models.base import WireModel
from nyla_host.auth import need_user
from nyla_host.identity import Identity
from nyla_host.state import host

router = APIRouter(prefix="/api/connections", tags=["connections"])
OAUTH_STATE_TTL_S = 600


class NewConnection(WireModel):
    """``POST /api/connections``."""

    service: str = Field(min_length=1, max_length=64)
    label: str = Field(default="", max_length=200)


class Consent(WireModel):
    """``PATCH /api/connections/{id}/knowledge-consent``."""

    enabled: bool


async def owned_connection(request: Request, connection_id: str, identity: Identity) -> Any:
    """The caller's connection (404 for anyone else's: its existence is not disclosed)."""
    connection = await get_connection(host(request).kernel.db, connection_id)
    if connection is None or (connection.user_id != identity.user_id and not identity.is_sysadmin):
        raise HTTPException(404, f"no connection {connection_id}")
    return connection


@router.get("")
async def connections(request: Request, identity: Identity = Depends(need_user)) -> dict[str, Any]:
    """The caller's connections with their consent."""
    rows = await list_connections(host(request).kernel.db, identity.user_id)
    return {"connections": [r.to_wire() for r in rows]}


@router.post("", status_code=201)
async def add_connection(
    body: NewConnection, request: Request, identity: Identity = Depends(need_user)
) -> dict[str, Any]:
    """Add a connection to an installed connector's service."""
    kernel = host(request).kernel
    services = sorted(kernel.plugins.connectors)
    if body.service not in services:
        raise HTTPException(400, f"unknown service {body.service!r}; installed: {services}")
    connection_id = uuid.uuid4().hex
    await kernel.knowledge.add_connection(
        connection_id,
        body.service,
        user_id=identity.user_id,
        mandate_id=identity.mandate_id,
        label=body.label or body.service,
    )
    return (await get_connection(kernel.db, connection_id)).to_wire()


@router.delete("/{connection_id}")
async def delete_connection(
    connection_id: str, request: Request, identity: Identity = Depends(need_user)
) -> dict[str, Any]:
    """Remove a connection: its index is purged and its jobs cancelled."""
    await owned_connection(request, connection_id, identity)
    details = await remove_connection(
        host(request).kernel.db, connection_id, actor=identity.user_id
    )
    return {"removed": connection_id, **details}


@router.get("/{connection_id}/tree")
async def tree(
    connection_id: str, request: Request, identity: Identity = Depends(need_user)
) -> dict[str, Any]:
    """The connection's data-source tree with each element's explicit and effective 🧠."""
    connection = await owned_connection(request, connection_id, identity)
    sources = await list_data_sources(host(request).kernel.db, connection_id)
    return {"connection": connection.to_wire(), "dataSources": [s.to_wire() for s in sources]}


@router.patch("/{connection_id}/knowledge-consent")
async def knowledge_consent(
    connection_id: str, body: Consent, request: Request, identity: Identity = Depends(need_user)
) -> dict[str, Any]:
    """The connection's global consent; off purges everything indexed from it at once and
    cancels its running jobs."""
    await owned_connection(request, connection_id, identity)
    result = await host(request).kernel.knowledge.set_knowledge_consent(
        connection_id, body.enabled, actor=identity.user_id
    )
    return {"connectionId": connection_id, "enabled": body.enabled, "purge": result.to_wire()}


@router.post("/{connection_id}/knowledge-stop")
async def knowledge_stop(
    connection_id: str, request: Request, identity: Identity = Depends(need_user)
) -> dict[str, Any]:
    """Stop every running job of the connection."""
    await owned_connection(request, connection_id, identity)
    cancelled = await JobStore(host(request).kernel.db).cancel_by_connection(connection_id)
    return {"connectionId": connection_id, "cancelledJobs": cancelled}


def _pending(request: Request) -> dict[str, tuple[str, str, float]]:
    return host(request).services.setdefault("oauth_states", {})


@router.post("/oauth/{service}/start")
async def oauth_start(
    service: str, request: Request, identity: Identity = Depends(need_user)
) -> dict[str, Any]:
    """Begin a connector's OAuth sign-in: the URL to send the browser to."""
    adapter = host(request).kernel.plugins.connectors.get(service)
    authorize = getattr(adapter, "authorize_url", None)
    if authorize is None:
        raise HTTPException(400, f"service {service!r} does not sign in with OAuth")
    state = secrets.token_urlsafe(24)
    _pending(request)[state] = (identity.user_id, service, time.monotonic())
    redirect = str(request.url_for("oauth_callback", service=service))
    return {"authorizeUrl": authorize(state=state, redirect_uri=redirect), "state": state}


@router.get("/oauth/{service}/callback", name="oauth_callback")
async def oauth_callback(
    service: str, request: Request, state: str = "", code: str = ""
) -> dict[str, Any]:
    """Where the provider sends the browser back (public; ``state`` proves who began it)."""
    pending = _pending(request).pop(state, None)
    if pending is None or pending[1] != service:
        raise HTTPException(400, "unknown or used sign-in state; start the sign-in again")
    user_id, _, started = pending
    if time.monotonic() - started > OAUTH_STATE_TTL_S or not code:
        raise HTTPException(400, "the sign-in expired or was refused; start it again")
    adapter = host(request).kernel.plugins.connectors.get(service)
    exchange = getattr(adapter, "exchange_code", None)
    if exchange is None:
        raise HTTPException(400, f"service {service!r} does not sign in with OAuth")
    redirect = str(request.url_for("oauth_callback", service=service))
    grant = await exchange(code=code, redirect_uri=redirect)
    connection_id = uuid.uuid4().hex
    await host(request).kernel.knowledge.add_connection(
        connection_id, service, user_id=user_id, label=str(getattr(grant, "account", service))
    )
    return {"connectionId": connection_id, "service": service}
