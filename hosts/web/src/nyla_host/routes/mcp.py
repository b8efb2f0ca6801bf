"""nyla as an MCP server over streamable HTTP at ``/mcp`` on ``nyla serve``: the server of
``nyla mcp serve`` (:func:`nyla_host.mcp_server.build_server`), behind the host's own
authentication (the host app's hooks, API tokens, OIDC) or an OAuth access token nyla issued
for this endpoint (:mod:`nyla_host.oauth`), denied by default like every route. A refusal is
a 401 whose ``WWW-Authenticate`` names the protected-resource metadata (RFC 9728), where an
MCP client finds nyla's authorization server. Each request is served by the server built for its caller (kept
for the next of their requests), so a tool can only ever see that caller's data; the
transport is stateless (a session id would be a second credential) and answers JSON, so
there is no stream to GET and no session to DELETE (405).

Any origin may call it, without credentials (:mod:`nyla_host.oauth.cors`): an MCP client
running in a browser sends its bearer header, reads the 401's challenge and the
streamable-HTTP headers; the preflight allows ``mcp-protocol-version`` and
``mcp-session-id``."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from fastapi import APIRouter, Depends, HTTPException, Request, Response
from starlette.types import Receive, Scope, Send

from nyla_host.auth import bearer
from nyla_host.identity import Identity, Role
from nyla_host.oauth.cors import MCP_PREFLIGHT, McpCorsRoute, add_preflights
from nyla_host.oauth.terms import SCOPE
from nyla_host.oauth.urls import resource_metadata_url, resource_url
from nyla_host.state import host

router = APIRouter(tags=["mcp"], route_class=McpCorsRoute)

#: callers whose built server is kept (building one costs ~4 ms of CPU: the tools' schemas)
MAX_SERVERS = 256


class McpServers:
    """The MCP server of each recent caller (its tools hold only the caller's user and
    mandate and read everything per call, so a kept server is never stale)."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel
        self._servers: OrderedDict[tuple[str, str | None], Any] = OrderedDict()

    def server(self, identity: Identity) -> Any:
        """The server of ``identity``'s user and mandate, built on first use."""
        from nyla_host.mcp_server import build_server

        key = (identity.user_id, identity.mandate_id)
        server = self._servers.pop(key, None) or build_server(self.kernel, identity)
        self._servers[key] = server
        while len(self._servers) > MAX_SERVERS:
            self._servers.popitem(last=False)
        return server


class _Served(Response):
    """Hands the request to an MCP transport, which writes the response itself, with the
    headers set on this response (CORS) added to the transport's."""

    def __init__(self, server: Any) -> None:
        super().__init__()
        self.server = server

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        from mcp.server.transport_security import TransportSecuritySettings

        own = [(k, v) for k, v in self.raw_headers if k not in (b"content-length", b"content-type")]

        async def sending(message: Any) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *own]}
            await send(message)

        # a manager runs once: a new one for each request (the call below makes it and
        # ``session_manager`` returns it, with no await in between for another request)
        self.server.streamable_http_app(
            stateless_http=True,
            json_response=True,
            # no DNS-rebinding check: the only credential is the bearer header, which a
            # page a rebound name serves cannot send; the host's name is the operator's
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        manager = self.server.session_manager
        async with manager.run():
            await manager.handle_request(scope, receive, sending)


async def mcp_caller(request: Request) -> Identity:
    """The caller of ``/mcp``: whoever the host's authenticators accept, else the holder of
    an access token bound to this endpoint; 401 naming the resource metadata otherwise."""
    state = host(request)
    identity = await state.auth.identify(request)
    credential = bearer(request)
    if identity is None and credential is not None:
        identity = await state.tokens.verify(credential, audience=resource_url(request))
    if identity is None:
        # the scope to ask for rides along (the 2025-11-25 specification's SHOULD)
        challenge = f'Bearer resource_metadata="{resource_metadata_url(request)}", scope="{SCOPE}"'
        if credential is not None:
            challenge += ', error="invalid_token"'
        raise HTTPException(
            401,
            "sign in: a valid API token, bearer JWT or OAuth access token is required",
            headers={"WWW-Authenticate": challenge},
        )
    return identity


# every identity is a user; the deny-by-default test reads the role a route declares
mcp_caller.nyla_role = Role.USER  # type: ignore[attr-defined]


@router.post("/mcp", include_in_schema=False)
async def mcp_endpoint(request: Request, identity: Identity = Depends(mcp_caller)) -> Response:
    """The MCP streamable-HTTP endpoint, as the authenticated caller."""
    state = host(request)
    # the SDK loads on the first MCP request, not when the host starts
    servers = state.services.get("mcp")
    if servers is None:
        servers = state.services["mcp"] = McpServers(state.kernel)
    return _Served(servers.server(identity))


@router.get("/mcp", include_in_schema=False)
@router.delete("/mcp", include_in_schema=False)
async def no_stream_nor_session(_: Identity = Depends(mcp_caller)) -> Response:
    """405: stateless and JSON, the endpoint has no stream to open and no session to end (an
    answer, with CORS, that a browser client reads as such rather than as a network error)."""
    return Response(status_code=405, headers={"Allow": "POST, OPTIONS"})


add_preflights(router, MCP_PREFLIGHT)
