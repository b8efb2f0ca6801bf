"""nyla as an MCP server over streamable HTTP at ``/mcp`` on ``nyla serve``: the server of
``nyla mcp serve`` (:func:`nyla_host.mcp_server.build_server`), behind the host's own
authentication (``need_user``: API tokens, then OIDC and the host app's hooks), denied by
default like every route. Each request is served by a server built for its caller, so a tool
can only ever see that caller's data; the transport is stateless (a session id would be a
second credential) and answers JSON, so there is no stream to GET and no session to DELETE
(405)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request, Response
from starlette.types import Receive, Scope, Send

from nyla_host.auth import need_user
from nyla_host.identity import Identity
from nyla_host.state import host

router = APIRouter(tags=["mcp"])


class _Served(Response):
    """Hands the request to an MCP transport, which writes the response itself."""

    def __init__(self, kernel: Any, identity: Identity) -> None:
        super().__init__()
        self.kernel = kernel
        self.identity = identity

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # the SDK loads on the first MCP request, not when the host starts
        from mcp.server.transport_security import TransportSecuritySettings

        from nyla_host.mcp_server import build_server

        server = build_server(self.kernel, self.identity)
        # no DNS-rebinding check: the only credential is the bearer header, which a page a
        # rebound name serves cannot send; the host's name is the operator's to choose
        server.streamable_http_app(
            stateless_http=True,
            json_response=True,
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        manager = server.session_manager
        async with manager.run():
            await manager.handle_request(scope, receive, send)


@router.post("/mcp", include_in_schema=False)
async def mcp_endpoint(request: Request, identity: Identity = Depends(need_user)) -> Response:
    """The MCP streamable-HTTP endpoint, as the authenticated caller."""
    return _Served(host(request).kernel, identity)
