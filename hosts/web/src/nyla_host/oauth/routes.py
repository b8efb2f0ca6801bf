"""The authorization server's routes: the two metadata documents, registration, the
authorization endpoint, the token endpoint and revocation (public: the client has no nyla
credential yet; each checks its own), plus the consent page and the two routes its script
calls as the signed-in person (``need_user``: their bearer header, which another site cannot
send, is what makes a decision CSRF-safe).

The MCP SDK (its handlers check the requests) loads on the first request that needs it."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from fastapi import APIRouter, Depends, HTTPException, Query, Request, Response
from fastapi.responses import FileResponse, JSONResponse
from pydantic import BaseModel, ConfigDict, StrictBool

from nyla.host import has_unstorable_chars
from nyla_host.auth import need_user
from nyla_host.identity import Identity
from nyla_host.oauth import grant_routes
from nyla_host.oauth.cors import CorsRoute, add_preflights
from nyla_host.oauth.store import OAuthStore
from nyla_host.oauth.terms import CODE_TTL_S, SCOPE, same_resource
from nyla_host.oauth.urls import issuer, resource_url
from nyla_host.state import host

if TYPE_CHECKING:
    from mcp.server.auth.provider import AccessToken, RefreshToken

    from nyla_host.oauth.provider import NylaProvider

router = APIRouter(tags=["oauth"])
#: the endpoints a browser-based MCP client calls from its own origin (:mod:`.cors`)
public = APIRouter(tags=["oauth"], route_class=CorsRoute)
WEB_DIR = Path(__file__).parent.parent / "web"
NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}
#: what an approved client may do, as the consent page says it
GRANTED = [
    "search your knowledge store",
    "list your data sources and search them",
    "use the tools of your connections (e-mail, SharePoint, Jira, ClickUp, ...) that you may use",
]


def _provider(request: Request) -> NylaProvider:
    from nyla_host.oauth.provider import NylaProvider

    state = host(request)
    return NylaProvider(
        OAuthStore(state.kernel.db),
        state.tokens,
        resource=resource_url(request),
        consent_url=f"{issuer(request)}/oauth/consent",
    )


def _oauth_error(error: str, description: str, status: int = 400) -> JSONResponse:
    """An error in the OAuth shape (RFC 6749 §5.2)."""
    body = {"error": error, "error_description": description}
    return JSONResponse(body, status_code=status, headers=NO_STORE)


def _form_body(*fields: str, required: tuple[str, ...] = ()) -> dict[str, Any]:
    """An OpenAPI request body of form fields (the routes read the form themselves, to
    answer in the OAuth error shape)."""
    schema = {
        "type": "object",
        "properties": {name: {"type": "string"} for name in fields},
        "required": list(required),
    }
    content = {"application/x-www-form-urlencoded": {"schema": schema}}
    return {"requestBody": {"required": True, "content": content}}


async def _read_form(request: Request) -> dict[str, str] | JSONResponse:
    """The request's form fields (cached on the request for the SDK's handlers), or the
    error to answer: a form that cannot be read, a file, or text PostgreSQL cannot hold."""
    try:
        form = await request.form(max_files=0, max_fields=50)
    except Exception as exc:
        return _oauth_error("invalid_request", f"the form cannot be read: {exc}"[:300])
    fields: dict[str, str] = {}
    for key, value in form.multi_items():
        if not isinstance(value, str):
            return _oauth_error("invalid_request", "a token request carries no files")
        if has_unstorable_chars(key) or has_unstorable_chars(value) or len(value) > 8192:
            return _oauth_error("invalid_request", f"the field {key[:40]!r} cannot be read")
        fields[key] = value
    return fields


@public.get("/.well-known/oauth-protected-resource")
@public.get("/.well-known/oauth-protected-resource/mcp")
async def protected_resource(request: Request) -> dict[str, Any]:
    """The MCP endpoint's protected-resource metadata (RFC 9728): nyla is its own
    authorization server."""
    return {
        "resource": resource_url(request),
        "authorization_servers": [issuer(request)],
        "scopes_supported": [SCOPE],
        "bearer_methods_supported": ["header"],
        "resource_name": "nyla",
    }


@public.get("/.well-known/oauth-authorization-server")
async def server_metadata(request: Request) -> dict[str, Any]:
    """The authorization server's metadata (RFC 8414)."""
    base = issuer(request)
    return {
        "issuer": base,
        "authorization_endpoint": f"{base}/oauth/authorize",
        "token_endpoint": f"{base}/oauth/token",
        "registration_endpoint": f"{base}/oauth/register",
        "revocation_endpoint": f"{base}/oauth/revoke",
        "scopes_supported": [SCOPE],
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "token_endpoint_auth_methods_supported": ["none"],
        "revocation_endpoint_auth_methods_supported": ["none"],
        "code_challenge_methods_supported": ["S256"],
        "authorization_response_iss_parameter_supported": True,
    }


_REGISTRATION_BODY = {
    "type": "object",
    "required": ["redirect_uris"],
    "properties": {
        "redirect_uris": {"type": "array", "items": {"type": "string"}},
        "client_name": {"type": "string"},
        "grant_types": {"type": "array", "items": {"type": "string"}},
        "response_types": {"type": "array", "items": {"type": "string"}},
        "token_endpoint_auth_method": {"type": "string"},
        "scope": {"type": "string"},
    },
}


@public.post(
    "/oauth/register",
    status_code=201,
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": _REGISTRATION_BODY}},
        }
    },
)
async def register_client(request: Request) -> JSONResponse:
    """Dynamic client registration (RFC 7591): a public client with its redirect URIs."""
    from nyla_host.oauth.registration import MAX_BODY_BYTES, Limiter, RegistrationRefused, register

    if int(request.headers.get("content-length") or 0) > MAX_BODY_BYTES:
        return _oauth_error("invalid_client_metadata", "the request is too large", 413)
    state = host(request)
    limiter = state.services.get("oauth.limiter")
    if limiter is None:
        limiter = state.services["oauth.limiter"] = Limiter()
    address = request.client.host if request.client else "-"
    try:
        wire = await register(OAuthStore(state.kernel.db), limiter, await request.body(), address)
    except RegistrationRefused as exc:
        return _oauth_error(exc.error, exc.description, exc.status)
    return JSONResponse(wire, status_code=201, headers=NO_STORE)


@router.get("/oauth/authorize")
async def authorize(
    request: Request,
    response_type: str | None = Query(None),
    client_id: str | None = Query(None),
    redirect_uri: str | None = Query(None),
    code_challenge: str | None = Query(None),
    code_challenge_method: str | None = Query(None),
    state: str | None = Query(None),
    scope: str | None = Query(None),
    resource: str | None = Query(None),
) -> Response:
    """The authorization endpoint (code flow, PKCE S256 required): a checked request goes
    to the consent page; an unknown client or redirect URI is answered here (400), any
    other fault goes back to the client's redirect URI with ``error`` and ``state``."""
    from mcp.server.auth.handlers.authorize import AuthorizationHandler

    return await AuthorizationHandler(_provider(request)).handle(request)


@public.post(
    "/oauth/token",
    openapi_extra=_form_body(
        "grant_type", "code", "redirect_uri", "client_id", "code_verifier", "refresh_token",
        "resource", "scope", required=("grant_type", "client_id"),
    ),
)  # fmt: skip
async def token(request: Request) -> Response:
    """The token endpoint: a code (once, with its PKCE verifier) or a refresh token (rotated)
    for an access token bound to the MCP endpoint."""
    form = await _read_form(request)
    if isinstance(form, JSONResponse):
        return form
    if not same_resource(form.get("resource"), resource_url(request)):
        return _oauth_error(
            "invalid_target", f"this server issues tokens for {resource_url(request)}"
        )
    from mcp.server.auth.handlers.token import TokenHandler
    from mcp.server.auth.middleware.client_auth import ClientAuthenticator

    provider = _provider(request)
    return await TokenHandler(provider, ClientAuthenticator(provider)).handle(request)


@public.post(
    "/oauth/revoke",
    openapi_extra=_form_body("token", "token_type_hint", "client_id", required=("token",)),
)
async def revoke(request: Request) -> Response:
    """Token revocation (RFC 7009): either token of a grant ends the whole grant; an unknown
    token is answered 200 as well."""
    form = await _read_form(request)
    if isinstance(form, JSONResponse):
        return form
    if not form.get("token"):
        return _oauth_error("invalid_request", "token is required")
    provider = _provider(request)
    client = await provider.get_client(form.get("client_id", ""))
    if client is None:
        return _oauth_error("invalid_client", "unknown client_id", 401)
    found: AccessToken | RefreshToken | None = await provider.load_access_token(form["token"])
    if found is None:
        found = await provider.load_refresh_token(client, form["token"])
    if found is not None and found.client_id == client.client_id:
        await provider.revoke_token(found)
    return JSONResponse({}, status_code=200, headers=NO_STORE)  # the client ignores the body


@router.get("/oauth/consent", include_in_schema=False)
async def consent_page() -> FileResponse:
    """The consent page (its script signs in as the page does and asks the person)."""
    return FileResponse(WEB_DIR / "consent.html", headers={"Cache-Control": "no-store"})


class ConsentDecision(BaseModel):
    """The person's answer to an authorization request."""

    model_config = ConfigDict(extra="forbid")

    #: a JSON boolean only ("yes" or 1 is no answer)
    approve: StrictBool


@router.get("/api/oauth/requests/{request_id}")
async def consent_request(
    request_id: str, request: Request, identity: Identity = Depends(need_user)
) -> dict[str, Any]:
    """What a client asks for, for the consent page: its name, where it sends the answer,
    and what it gets."""
    store = OAuthStore(host(request).kernel.db)
    pending = await store.request(request_id[:64])
    client = await store.client(pending[0]) if pending else None
    if pending is None or client is None:
        raise HTTPException(404, "no such authorization request (it may have expired)")
    params = pending[1]
    return {
        "clientId": pending[0],
        "clientName": client.get("client_name") or pending[0],
        "clientUri": client.get("client_uri"),
        "redirectUri": params["redirectUri"],
        "redirectHost": urlsplit(params["redirectUri"]).netloc,
        "resource": params["resource"],
        "scopes": params["scopes"],
        "userId": identity.user_id,
        "grants": GRANTED,
    }


@router.post("/api/oauth/requests/{request_id}")
async def decide(
    request_id: str,
    decision: ConsentDecision,
    request: Request,
    identity: Identity = Depends(need_user),
) -> dict[str, str]:
    """Approve or deny a request, once: the address to send the browser back to the client
    with a code (single use, :data:`CODE_TTL_S` seconds) or ``access_denied``, and its
    ``state``."""
    store = OAuthStore(host(request).kernel.db)
    pending = await store.take_request(request_id[:64])
    if pending is None:
        raise HTTPException(404, "no such authorization request (it may have expired)")
    from mcp.server.auth.provider import construct_redirect_uri

    client_id, params = pending
    answer: dict[str, str | None] = {"state": params.get("state"), "iss": issuer(request)}
    if decision.approve:
        code = secrets.token_urlsafe(32)
        owner = (identity.user_id, identity.mandate_id)
        await store.add_code(
            code, client_id=client_id, owner=owner, params=params, ttl_s=CODE_TTL_S
        )
        answer["code"] = code
    else:
        answer["error"] = "access_denied"
        answer["error_description"] = "the person denied the request"
    return {"redirect": construct_redirect_uri(params["redirectUri"], **answer)}


# the CORS endpoints with their preflights, and a person's own grants: the whole server is
# one router
add_preflights(public)
router.routes.extend(public.routes)
router.routes.extend(grant_routes.router.routes)
