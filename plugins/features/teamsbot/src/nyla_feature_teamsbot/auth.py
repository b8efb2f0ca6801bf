"""Is an incoming activity from the Bot Connector service? Its JWT, checked as Microsoft's
"Authenticate requests from the Bot Connector service" lists:

1. an ``Authorization: Bearer`` header;
2. a JWT signed with RS256 by a key of Bot Framework's OpenID metadata (its JWKS), the key
   found by the token's ``kid`` and endorsed for the activity's channel (``msteams``);
3. issuer ``https://api.botframework.com``, audience the bot's Microsoft App ID;
4. within its validity period, five minutes of clock skew allowed;
5. its ``serviceurl`` claim equal to the activity's ``serviceUrl`` (the bot answers there).

Anything else is an :class:`AuthError`: the host answers 401 and nothing runs. The metadata
and keys are cached (a day); a ``kid`` not among them fetches the keys again, at most once
per five minutes, so a stream of forged ``kid`` values cannot make the bot hammer Microsoft.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any

import httpx
import jwt
from jwt.algorithms import RSAAlgorithm

from nyla_feature_teamsbot.activity import Activity
from nyla_feature_teamsbot.settings import ISSUER, TeamsSettings

#: how long fetched keys are trusted before they are fetched again
KEYS_TTL_S = 24 * 3600
#: the least time between two fetches caused by an unknown ``kid``
REFETCH_S = 300


class AuthError(Exception):
    """An activity whose credential does not hold; ``reason`` says which check failed."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class ChannelAuth:
    """Checks the Bot Connector service's JWT on every incoming activity."""

    def __init__(
        self,
        settings: TeamsSettings,
        http: httpx.AsyncClient,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settings = settings
        self.http = http
        self.clock = clock
        self._keys: dict[str, dict[str, Any]] = {}
        self._parsed: dict[str, Any] = {}  # kid -> the public key, parsed once
        self._fetched_at: float | None = None
        self._lock = asyncio.Lock()

    async def verify(self, authorization: str | None, activity: Activity) -> dict[str, Any]:
        """The token's claims when every check holds, else :class:`AuthError`."""
        app_id = self.settings.app_id
        if not app_id:
            raise AuthError("the bot has no app id (NYLA_TEAMS_APP_ID): no activity is trusted")
        token = _bearer(authorization)
        header = _header(token)
        if activity.channel_id not in self.settings.channels:
            raise AuthError(f"channel {activity.channel_id!r} is not served")
        jwk = await self._key(header["kid"])
        endorsements = jwk.get("endorsements")
        if not isinstance(endorsements, list) or activity.channel_id not in endorsements:
            raise AuthError(f"the signing key is not endorsed for {activity.channel_id!r}")
        claims = _decode(
            token, self._public_key(header["kid"], jwk), app_id, self.settings.clock_skew_s
        )
        service_url = claims.get("serviceurl", claims.get("serviceUrl"))
        if not isinstance(service_url, str) or _norm(service_url) != _norm(activity.service_url):
            raise AuthError("the token's serviceurl does not match the activity's serviceUrl")
        return claims

    async def _key(self, kid: str) -> dict[str, Any]:
        async with self._lock:
            now = self.clock()
            stale = self._fetched_at is None or now - self._fetched_at > KEYS_TTL_S
            unknown = kid not in self._keys
            may_refetch = self._fetched_at is None or now - self._fetched_at > REFETCH_S
            if stale or (unknown and may_refetch):
                await self._fetch(now)
        key = self._keys.get(kid)
        if key is None:
            raise AuthError(f"unknown signing key {kid!r}")
        return key

    def _public_key(self, kid: str, jwk: dict[str, Any]) -> Any:
        key = self._parsed.get(kid)
        if key is None:
            try:
                key = self._parsed[kid] = RSAAlgorithm.from_jwk(json.dumps(jwk))
            except (jwt.PyJWTError, ValueError, KeyError) as exc:
                raise AuthError(f"the signing key {kid!r} is not an RSA key: {exc}") from exc
        return key

    async def _fetch(self, now: float) -> None:
        try:
            metadata = await self._json(self.settings.openid_url)
            jwks_uri = metadata.get("jwks_uri")
            if not isinstance(jwks_uri, str):
                raise AuthError("the OpenID metadata names no jwks_uri")
            keys = (await self._json(jwks_uri)).get("keys")
        except (httpx.HTTPError, ValueError) as exc:
            raise AuthError(f"the channel's signing keys are unavailable: {exc}") from exc
        if not isinstance(keys, list):
            raise AuthError("the channel's key set holds no keys")
        self._keys = {k["kid"]: k for k in keys if isinstance(k, dict) and "kid" in k}
        self._parsed = {}
        self._fetched_at = now

    async def _json(self, url: str) -> dict[str, Any]:
        response = await self.http.get(url, timeout=self.settings.timeout_s)
        response.raise_for_status()
        data = response.json()
        if not isinstance(data, dict):
            raise ValueError(f"{url} answered no JSON object")
        return data


def _bearer(authorization: str | None) -> str:
    scheme, _, value = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        raise AuthError("no bearer token")
    return value.strip()


def _header(token: str) -> dict[str, Any]:
    try:
        header = jwt.get_unverified_header(token)
    except jwt.PyJWTError as exc:
        raise AuthError(f"not a JWT: {exc}") from exc
    if header.get("alg") != "RS256":
        raise AuthError(f"algorithm {header.get('alg')!r} is not accepted (RS256 only)")
    if not isinstance(header.get("kid"), str):
        raise AuthError("the token names no signing key (kid)")
    return header


def _decode(token: str, key: Any, app_id: str, leeway: int) -> dict[str, Any]:
    try:
        return jwt.decode(
            token,
            key=key,
            algorithms=["RS256"],
            audience=app_id,
            issuer=ISSUER,
            leeway=leeway,
            options={"require": ["exp", "iss", "aud"]},
        )
    except jwt.PyJWTError as exc:
        raise AuthError(f"{type(exc).__name__}: {exc}") from exc


def _norm(url: str) -> str:
    return url.rstrip("/")
