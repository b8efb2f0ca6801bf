"""Bearer JWTs from an OIDC provider, validated against its JWKS with PyJWT.

The key set is fetched over httpx (with a timeout) from ``jwks_url`` or from the issuer's
discovery document, cached, and fetched again when a token names a key id it does not hold
(key rotation) — at most once per ``min_refresh_s``."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
import jwt
from pydantic import BaseModel

from nyla_host.identity import Identity, Role


class OidcSettings(BaseModel):
    """Where tokens come from and how their claims map to an identity."""

    issuer: str
    audience: str | None = None
    jwks_url: str | None = None
    algorithms: list[str] = ["RS256", "ES256"]
    user_claim: str = "sub"
    mandate_claim: str = "mandate"
    roles_claim: str = "roles"
    timeout_s: float = 5.0
    cache_s: float = 600.0
    min_refresh_s: float = 30.0
    leeway_s: float = 30.0


class OidcVerifier:
    """Validates bearer JWTs: signature (JWKS), issuer, audience, expiry."""

    def __init__(self, settings: OidcSettings, transport: httpx.AsyncBaseTransport | None = None):
        self.settings = settings
        self._transport = transport
        self._keys: jwt.PyJWKSet | None = None
        self._fetched_at = 0.0
        self._lock = asyncio.Lock()

    async def verify(self, token: str) -> Identity | None:
        """The identity of a valid token; ``None`` when it is not a JWT of this issuer."""
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            return None
        key = await self._key(header.get("kid"))
        if key is None:
            return None
        s = self.settings
        try:
            claims = jwt.decode(
                token,
                key=key.key,
                algorithms=s.algorithms,
                audience=s.audience,
                issuer=s.issuer,
                leeway=s.leeway_s,
                options={"verify_aud": s.audience is not None, "require": ["exp", "iss"]},
            )
        except jwt.PyJWTError:
            return None
        return self._identity(claims)

    def _identity(self, claims: dict[str, Any]) -> Identity | None:
        s = self.settings
        user = claims.get(s.user_claim)
        if not isinstance(user, str) or not user:
            return None
        roles = claims.get(s.roles_claim) or []
        if isinstance(roles, str):
            roles = roles.split()
        role = Role.USER
        for name in roles if isinstance(roles, list) else []:
            try:
                candidate = Role.parse(str(name))
            except ValueError:
                continue
            role = candidate if candidate.rank > role.rank else role
        mandate = claims.get(s.mandate_claim)
        return Identity(
            user_id=user,
            mandate_id=str(mandate) if mandate else None,
            role=role,
            via="oidc",
            name=str(claims.get("name") or claims.get("email") or ""),
            claims=claims,
        )

    async def _key(self, kid: str | None) -> jwt.PyJWK | None:
        now = time.monotonic()
        async with self._lock:
            stale = self._keys is None or now - self._fetched_at > self.settings.cache_s
            if stale or (
                self._find(kid) is None and now - self._fetched_at > self.settings.min_refresh_s
            ):
                await self._refresh()
            return self._find(kid)

    def _find(self, kid: str | None) -> jwt.PyJWK | None:
        if self._keys is None:
            return None
        keys = list(self._keys.keys)
        if kid is None:
            return keys[0] if len(keys) == 1 else None
        return next((k for k in keys if k.key_id == kid), None)

    async def _refresh(self) -> None:
        async with httpx.AsyncClient(
            transport=self._transport, timeout=self.settings.timeout_s
        ) as client:
            url = self.settings.jwks_url
            if url is None:
                discovery = self.settings.issuer.rstrip("/") + "/.well-known/openid-configuration"
                response = await client.get(discovery)
                response.raise_for_status()
                url = response.json()["jwks_uri"]
            response = await client.get(url)
            response.raise_for_status()
            self._keys = jwt.PyJWKSet.from_dict(response.json())
            self._fetched_at = time.monotonic()
