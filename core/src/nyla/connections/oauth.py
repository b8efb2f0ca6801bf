"""Standard OAuth 2.0 exchanges over the vendor HTTP layer: refresh (RFC 6749 §6) and the
device authorization grant the CLI uses to connect (RFC 8628)."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from nyla.config import config_value
from nyla.connections.errors import (
    ConnectorError,
    NeedsReconsentError,
    VendorAuthError,
    VendorBadRequestError,
)
from nyla.connections.http import VendorHttp
from nyla.errors import ConfigurationError
from nyla.models.datasource import OAuthConfig, TokenGrant

#: token-endpoint errors that mean the consent is gone (RFC 6749 §5.2)
RECONSENT_ERRORS = ("invalid_grant", "unauthorized_client", "consent_required")


def client_credentials(oauth: OAuthConfig, service: str) -> dict[str, str]:
    """``client_id`` (and ``client_secret`` when the service uses one) from the settings the
    connector names."""
    client_id = config_value(oauth.client_id_setting) if oauth.client_id_setting else None
    if not client_id:
        raise ConfigurationError(
            f"{service}: set {oauth.client_id_setting or 'the client id setting'} "
            "(environment or config file) to the app's OAuth client id"
        )
    out = {"client_id": client_id}
    if oauth.client_secret_setting:
        secret = config_value(oauth.client_secret_setting)
        if secret:
            out["client_secret"] = secret
    return out


async def oauth2_refresh(
    http: VendorHttp, oauth: OAuthConfig, refresh_token: str, *, service: str
) -> TokenGrant:
    """Exchange a refresh token at ``oauth.token_url``; ``invalid_grant`` raises
    :class:`NeedsReconsentError` (never retried)."""
    form = {
        "grant_type": "refresh_token",
        "refresh_token": refresh_token,
        **client_credentials(oauth, service),
    }
    if oauth.scopes:
        form["scope"] = " ".join(oauth.scopes)
    try:
        response = await http.request("POST", oauth.token_url, data=form)
    except (VendorBadRequestError, VendorAuthError) as exc:
        if any(code in str(exc) for code in RECONSENT_ERRORS):
            raise NeedsReconsentError(
                f"{service}: the consent was withdrawn or expired ({exc}); connect again",
                service=service,
                status_code=exc.status_code,
            ) from exc
        raise
    return grant_from_token_response(response.json())


async def device_code_flow(
    http: VendorHttp,
    oauth: OAuthConfig,
    *,
    service: str,
    show: Callable[[str, str, str], None],
    clock: Callable[[], float] = time.monotonic,
) -> TokenGrant:
    """Run the device authorization grant: ask for a code, ``show(url, code, message)`` it to
    the user, poll the token endpoint until the user approved, denied or the code expired."""
    if not oauth.device_code_url:
        raise ConfigurationError(f"{service} has no device-code sign-in; paste a token instead")
    credentials = client_credentials(oauth, service)
    start = await http.request(
        "POST",
        oauth.device_code_url,
        data={**credentials, "scope": " ".join(oauth.scopes)},
    )
    device: dict[str, Any] = start.json()
    show(
        str(device.get("verification_uri") or device.get("verification_url") or ""),
        str(device.get("user_code", "")),
        str(device.get("message", "")),
    )
    interval = float(device.get("interval") or 5)
    deadline = clock() + float(device.get("expires_in") or 900)
    form = {
        **credentials,
        "grant_type": "urn:ietf:params:oauth:grant-type:device_code",
        "device_code": device["device_code"],
    }
    while clock() < deadline:
        await http.sleep(interval)
        try:
            return grant_from_token_response(
                (await http.request("POST", oauth.token_url, data=form)).json()
            )
        except (VendorBadRequestError, VendorAuthError) as exc:
            if "authorization_pending" in str(exc):
                continue
            if "slow_down" in str(exc):
                interval += 5
                continue
            raise ConnectorError(f"{service}: sign-in failed: {exc}", service=service) from exc
    raise ConnectorError(f"{service}: the sign-in code expired before it was approved")


def grant_from_token_response(body: dict[str, Any], *, now: datetime | None = None) -> TokenGrant:
    """A :class:`TokenGrant` from an OAuth 2.0 token endpoint's JSON answer (RFC 6749 §5.1)."""
    expires_in = body.get("expires_in")
    expires_at = None
    if isinstance(expires_in, (int, float, str)) and str(expires_in).isdigit():
        expires_at = (now or datetime.now(UTC)) + timedelta(seconds=int(expires_in))
    scope = body.get("scope") or ""
    return TokenGrant(
        access_token=str(body["access_token"]),
        refresh_token=body.get("refresh_token"),
        expires_at=expires_at,
        token_type=str(body.get("token_type") or "Bearer"),
        scopes=scope.split() if isinstance(scope, str) else list(scope),
    )
