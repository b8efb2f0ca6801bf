"""Signing in to an MCP server as the MCP authorization spec (2025-06-18 / 2025-11-25)
describes, with the ``mcp`` SDK's discovery helpers and models: the server's 401 and its
``WWW-Authenticate`` lead to the protected resource metadata (RFC 9728), that to the
authorization server's metadata (RFC 8414, or OpenID discovery), then dynamic client
registration (RFC 7591) unless a client id is configured, an authorization code with PKCE
(S256) and the ``resource`` parameter (RFC 8707), the token exchange, refresh and
revocation (RFC 7009).

The sign-in is cut in two (:func:`begin` and :func:`finish`) so the callback may arrive in
another request, or another process, than the start: what lies between is a
:class:`~nyla_toolbox_mcp.grants.Pending`, sealed at rest."""

from __future__ import annotations

import base64
import secrets
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

import httpx2
from mcp.client.auth.oauth2 import PKCEParameters, check_registration_usable
from mcp.client.auth.utils import (
    build_oauth_authorization_server_metadata_discovery_urls,
    build_protected_resource_metadata_discovery_urls,
    create_oauth_metadata_request,
    extract_resource_metadata_from_www_auth,
    extract_scope_from_www_auth,
    get_client_metadata_scopes,
    handle_auth_metadata_response,
    handle_protected_resource_response,
    handle_registration_response,
    validate_authorization_response_iss,
    validate_metadata_issuer,
)
from mcp.shared.auth import (
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthMetadata,
    OAuthToken,
    ProtectedResourceMetadata,
)
from mcp.shared.auth_utils import (
    calculate_token_expiry,
    check_resource_allowed,
    resource_url_from_server_url,
)
from mcp.types import LATEST_PROTOCOL_VERSION

from nyla_toolbox_mcp.errors import OAuthError
from nyla_toolbox_mcp.grants import Grant, Pending
from nyla_toolbox_mcp.servers import McpServer

#: the bound on each request to the server or its authorization server
HTTP_TIMEOUT_S = 20.0
#: how nyla names itself when it registers (RFC 7591 ``client_name``)
CLIENT_NAME = "nyla"


def http_client() -> httpx2.AsyncClient:
    """A client for the sign-in's requests: bounded, following no redirect (RFC 9728 and
    8414 documents are fetched where they are)."""
    return httpx2.AsyncClient(timeout=HTTP_TIMEOUT_S, follow_redirects=False)


@dataclass
class Discovery:
    """What the server and its authorization server said about signing in."""

    resource: str
    auth_server: OAuthMetadata
    resource_metadata: ProtectedResourceMetadata | None
    scope: str | None


async def _probe(http: httpx2.AsyncClient, server: McpServer) -> httpx2.Response:
    """An MCP ``initialize`` without a token: an OAuth server answers 401 and names its
    resource metadata in ``WWW-Authenticate``."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": LATEST_PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": CLIENT_NAME, "version": "1"},
        },
    }
    headers = {
        **server.headers,
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": LATEST_PROTOCOL_VERSION,
    }
    return await http.post(server.url or "", json=body, headers=headers)


async def _resource_metadata(
    http: httpx2.AsyncClient, server_url: str, probe: httpx2.Response
) -> ProtectedResourceMetadata | None:
    """RFC 9728: from the URL the 401 named, else the well-known ones; its ``resource``
    must be the server (or a parent of it), else a token for it could serve another."""
    urls = build_protected_resource_metadata_discovery_urls(
        extract_resource_metadata_from_www_auth(probe), server_url
    )
    for url in urls:
        found = await handle_protected_resource_response(
            await http.send(create_oauth_metadata_request(url))
        )
        if found is None:
            continue
        wanted = resource_url_from_server_url(server_url)
        if not check_resource_allowed(wanted, str(found.resource)):
            raise OAuthError(
                f"the server's resource metadata names another resource ({found.resource})"
            )
        return found
    return None


async def discover(http: httpx2.AsyncClient, server: McpServer) -> Discovery:
    """The resource, authorization server and scopes of ``server``."""
    server_url = server.url or ""
    probe = await _probe(http, server)
    if probe.status_code not in (401, 403):
        raise OAuthError(
            f"the server did not ask for a sign-in (HTTP {probe.status_code} without a token)"
        )
    prm = await _resource_metadata(http, server_url, probe)
    issuer = str(prm.authorization_servers[0]) if prm else None
    asm: OAuthMetadata | None = None
    for url in build_oauth_authorization_server_metadata_discovery_urls(issuer, server_url):
        ok, asm = await handle_auth_metadata_response(
            await http.send(create_oauth_metadata_request(url))
        )
        if not ok or asm is not None:
            break
    if asm is None:
        raise OAuthError("the server's authorization server publishes no metadata")
    if issuer is not None:
        validate_metadata_issuer(asm, issuer)
    resource = resource_url_from_server_url(server_url)
    if prm is not None:
        resource = str(prm.resource)
    scope = (server.oauth.scope if server.oauth else None) or get_client_metadata_scopes(
        extract_scope_from_www_auth(probe), prm, asm, ["authorization_code", "refresh_token"]
    )
    return Discovery(resource=resource, auth_server=asm, resource_metadata=prm, scope=scope)


async def register(
    http: httpx2.AsyncClient, server: McpServer, found: Discovery, redirect_uri: str
) -> OAuthClientInformationFull:
    """The client nyla signs in as: the configured one, else one registered now (RFC 7591)."""
    if server.oauth and server.oauth.client_id:
        secret = server.oauth.client_secret
        return OAuthClientInformationFull(
            client_id=server.oauth.client_id,
            client_secret=secret,
            redirect_uris=[redirect_uri],  # type: ignore[list-item]
            token_endpoint_auth_method="client_secret_post" if secret else "none",
        )
    endpoint = found.auth_server.registration_endpoint
    if endpoint is None:
        raise OAuthError(
            "the authorization server registers no clients: add the server with --client-id"
        )
    metadata = OAuthClientMetadata(
        client_name=CLIENT_NAME,
        redirect_uris=[redirect_uri],  # type: ignore[list-item]
        grant_types=["authorization_code", "refresh_token"],
        scope=found.scope,
    )
    body = metadata.model_dump(by_alias=True, mode="json", exclude_none=True)
    client = await handle_registration_response(await http.post(str(endpoint), json=body))
    check_registration_usable(client)
    return client


async def begin(
    http: httpx2.AsyncClient, server: McpServer, redirect_uri: str, who: dict[str, Any]
) -> tuple[str, Pending]:
    """The URL to send the person to, and the sign-in to keep until the callback (``who``:
    ``user_id``, ``scope``, ``owner``, ``relist``)."""
    found = await discover(http, server)
    client = await register(http, server, found, redirect_uri)
    pkce = PKCEParameters.generate()
    state = secrets.token_urlsafe(32)
    params = {
        "response_type": "code",
        "client_id": client.client_id,
        "redirect_uri": redirect_uri,
        "state": state,
        "code_challenge": pkce.code_challenge,
        "code_challenge_method": "S256",
        "resource": found.resource,
    }
    if found.scope:
        params["scope"] = found.scope
    url = f"{found.auth_server.authorization_endpoint}?{urlencode(params)}"
    pending = Pending(
        state=state,
        server=server.name,
        server_url=server.url or "",
        verifier=pkce.code_verifier,
        redirect_uri=redirect_uri,
        resource=found.resource,
        client=client.model_dump(mode="json", exclude_none=True),
        auth_server=found.auth_server.model_dump(mode="json", exclude_none=True),
        resource_metadata=None
        if found.resource_metadata is None
        else found.resource_metadata.model_dump(mode="json", exclude_none=True),
        **who,
    )
    return url, pending


def _client_auth(client: OAuthClientInformationFull, data: dict[str, str]) -> dict[str, str]:
    """Authenticate a token request as the client registered (RFC 6749 §2.3.1)."""
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    data["client_id"] = client.client_id or ""
    method, secret = client.token_endpoint_auth_method, client.client_secret
    if method == "client_secret_basic" and secret:
        pair = f"{quote(client.client_id or '', safe='')}:{quote(secret, safe='')}"
        headers["Authorization"] = f"Basic {base64.b64encode(pair.encode()).decode()}"
    elif secret and method in (None, "client_secret_post"):
        data["client_secret"] = secret
    return headers


async def _token_request(
    http: httpx2.AsyncClient, grant: Grant | Pending, data: dict[str, str]
) -> OAuthToken:
    client = OAuthClientInformationFull.model_validate(grant.client)
    endpoint = str(OAuthMetadata.model_validate(grant.auth_server).token_endpoint)
    data["resource"] = grant.resource
    headers = _client_auth(client, data)
    response = await http.post(endpoint, data=data, headers=headers)
    if response.status_code != 200:
        error = _error_code(response)
        raise OAuthError(f"the token endpoint refused ({response.status_code} {error})", error)
    return OAuthToken.model_validate_json(response.content)


def _error_code(response: httpx2.Response) -> str:
    """The OAuth ``error`` code of a refusal (never its description, which may echo input)."""
    try:
        code = response.json().get("error")
    except ValueError:
        return "unreadable answer"
    return code if isinstance(code, str) and code.isascii() and len(code) < 64 else "error"


async def finish(
    http: httpx2.AsyncClient, pending: Pending, code: str, iss: str | None = None
) -> Grant:
    """Exchange the callback's ``code`` (with the PKCE verifier) for the tokens."""
    asm = OAuthMetadata.model_validate(pending.auth_server)
    validate_authorization_response_iss(iss, asm)  # RFC 9207, when the server sends it
    data = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": pending.redirect_uri,
        "code_verifier": pending.verifier,
    }
    tokens = await _token_request(http, pending, data)
    return Grant(
        server_url=pending.server_url,
        resource=pending.resource,
        tokens=tokens.model_dump(mode="json", exclude_none=True),
        expires_at=calculate_token_expiry(tokens.expires_in),
        client=pending.client,
        auth_server=pending.auth_server,
        resource_metadata=pending.resource_metadata,
        redirect_uri=pending.redirect_uri,
    )


async def refresh(http: httpx2.AsyncClient, grant: Grant) -> Grant:
    """The grant with new tokens for its refresh token (kept when the server sends none)."""
    if grant.refresh_token is None:
        raise OAuthError("the sign-in has expired and cannot be refreshed", "no_refresh_token")
    data = {"grant_type": "refresh_token", "refresh_token": grant.refresh_token}
    tokens = await _token_request(http, grant, data)
    dumped = tokens.model_dump(mode="json", exclude_none=True)
    dumped.setdefault("refresh_token", grant.refresh_token)
    dumped.setdefault("scope", grant.tokens.get("scope"))
    return grant.model_copy(
        update={"tokens": dumped, "expires_at": calculate_token_expiry(tokens.expires_in)}
    )


async def revoke(http: httpx2.AsyncClient, grant: Grant) -> bool:
    """Revoke the grant's tokens where the authorization server offers it (RFC 7009);
    whether it does."""
    endpoint = OAuthMetadata.model_validate(grant.auth_server).revocation_endpoint
    if endpoint is None:
        return False
    client = OAuthClientInformationFull.model_validate(grant.client)
    for hint in ("refresh_token", "access_token"):
        token = grant.tokens.get(hint)
        if isinstance(token, str) and token:
            data = {"token": token, "token_type_hint": hint}
            headers = _client_auth(client, data)
            await http.post(str(endpoint), data=data, headers=headers)
    return True
