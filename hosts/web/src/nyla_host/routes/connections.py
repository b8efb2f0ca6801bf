"""Connections (the kernel's connection store): list, add, remove, the knowledge consent
toggle, stopping their jobs, and the OAuth authorization-code round trip for connectors that
sign in that way (the callback is public: the provider redirects the browser there; the
one-time ``state`` ties it to the user who started it)."""

from __future__ import annotations

import secrets
import time
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Depends, HTTPException, Query, Request
from pydantic import Field

from nyla import NotFoundError, PermissionDeniedError, config_value, list_data_sources
from nyla.sdk import WireModel
from nyla.sdk.connectors import grant_from_token_response
from nyla_host.auth import need_user
from nyla_host.connector_calls import connector_call
from nyla_host.identity import Identity
from nyla_host.state import host

router = APIRouter(prefix="/api/connections", tags=["connections"])
OAUTH_STATE_TTL_S = 600
#: the longest browse path and cursor taken (a vendor's next-page link fits easily)
MAX_PATH, MAX_CURSOR = 2000, 4096


class NewConnection(WireModel):
    """``POST /api/connections``: a connection to an installed connector's service, with
    the settings it needs (e.g. a folder for ``localfs``, ``baseUrl`` for self-hosted)."""

    service: str = Field(min_length=1, max_length=64)
    label: str = Field(default="", max_length=200)
    account: str = Field(default="", max_length=200)
    settings: dict[str, Any] = Field(default_factory=dict)


class Consent(WireModel):
    """``PATCH /api/connections/{id}/knowledge-consent``."""

    enabled: bool


async def owned_connection(request: Request, connection_id: str, identity: Identity) -> Any:
    """The caller's connection (404 for anyone else's: its existence is not disclosed)."""
    try:
        return await host(request).kernel.connections.get(
            connection_id, user_id=None if identity.is_sysadmin else identity.user_id
        )
    except (NotFoundError, PermissionDeniedError):
        raise HTTPException(404, f"no connection {connection_id}") from None


@router.get("")
async def connections(request: Request, identity: Identity = Depends(need_user)) -> dict[str, Any]:
    """The caller's connections with their consent and status."""
    rows = await host(request).kernel.connections.list(identity.user_id)
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
    reserved = sorted(
        set(body.settings)
        & getattr(kernel.plugins.connectors[body.service], "server_settings", set())
    )
    if reserved and not identity.is_sysadmin:
        raise HTTPException(
            403,
            f"{', '.join(reserved)} of {body.service} points the server at a folder or URL of "
            "the caller's choosing; only a sysadmin can set it",
        )
    connection = await kernel.connections.add(
        body.service,
        user_id=identity.user_id,
        mandate_id=identity.mandate_id,
        account=body.account,
        label=body.label or body.service,
        settings=body.settings,
    )
    return connection.to_wire()


@router.delete("/{connection_id}")
async def delete_connection(
    connection_id: str, request: Request, identity: Identity = Depends(need_user)
) -> dict[str, Any]:
    """Remove a connection: its index is purged and its jobs cancelled."""
    connection = await owned_connection(request, connection_id, identity)
    purge = await host(request).kernel.connections.remove(connection_id, user_id=connection.user_id)
    return {"removed": connection_id, "purge": purge.to_wire()}


@router.get("/{connection_id}/tree")
async def tree(
    connection_id: str, request: Request, identity: Identity = Depends(need_user)
) -> dict[str, Any]:
    """The connection's data-source tree with each element's explicit and effective 🧠."""
    connection = await owned_connection(request, connection_id, identity)
    sources = await list_data_sources(host(request).kernel.db, connection_id)
    return {"connection": connection.to_wire(), "dataSources": [s.to_wire() for s in sources]}


@router.get("/{connection_id}/browse")
async def browse(
    connection_id: str,
    request: Request,
    path: str = Query(default="", max_length=MAX_PATH),
    cursor: str | None = Query(default=None, max_length=MAX_CURSOR),
    identity: Identity = Depends(need_user),
) -> dict[str, Any]:
    """One level of the connection's own tree (the connector's ``browse``), each item with
    the data source at its path (if any) and its effective 🧠 (inherited along the tree).
    ``cursor`` is the one the previous page gave; any other is a 400, and so is a path the
    connector cannot use; a connector that fails answers 502, naming no server path."""
    if cursor is not None and not cursor.isprintable():
        raise HTTPException(400, "the cursor is not one a listing gave out; list again without")
    connection = await owned_connection(request, connection_id, identity)
    kernel = host(request).kernel
    adapter = kernel.plugins.connectors.get(connection.service)
    given = {"path": path, "cursor": cursor}
    async with (
        connector_call(connection.service, adapter, connection.settings, given),
        kernel.connections.open(connection_id, user_id=connection.user_id) as ctx,
    ):
        page = await ctx.adapter.browse(ctx, path, cursor)
    sources = {s.path: s for s in await list_data_sources(kernel.db, connection_id)}
    items = []
    for item in page.items:
        node = "/" + "/".join(p for p in (item.path or item.id).split("/") if p)
        source = sources.get(node)
        policy = await kernel.knowledge.resolve_policy(connection_id, node, "rag_index_enabled")
        items.append(
            {
                **item.to_wire(),
                "isFolder": item.is_folder,
                "nodePath": node,
                "dataSourceId": source.id if source else None,
                "ragIndexEnabled": source.rag_index_enabled if source else None,
                "ragIndexEffective": bool(policy.value),
            }
        )
    return {"connectionId": connection_id, "path": path, "items": items, "cursor": page.cursor}


@router.patch("/{connection_id}/knowledge-consent")
async def knowledge_consent(
    connection_id: str, body: Consent, request: Request, identity: Identity = Depends(need_user)
) -> dict[str, Any]:
    """The connection's global consent; off purges everything indexed from it at once and
    cancels its running jobs."""
    connection = await owned_connection(request, connection_id, identity)
    result = await host(request).kernel.knowledge.set_knowledge_consent(
        connection_id, body.enabled, actor=connection.user_id
    )
    return {"connectionId": connection_id, "enabled": body.enabled, "purge": result.to_wire()}


@router.post("/{connection_id}/knowledge-stop")
async def knowledge_stop(
    connection_id: str, request: Request, identity: Identity = Depends(need_user)
) -> dict[str, Any]:
    """Stop every running job of the connection."""
    await owned_connection(request, connection_id, identity)
    cancelled = await host(request).kernel.jobs.cancel_connection(connection_id)
    return {"connectionId": connection_id, "cancelledJobs": cancelled}


def _pending(request: Request) -> dict[str, tuple[str, str | None, str, float]]:
    return host(request).services.setdefault("oauth_states", {})


def _oauth(request: Request, service: str) -> Any:
    adapter = host(request).kernel.plugins.connectors.get(service)
    oauth = getattr(adapter, "oauth", None)
    if oauth is None or not oauth.authorize_url:
        raise HTTPException(400, f"service {service!r} does not sign in with OAuth")
    client_id = config_value(oauth.client_id_setting) if oauth.client_id_setting else None
    if not client_id:
        raise HTTPException(400, f"{service}: set {oauth.client_id_setting} to the app's client id")
    return oauth, client_id


@router.post("/oauth/{service}/start")
async def oauth_start(
    service: str, request: Request, identity: Identity = Depends(need_user)
) -> dict[str, Any]:
    """Begin a connector's OAuth sign-in: the URL to send the browser to."""
    oauth, client_id = _oauth(request, service)
    state = secrets.token_urlsafe(24)
    _pending(request)[state] = (identity.user_id, identity.mandate_id, service, time.monotonic())
    query = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": str(request.url_for("oauth_callback", service=service)),
        "scope": " ".join(oauth.scopes),
        "state": state,
    }
    return {"authorizeUrl": f"{oauth.authorize_url}?{urlencode(query)}", "state": state}


@router.get("/oauth/{service}/callback", name="oauth_callback")
async def oauth_callback(
    service: str, request: Request, state: str = "", code: str = ""
) -> dict[str, Any]:
    """Where the provider sends the browser back (public; ``state`` proves who began it):
    the code is exchanged for tokens, stored encrypted with a new connection."""
    pending = _pending(request).pop(state, None)
    if pending is None or pending[2] != service:
        raise HTTPException(400, "unknown or used sign-in state; start the sign-in again")
    user_id, mandate_id, _, started = pending
    if time.monotonic() - started > OAUTH_STATE_TTL_S or not code:
        raise HTTPException(400, "the sign-in expired or was refused; start it again")
    oauth, client_id = _oauth(request, service)
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": str(request.url_for("oauth_callback", service=service)),
        "client_id": client_id,
    }
    secret = config_value(oauth.client_secret_setting) if oauth.client_secret_setting else None
    if secret:
        form["client_secret"] = secret
    connections = host(request).kernel.connections
    async with connections.plain_http(service) as http:
        response = await http.request("POST", oauth.token_url, data=form)
    grant = grant_from_token_response(response.json())
    connection = await connections.add(
        service, user_id=user_id, mandate_id=mandate_id, label=service, grant=grant
    )
    return {"connectionId": connection.id, "service": service}
