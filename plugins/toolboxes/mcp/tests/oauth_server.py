"""An MCP server over streamable HTTP that is its own OAuth authorization server, for the
tests (run as a process: ``python oauth_server.py PORT``): the SDK's ``mcp.server.auth``
with a provider that approves every authorization at once (no login page), dynamic client
registration, PKCE, refresh tokens that rotate, revocation, and access tokens bound to the
resource they were asked for (``validate_token_resource``). ``/test/expire`` makes every
access token expire now and ``/test/state`` tells what was issued and revoked, so a test can
see a refresh and a revocation happen."""

from __future__ import annotations

import secrets
import sys
import time

from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from mcp.types import ToolAnnotations
from starlette.requests import Request
from starlette.responses import JSONResponse

#: how long an access token lives (refresh is tested with /test/expire, not by waiting)
ACCESS_TTL_S = 3600


class AutoApprove:
    """An in-memory authorization server that approves every request (tests only)."""

    def __init__(self) -> None:
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}
        self.revoked: list[str] = []
        self.refreshed = 0

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        self.clients[client_info.client_id or ""] = client_info

    async def authorize(
        self, client: OAuthClientInformationFull, params: AuthorizationParams
    ) -> str:
        code = AuthorizationCode(
            code=secrets.token_urlsafe(24),
            scopes=params.scopes or ["tools"],
            expires_at=time.time() + 300,
            client_id=client.client_id or "",
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
            subject="ada",
        )
        self.codes[code.code] = code
        return construct_redirect_uri(str(params.redirect_uri), code=code.code, state=params.state)

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        return self.codes.get(authorization_code)

    def _issue(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        access, refresh = f"at-{secrets.token_hex(16)}", f"rt-{secrets.token_hex(16)}"
        expires = int(time.time()) + ACCESS_TTL_S
        self.access[access] = AccessToken(
            token=access, client_id=client_id, scopes=scopes, expires_at=expires, resource=resource
        )
        self.refresh[refresh] = RefreshToken(
            token=refresh, client_id=client_id, scopes=scopes, resource=resource
        )
        return OAuthToken(
            access_token=access,
            expires_in=ACCESS_TTL_S,
            refresh_token=refresh,
            scope=" ".join(scopes),
        )

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        self.codes.pop(authorization_code.code, None)
        return self._issue(
            authorization_code.client_id, authorization_code.scopes, authorization_code.resource
        )

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        self.refresh.pop(refresh_token.token, None)  # rotated: the old one is spent
        self.refreshed += 1
        return self._issue(
            refresh_token.client_id, scopes or refresh_token.scopes, refresh_token.resource
        )

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access.get(token)
        if found is None or (found.expires_at and found.expires_at < time.time()):
            return None
        return found

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.revoked.append(token.token)
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)


def build(port: int) -> MCPServer:
    """The server on ``127.0.0.1:port`` (MCP at ``/mcp``)."""
    base = f"http://127.0.0.1:{port}"
    provider = AutoApprove()
    server = MCPServer(
        "oauthdemo",
        auth_server_provider=provider,
        auth=AuthSettings(
            issuer_url=base,
            resource_server_url=f"{base}/mcp",
            validate_token_resource=True,
            required_scopes=["tools"],
            client_registration_options=ClientRegistrationOptions(
                enabled=True, valid_scopes=["tools"], default_scopes=["tools"]
            ),
            revocation_options=RevocationOptions(enabled=True),
        ),
    )

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def whoami() -> str:
        """Who the token says the caller is."""
        return "you are ada, signed in with OAuth"

    @server.custom_route("/test/expire", methods=["POST"])
    async def expire(request: Request) -> JSONResponse:
        for token in provider.access.values():
            token.expires_at = int(time.time()) - 1
        return JSONResponse({"expired": len(provider.access)})

    @server.custom_route("/test/state", methods=["GET"])
    async def state(request: Request) -> JSONResponse:
        return JSONResponse(
            {
                "clients": len(provider.clients),
                "refreshed": provider.refreshed,
                "revoked": len(provider.revoked),
                "live": sorted(provider.access) + sorted(provider.refresh),
            }
        )

    return server


if __name__ == "__main__":
    import uvicorn

    port = int(sys.argv[1])
    app = build(port).streamable_http_app(json_response=True, stateless_http=True)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
