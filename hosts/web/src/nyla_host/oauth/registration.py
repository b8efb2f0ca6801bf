"""Dynamic client registration (RFC 7591), with limits: a body of at most
:data:`MAX_BODY_BYTES`, at most :data:`MAX_REDIRECT_URIS` redirect URIs, each ``https`` or
``http`` on a loopback address (RFC 8252: a native app listening on 127.0.0.1), no fragment;
at most :data:`PER_ADDRESS` registrations a minute from one address and :data:`PER_HOUR` an
hour in all. Every client is registered public (``token_endpoint_auth_method: none``): an
agent on someone's machine cannot keep a secret, and PKCE is what proves the code's owner."""

from __future__ import annotations

import secrets
import time
from collections import deque
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata
from pydantic import ValidationError

from nyla.host import has_unstorable_chars
from nyla_host.oauth.store import OAuthStore
from nyla_host.oauth.terms import SCOPE

MAX_BODY_BYTES = 16 * 1024
MAX_REDIRECT_URIS = 10
MAX_URI_CHARS = 2000
MAX_NAME_CHARS = 200
#: registrations a minute from one client address
PER_ADDRESS = 20
#: registrations an hour from everyone
PER_HOUR = 1000
LOOPBACK = frozenset({"127.0.0.1", "::1", "localhost"})
GRANTS = frozenset({"authorization_code", "refresh_token"})


class RegistrationRefused(Exception):
    """A refused registration: the RFC 7591 error code, the reason and the HTTP status."""

    def __init__(self, error: str, description: str, status: int = 400) -> None:
        super().__init__(description)
        self.error = error
        self.description = description
        self.status = status


class Limiter:
    """Registrations per address in a sliding minute (in this process: the hourly cap in
    the database holds across processes)."""

    def __init__(self, per_minute: int = PER_ADDRESS) -> None:
        self.per_minute = per_minute
        self._seen: dict[str, deque[float]] = {}

    def admit(self, address: str) -> bool:
        """Count a registration from ``address``; False when it is one too many."""
        now = time.monotonic()
        if len(self._seen) > 10_000:  # forget the quiet addresses
            self._seen = {a: q for a, q in self._seen.items() if q and q[-1] > now - 60}
        seen = self._seen.setdefault(address, deque())
        while seen and seen[0] <= now - 60:
            seen.popleft()
        if len(seen) >= self.per_minute:
            return False
        seen.append(now)
        return True


def check_redirect_uri(uri: str) -> None:
    """Refuse a redirect URI that is not ``https``, or ``http`` on loopback."""
    if len(uri) > MAX_URI_CHARS:
        raise RegistrationRefused("invalid_redirect_uri", "a redirect URI is too long")
    parts = urlsplit(uri)
    host = (parts.hostname or "").lower()
    if parts.fragment or "#" in uri:
        raise RegistrationRefused("invalid_redirect_uri", f"{uri} has a fragment")
    if parts.scheme == "https" and host:
        return
    if parts.scheme == "http" and host in LOOPBACK:
        return
    raise RegistrationRefused(
        "invalid_redirect_uri", f"{uri} is neither https nor http on a loopback address"
    )


def parse(body: bytes) -> OAuthClientMetadata:
    """The registration request, checked; :class:`RegistrationRefused` otherwise."""
    if len(body) > MAX_BODY_BYTES:
        raise RegistrationRefused("invalid_client_metadata", "the request is too large", 413)
    try:
        metadata = OAuthClientMetadata.model_validate_json(body)
    except ValidationError as exc:
        reasons = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise RegistrationRefused("invalid_client_metadata", reasons[:500]) from None
    uris = [str(u) for u in metadata.redirect_uris or []]
    if not uris or len(uris) > MAX_REDIRECT_URIS:
        raise RegistrationRefused(
            "invalid_redirect_uri", f"give 1 to {MAX_REDIRECT_URIS} redirect URIs"
        )
    for uri in uris:
        check_redirect_uri(uri)
    if "authorization_code" not in metadata.grant_types or set(metadata.grant_types) - GRANTS:
        raise RegistrationRefused(
            "invalid_client_metadata", "grant_types: authorization_code (and refresh_token) only"
        )
    if "code" not in metadata.response_types:
        raise RegistrationRefused("invalid_client_metadata", "response_types must include code")
    if metadata.scope is not None and set(metadata.scope.split()) - {SCOPE}:
        raise RegistrationRefused("invalid_client_metadata", f"the only scope is {SCOPE}")
    if len(metadata.client_name or "") > MAX_NAME_CHARS:
        raise RegistrationRefused("invalid_client_metadata", "client_name is too long")
    if has_unstorable_chars(metadata.model_dump_json()):
        raise RegistrationRefused("invalid_client_metadata", "the request holds a NUL byte")
    return metadata


async def register(
    store: OAuthStore, limiter: Limiter, body: bytes, address: str
) -> dict[str, Any]:
    """Register a client; its information (RFC 7591 §3.2.1) as the wire shows it."""
    metadata = parse(body)
    if not limiter.admit(address):
        raise RegistrationRefused("rate_limited", "too many registrations: retry in a minute", 429)
    since = datetime.now(UTC) - timedelta(hours=1)
    if await store.clients_since(since) >= PER_HOUR:
        raise RegistrationRefused("rate_limited", "too many registrations: retry later", 429)
    fields = metadata.model_dump(exclude={"token_endpoint_auth_method", "scope"})
    info = OAuthClientInformationFull.model_validate(
        {
            **fields,
            "client_id": secrets.token_urlsafe(18),
            "client_id_issued_at": int(time.time()),
            "token_endpoint_auth_method": "none",
            "scope": SCOPE,
        }
    )
    wire = info.model_dump(mode="json", exclude_none=True)
    await store.add_client(info.client_id, info.client_name or "", wire)
    return wire
