"""Browser sign-in: the OAuth 2.0 authorization code grant (RFC 6749 §4.1) with PKCE
(RFC 7636, ``S256``).

:meth:`AuthCodeFlow.start` checks the settings, makes a verifier and its challenge and keeps
them with the caller, service, label and settings in ``oauth_pending`` (the database, so any
host process can finish the sign-in); :meth:`AuthCodeFlow.finish` takes that row once (a
replayed or expired ``state`` is refused), sends ``code_verifier`` with the code to the
token endpoint and makes the connection through the same validate-probe-store path as every
other (:func:`nyla.connections.connect.connect`).
"""

from __future__ import annotations

import base64
import hashlib
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from sqlalchemy import delete

from nyla.connections.connect import NewConnection, checked_settings, connect
from nyla.connections.errors import ConnectorError
from nyla.connections.oauth import client_credentials, grant_from_token_response
from nyla.connections.tables import OAuthPending
from nyla.errors import NylaError
from nyla.models.datasource import ConnectionInfo

if TYPE_CHECKING:
    from nyla.connections.ports import ConnectionsPort
    from nyla.db import Database

#: how long a started sign-in may take to come back, seconds
STATE_TTL_S = 600


class SignInError(NylaError, ValueError):
    """A browser sign-in that cannot be finished (refused, expired, replayed, or the token
    exchange failed); nothing was stored."""


def pkce_pair() -> tuple[str, str]:
    """A PKCE ``code_verifier`` (43-128 unreserved characters) and its ``S256`` challenge."""
    verifier = secrets.token_urlsafe(64)
    return verifier, pkce_challenge(verifier)


def pkce_challenge(verifier: str) -> str:
    """``BASE64URL(SHA256(verifier))`` without padding (RFC 7636 §4.2)."""
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


@dataclass
class SignInStart:
    """Where to send the browser: the authorize URL, its ``state``, and for a connector
    that declares it, the page where a directory admin consents for the organisation."""

    authorize_url: str
    state: str
    admin_consent_url: str | None = None


class AuthCodeFlow:
    """Starts and finishes browser sign-ins for ``connections``; the pending sign-ins live
    in ``db``."""

    def __init__(
        self,
        db: Database,
        connections: ConnectionsPort,
        *,
        ttl_s: float = STATE_TTL_S,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.db = db
        self.connections = connections
        self.ttl_s = ttl_s
        self.clock = clock

    def _oauth(self, adapter: Any, service: str, settings: dict[str, Any]) -> Any:
        oauth_for = getattr(adapter, "oauth_for", None)
        oauth = oauth_for(settings) if oauth_for else getattr(adapter, "oauth", None)
        if oauth is None or not oauth.authorize_url:
            raise SignInError(f"{service} has no browser sign-in; paste an API token instead")
        return oauth

    async def start(
        self,
        service: str,
        *,
        user_id: str,
        mandate_id: str | None = None,
        label: str = "",
        settings: dict[str, Any] | None = None,
        redirect_uri: str,
        operator: bool = False,
    ) -> SignInStart:
        """Check the settings (server-only ones only from an ``operator``) and remember the
        sign-in; the URL to send the browser to."""
        new = NewConnection(
            service=service, user_id=user_id, mandate_id=mandate_id, label=label, settings=settings
        )
        adapter, settings = checked_settings(self.connections, new, operator=operator)
        oauth = self._oauth(adapter, new.service, settings)
        client_id = client_credentials(oauth, new.service)["client_id"]
        verifier, challenge = pkce_pair()
        state = secrets.token_urlsafe(32)
        now = self.clock()
        async with self.db.session() as s:
            await s.execute(delete(OAuthPending).where(OAuthPending.expires_at < now))
            s.add(
                OAuthPending(
                    state=state,
                    service=new.service,
                    user_id=new.user_id,
                    mandate_id=new.mandate_id,
                    label=new.label,
                    settings=settings,
                    verifier=self.connections.store.cipher.encrypt(verifier),
                    redirect_uri=redirect_uri,
                    expires_at=now + timedelta(seconds=self.ttl_s),
                )
            )
        query = {
            "response_type": "code",
            "client_id": client_id,
            "redirect_uri": redirect_uri,
            "scope": " ".join(oauth.scopes),
            "state": state,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
        }
        consent = None
        if getattr(adapter, "admin_consent", False):
            consent = adapter.admin_consent_url(settings, client_id, redirect_uri)
        return SignInStart(f"{oauth.authorize_url}?{urlencode(query)}", state, consent)

    async def finish(
        self, service: str, *, state: str, code: str = "", error: str = ""
    ) -> ConnectionInfo:
        """Take the sign-in ``state`` names (once), exchange ``code`` with its verifier, and
        make the connection (probed before it is stored)."""
        pending = await self._take(state)
        if pending is None or pending.service != service:
            raise SignInError("unknown or already used sign-in; start the sign-in again")
        if pending.expires_at <= self.clock():
            raise SignInError("the sign-in took too long; start it again")
        if error or not code:
            raise SignInError(f"{service}: the sign-in was refused ({error or 'no code'})")
        adapter = self.connections.adapter(service)
        oauth = self._oauth(adapter, service, pending.settings)
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": pending.redirect_uri,
            "code_verifier": self.connections.store.cipher.decrypt(pending.verifier),
            **client_credentials(oauth, service),
        }
        unsaved = ConnectionInfo(
            id="sign-in", service=service, user_id=pending.user_id, settings=pending.settings
        )
        try:
            async with self.connections.plain_http(service, unsaved) as http:
                response = await http.request("POST", oauth.token_url, data=form)
            grant = grant_from_token_response(response.json())
        except (ConnectorError, KeyError, ValueError) as exc:
            raise SignInError(f"{service}: the sign-in could not be completed ({exc})") from exc
        new = NewConnection(
            service=service,
            user_id=pending.user_id,
            mandate_id=pending.mandate_id,
            label=pending.label,
            settings=pending.settings,
            grant=grant,
        )
        # the settings were checked with the rights of the user who started the sign-in
        return await connect(self.connections, new, operator=True)

    async def _take(self, state: str) -> OAuthPending | None:
        if not state:
            return None
        async with self.db.session() as s:
            taken = await s.execute(
                delete(OAuthPending).where(OAuthPending.state == state).returning(OAuthPending)
            )
            return taken.scalar_one_or_none()
