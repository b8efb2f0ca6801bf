"""Calling an OAuth MCP server as a user who signed in: the user's grant, refreshed under
its lock when it has (nearly) expired, signs the requests through the SDK's
``OAuthClientProvider`` (restored from the grant, so it never discovers or registers
again). A call never starts a sign-in: where one would be needed — no grant, a refresh
refused, the server refusing the token even after a refresh — it is
:class:`~nyla_toolbox_mcp.errors.SignInRequired`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from mcp.client.auth import OAuthClientProvider
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthMetadata,
    OAuthToken,
    ProtectedResourceMetadata,
)
from mcp.shared.auth_utils import calculate_token_expiry

from nyla_toolbox_mcp.errors import OAuthError, SignInRequired
from nyla_toolbox_mcp.grants import Grant, GrantStore
from nyla_toolbox_mcp.oauth_flow import http_client, refresh
from nyla_toolbox_mcp.servers import McpServer

T = TypeVar("T")


class _GrantStorage:
    """The SDK's ``TokenStorage`` over one user's grant (a token the SDK renews is kept)."""

    def __init__(self, grants: GrantStore, user_id: str, server: str, grant: Grant) -> None:
        self.grants, self.user_id, self.server, self.grant = grants, user_id, server, grant

    async def get_tokens(self) -> OAuthToken | None:
        return OAuthToken.model_validate(self.grant.tokens)

    async def set_tokens(self, tokens: OAuthToken) -> None:
        dumped = tokens.model_dump(mode="json", exclude_none=True)
        dumped.setdefault("refresh_token", self.grant.refresh_token)
        self.grant = self.grant.model_copy(
            update={"tokens": dumped, "expires_at": calculate_token_expiry(tokens.expires_in)}
        )
        await self.grants.put(self.user_id, self.server, self.grant)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return OAuthClientInformationFull.model_validate(self.grant.client)

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        return None  # the client is the one registered at sign-in


class GrantAuth(OAuthClientProvider):
    """The SDK's provider with what the sign-in discovered and the token's expiry restored;
    where it would send the person to sign in it stops and notes :attr:`sign_in_needed`."""

    def __init__(self, server: McpServer, storage: _GrantStorage) -> None:
        metadata = OAuthClientMetadata(
            redirect_uris=[storage.grant.redirect_uri],  # type: ignore[list-item]
            client_name="nyla",
        )
        super().__init__(
            server_url=server.url or "",
            client_metadata=metadata,
            storage=storage,
            redirect_handler=self._refuse,
            callback_handler=self._never,
        )
        self._grant = storage.grant
        self.sign_in_needed = False

    async def _initialize(self) -> None:
        await super()._initialize()
        grant, context = self._grant, self.context
        context.token_expiry_time = grant.expires_at
        context.oauth_metadata = OAuthMetadata.model_validate(grant.auth_server)
        if grant.resource_metadata is not None:
            prm = ProtectedResourceMetadata.model_validate(grant.resource_metadata)
            context.protected_resource_metadata = prm
            context.auth_server_url = str(prm.authorization_servers[0])

    async def _refuse(self, url: str) -> None:
        self.sign_in_needed = True
        raise OAuthError("a call does not sign in")

    async def _never(self) -> AuthorizationCodeResult:
        raise OAuthError("a call does not sign in")


async def usable_grant(
    grants: GrantStore, user_id: str, server: McpServer, stale: str | None = None
) -> Grant:
    """The user's grant for ``server``, refreshed when it has (nearly) expired or when its
    access token is ``stale`` (the server refused it); :class:`SignInRequired` when there
    is none for this server's URL or it cannot be refreshed."""
    grant = await grants.get(user_id, server.name)
    if grant is None or grant.server_url != server.url:
        raise SignInRequired(server.name)
    if stale is None and not grant.expired():
        return grant
    async with grants.lock(user_id, server.name) as locked:
        grant = locked.grant  # another call (another process) may have refreshed it
        if grant is None or grant.server_url != server.url:
            raise SignInRequired(server.name)
        fresh = grant.tokens.get("access_token") != stale if stale else not grant.expired()
        if fresh:
            return grant
        try:
            async with http_client() as http:
                grant = await refresh(http, grant)
        except OAuthError:
            raise SignInRequired(server.name, "the sign-in expired and was not renewed") from None
        await locked.save(grant)
        return grant


async def authorized(
    grants: GrantStore,
    user_id: str,
    server: McpServer,
    work: Callable[[GrantAuth], Awaitable[T]],
) -> T:
    """``work(auth)`` signed with the user's grant; when the server refuses a token taken
    for valid (revoked, or expired early) it is refreshed once and ``work`` runs again
    (the refusal comes with the session's first request, before any tool ran)."""
    grant = await usable_grant(grants, user_id, server)
    auth = GrantAuth(server, _GrantStorage(grants, user_id, server.name, grant))
    try:
        return await work(auth)
    except Exception:
        if not auth.sign_in_needed:
            raise
    stale = str(grant.tokens.get("access_token"))
    grant = await usable_grant(grants, user_id, server, stale=stale)
    auth = GrantAuth(server, _GrantStorage(grants, user_id, server.name, grant))
    try:
        return await work(auth)
    except Exception:
        if auth.sign_in_needed:
            raise SignInRequired(server.name, "the server refused the sign-in") from None
        raise
