"""nyla's storage behind the MCP SDK's authorization-server handlers (the SDK's
``OAuthAuthorizationServerProvider``): the handlers parse and check the requests (PKCE S256,
redirect URI, code expiry, client), this provider keeps the state and issues nyla tokens.

An access token is a nyla API token bound to the MCP endpoint's URL, named after the client,
with the user and mandate of the person who approved (role ``user``, whatever theirs). A
refresh hands out a new secret for the same token (the old one stops at once) and a new
refresh token; a replayed refresh token, or a second use of a code, revokes the grant."""

from __future__ import annotations

import logging
import re
import secrets
from datetime import UTC, datetime, timedelta

from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    AuthorizeError,
    IdentityAssertionParams,
    RefreshToken,
    TokenError,
)
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

from nyla_host.oauth.store import Grant, OAuthStore
from nyla_host.oauth.terms import (
    ACCESS_TTL_S,
    REFRESH_TTL_S,
    REQUEST_TTL_S,
    SCOPE,
    same_resource,
)
from nyla_host.tokens import TokenStore, split_token

log = logging.getLogger(__name__)

#: an S256 challenge: the base64url SHA-256 of the verifier, unpadded
_S256 = re.compile(r"[A-Za-z0-9_-]{43}")


class NylaProvider:
    """The SDK's provider protocol over :class:`OAuthStore` and the API tokens, for the MCP
    endpoint at ``resource``; ``consent_url`` is the page where the person decides."""

    def __init__(
        self, store: OAuthStore, tokens: TokenStore, *, resource: str, consent_url: str
    ) -> None:
        self.store = store
        self.tokens = tokens
        self.resource = resource
        self.consent_url = consent_url

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        """A registered client."""
        if not client_id or len(client_id) > 64:
            return None
        info = await self.store.client(client_id)
        return OAuthClientInformationFull.model_validate(info) if info else None

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        """Registration is nyla's own route (:mod:`nyla_host.oauth.registration`)."""
        raise NotImplementedError("clients register through nyla_host.oauth.registration")

    async def authorize(
        self, client: OAuthClientInformationFull, params: AuthorizationParams
    ) -> str:
        """Keep the checked request and send the browser to the consent page."""
        if not same_resource(params.resource, self.resource):
            raise AuthorizeError("invalid_target", f"this server issues tokens for {self.resource}")
        if not _S256.fullmatch(params.code_challenge):
            raise AuthorizeError("invalid_request", "code_challenge must be an S256 challenge")
        request_id = secrets.token_urlsafe(24)
        kept = {
            "redirectUri": str(params.redirect_uri),
            "explicit": params.redirect_uri_provided_explicitly,
            "codeChallenge": params.code_challenge,
            "state": params.state,
            "scopes": params.scopes or [SCOPE],
            "resource": self.resource,
        }
        await self.store.add_request(request_id, client.client_id, kept, REQUEST_TTL_S)
        return f"{self.consent_url}?request={request_id}"

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        """An unused code of this client. A used one is a replay: the grant it gave ends."""
        row = await self.store.code(authorization_code)
        if row is None or row.client_id != client.client_id:
            return None
        if row.used:
            if row.token_id:
                log.warning("authorization code used twice: grant %s revoked", row.token_id)
                await self.tokens.revoke(row.token_id)
            return None
        p = row.params
        return AuthorizationCode(
            code=authorization_code,
            scopes=p["scopes"],
            expires_at=row.expires_at.timestamp(),
            client_id=row.client_id,
            code_challenge=p["codeChallenge"],
            redirect_uri=p["redirectUri"],
            redirect_uri_provided_explicitly=p["explicit"],
            resource=p["resource"],
            subject=row.user_id,
        )

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        """The code, once: a new access token (a nyla token bound to the resource) and a
        refresh token."""
        row = await self.store.code(authorization_code.code)
        if row is None or not await self.store.use_code(authorization_code.code):
            raise TokenError("invalid_grant", "authorization code already used or expired")
        name = f"MCP: {client.client_name or client.client_id}"[:200]
        access, info = await self.tokens.create(
            row.user_id,
            mandate_id=row.mandate_id,
            name=name,
            audience=self.resource,
            expires_in_days=ACCESS_TTL_S / 86400,
        )
        refresh = secrets.token_urlsafe(32)
        grant = Grant(
            token_id=info.id,
            client_id=client.client_id,
            user_id=row.user_id,
            resource=self.resource,
            scopes=list(authorization_code.scopes),
            refresh_expires_at=datetime.now(UTC) + timedelta(seconds=REFRESH_TTL_S),
        )
        await self.store.add_grant(authorization_code.code, grant, refresh)
        return _answer(access, refresh, grant.scopes)

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        """The grant of a current refresh token whose access token is not revoked. A refresh
        token replaced by a rotation, presented again, revokes its grant."""
        current, replaced = await self.store.grant_by_refresh(refresh_token)
        if replaced is not None:
            log.warning("a rotated refresh token was replayed: grant %s revoked", replaced.token_id)
            await self.tokens.revoke(replaced.token_id)
            return None
        if current is None or current.client_id != client.client_id:
            return None
        if not await self.store.token_active(current.token_id):
            return None
        return RefreshToken(
            token=refresh_token,
            client_id=current.client_id,
            scopes=current.scopes,
            expires_at=int(current.refresh_expires_at.timestamp()),
            resource=current.resource,
            subject=current.user_id,
        )

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        """A new secret for the grant's access token and a new refresh token."""
        refresh = secrets.token_urlsafe(32)
        token_id = await self.store.rotate(refresh_token.token, refresh, REFRESH_TTL_S)
        access = (
            await self.tokens.reissue(token_id, expires_in_s=ACCESS_TTL_S) if token_id else None
        )
        if access is None:
            raise TokenError("invalid_grant", "the refresh token is no longer valid")
        return _answer(access, refresh, scopes)

    async def exchange_identity_assertion(
        self, client: OAuthClientInformationFull, params: IdentityAssertionParams
    ) -> OAuthToken:
        """No identity-assertion grant (the SDK's handler refuses it before asking)."""
        raise TokenError("unsupported_grant_type", "the JWT bearer grant is not supported")

    async def load_access_token(self, token: str) -> AccessToken | None:
        """A valid access token of a grant (for revocation)."""
        parts = split_token(token)
        identity = await self.tokens.verify(token, audience=self.resource) if parts else None
        grant = await self.store.grant(parts[0]) if parts and identity else None
        if grant is None:
            return None
        return AccessToken(
            token=token,
            client_id=grant.client_id,
            scopes=grant.scopes,
            resource=grant.resource,
            subject=grant.user_id,
        )

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        """End the grant of either token: its access token is revoked, which also makes its
        refresh token worthless."""
        parts = split_token(token.token)
        if parts is not None:
            await self.tokens.revoke(parts[0])
            return
        current, _ = await self.store.grant_by_refresh(token.token)
        if current is not None:
            await self.tokens.revoke(current.token_id)


def _answer(access: str, refresh: str, scopes: list[str]) -> OAuthToken:
    return OAuthToken(
        access_token=access,
        token_type="Bearer",
        expires_in=ACCESS_TTL_S,
        refresh_token=refresh,
        scope=" ".join(scopes),
    )
