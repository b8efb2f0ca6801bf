"""Connections (the kernel's connection store): list, add, remove, the knowledge consent
toggle, stopping their jobs, and the OAuth authorization-code round trip for connectors that
sign in that way (the callback is public: the provider redirects the browser there; the
one-time ``state`` ties it to the user who started it)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Depends, HTTPException, Query, Request
from fastapi.responses import RedirectResponse
from pydantic import Field

from nyla import NotFoundError, PermissionDeniedError
from nyla.host import list_data_sources
from nyla.sdk import NylaError, WireModel
from nyla.sdk.connectors import TokenGrant
from nyla_host.auth import need_user
from nyla_host.connector_calls import connector_call
from nyla_host.identity import Identity
from nyla_host.service_access import check_connector
from nyla_host.state import host

router = APIRouter(prefix="/api/connections", tags=["connections"])
#: the longest browse path and cursor taken (a vendor's next-page link fits easily)
MAX_PATH, MAX_CURSOR = 2000, 4096


class NewConnection(WireModel):
    """``POST /api/connections``: a connection to an installed connector's service, with
    the settings its model declares (e.g. ``root`` for ``localfs``) and, for a service that
    signs in with an API token, the ``token`` (stored encrypted)."""

    service: str = Field(min_length=1, max_length=64)
    label: str = Field(default="", max_length=200)
    account: str = Field(default="", max_length=200)
    settings: dict[str, Any] = Field(default_factory=dict)
    token: str | None = Field(default=None, min_length=1, max_length=8192, repr=False)


class SignIn(WireModel):
    """``POST /api/connections/oauth/{service}/start``: the connection to make once the
    browser comes back."""

    label: str = Field(default="", max_length=200)
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
    """Add a connection: its settings are checked against the connector's model (400 naming
    the setting; 403 for a server-only one from anyone but a sysadmin) and its root is
    listed before it is stored (a 400 saying why, and nothing stored, when that fails);
    403 without the connector's ``service.connector.<name>``."""
    await check_connector(request, identity, body.service)
    connection = await host(request).kernel.connections.connect(
        body.service,
        user_id=identity.user_id,
        mandate_id=identity.mandate_id,
        account=body.account,
        label=body.label,
        settings=body.settings,
        grant=TokenGrant(access_token=body.token) if body.token else None,
        operator=identity.is_sysadmin,
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
    await check_connector(request, identity, connection.service)
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
    await check_connector(request, identity, connection.service)
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
        policy = await kernel.knowledge.governance.resolve_policy(
            connection_id, node, "rag_index_enabled"
        )
        items.append(
            {
                **item.to_wire(),
                "isFolder": item.is_folder,
                "nodePath": node,
                "dataSourceId": source.id if source else None,
                "ragIndexEnabled": source.rag_index_enabled if source else None,
                "ragIndexEffective": connection.knowledge_ingestion_enabled and bool(policy.value),
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
    result = await host(request).kernel.knowledge.governance.set_knowledge_consent(
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


@router.post("/oauth/{service}/start")
async def oauth_start(
    service: str,
    request: Request,
    body: SignIn | None = None,
    identity: Identity = Depends(need_user),
) -> dict[str, Any]:
    """Begin a connector's browser sign-in (authorization code with PKCE): the URL to send
    the browser to, and for Microsoft the page where a directory admin consents."""
    body = body or SignIn()
    await check_connector(request, identity, service)
    started = await host(request).kernel.connections.sign_in.start(
        service,
        user_id=identity.user_id,
        mandate_id=identity.mandate_id,
        label=body.label,
        settings=body.settings,
        redirect_uri=str(request.url_for("oauth_callback", service=service)),
        operator=identity.is_sysadmin,
    )
    out = {"authorizeUrl": started.authorize_url, "state": started.state}
    if started.admin_consent_url:
        out["adminConsentUrl"] = started.admin_consent_url
    return out


@router.get("/oauth/{service}/callback", name="oauth_callback")
async def oauth_callback(
    service: str,
    request: Request,
    state: str = Query(default="", max_length=256),
    code: str = Query(default="", max_length=8192),
    error: str = Query(default="", max_length=200),
    error_description: str = Query(default="", max_length=500),
    admin_consent: str = Query(default="", max_length=10),
) -> RedirectResponse:
    """Where the provider sends the browser back (public; the one-time ``state`` proves who
    began it): the code and the PKCE verifier are exchanged for tokens, stored encrypted
    with the new connection, and the browser goes back to the page (303) with the new
    connection's id, or with what went wrong."""
    if admin_consent.lower() == "true" and not code:
        return RedirectResponse("/#sources?adminConsent=granted", status_code=303)
    try:
        connection = await host(request).kernel.connections.sign_in.finish(
            service,
            state=state,
            code=code,
            error=" ".join(filter(None, [error, error_description])),
        )
    except NylaError as exc:
        return RedirectResponse(f"/#sources?{urlencode({'oauthError': str(exc)})}", 303)
    return RedirectResponse(f"/#sources?{urlencode({'connected': connection.id})}", 303)
