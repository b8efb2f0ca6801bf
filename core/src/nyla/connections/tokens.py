"""The token manager: a valid access token for every request, refreshed at most once.

- Ahead of expiry (``refresh_ahead_s`` before ``expires_at``) the token is refreshed before
  it is used; after a 401 the HTTP layer forces one refresh.
- A refresh runs under a PostgreSQL advisory lock per credential (``pg_advisory_xact_lock``,
  so it is released with the transaction even if the process dies). After taking the lock the
  credential is read again: when another process refreshed meanwhile, its token is used and
  the vendor is not asked twice (refresh tokens are often single-use). A rotated refresh
  token is saved in the same transaction.
- ``invalid_grant`` (revoked or expired consent) marks the connection ``needs_reconsent`` and
  raises :class:`~nyla.connections.errors.NeedsReconsentError`; it is never retried.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta

from sqlalchemy import text

from nyla.connections.errors import NeedsReconsentError
from nyla.connections.store import NEEDS_RECONSENT, ConnectionStore, connection_info
from nyla.db import Database
from nyla.models.datasource import ConnectionInfo, TokenGrant
from nyla.tables.knowledge import UserConnection

#: refresh this long before the access token expires
REFRESH_AHEAD_S = 300.0

Refresher = Callable[[ConnectionInfo, str], Awaitable[TokenGrant]]


def credential_lock_key(connection_id: str) -> int:
    """The advisory-lock key of a credential (a stable signed 64-bit number)."""
    digest = hashlib.sha256(f"nyla.credential:{connection_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


class TokenManager:
    """Hands out access tokens and refreshes them through ``refresher`` (the connector's
    ``refresh_token``) under the credential's advisory lock."""

    def __init__(
        self,
        db: Database,
        store: ConnectionStore,
        refresher: Refresher,
        *,
        refresh_ahead_s: float = REFRESH_AHEAD_S,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.db = db
        self.store = store
        self.refresher = refresher
        self.refresh_ahead_s = refresh_ahead_s
        self.clock = clock
        self.refreshes = 0

    def _expiring(self, grant: TokenGrant) -> bool:
        if grant.expires_at is None:
            return False
        return grant.expires_at - timedelta(seconds=self.refresh_ahead_s) <= self.clock()

    async def access_token(self, connection_id: str) -> str | None:
        """The connection's access token, refreshed first when it is about to expire
        (``None`` for a connection without tokens)."""
        async with self.db.session() as s:
            grant = await self.store.read_grant(s, connection_id)
        if grant is None:
            return None
        if not self._expiring(grant):
            return grant.access_token
        return await self._refresh(connection_id, rejected=None)

    async def refresh_after_rejection(self, connection_id: str, rejected: str | None) -> str:
        """A fresh token after the vendor rejected ``rejected`` (401): refreshed unless
        another caller already replaced that token."""
        return await self._refresh(connection_id, rejected=rejected)

    async def _refresh(self, connection_id: str, *, rejected: str | None) -> str:
        failure: NeedsReconsentError | None = None
        async with self.db.session() as s:
            await s.execute(
                text("SELECT pg_advisory_xact_lock(:key)"),
                {"key": credential_lock_key(connection_id)},
            )
            grant = await self.store.read_grant(s, connection_id)
            row = await s.get(UserConnection, connection_id, populate_existing=True)
            if grant is None or row is None:
                raise NeedsReconsentError(f"connection {connection_id} has no tokens")
            if self._still_good(grant, rejected):
                return grant.access_token
            try:
                fresh = await self._call_refresher(connection_info(row), grant)
            except NeedsReconsentError as exc:
                failure = exc
                await self.store.set_status(connection_id, NEEDS_RECONSENT, str(exc), session=s)
            else:
                await self.store.save_grant(s, connection_id, fresh)
                return fresh.access_token
        raise failure

    def _still_good(self, grant: TokenGrant, rejected: str | None) -> bool:
        """True when the stored token is one to use as it is: someone refreshed since the
        caller read it, or (ahead-of-expiry path) it no longer expires soon."""
        if rejected is not None:
            return grant.access_token != rejected
        return not self._expiring(grant)

    async def _call_refresher(self, connection: ConnectionInfo, grant: TokenGrant) -> TokenGrant:
        if not grant.refresh_token:
            raise NeedsReconsentError(
                f"{connection.service}: the access token expired and there is no refresh "
                "token: connect again",
                service=connection.service,
            )
        fresh = await self.refresher(connection, grant.refresh_token)
        self.refreshes += 1
        if not fresh.refresh_token:  # not rotated: the old one stays valid
            fresh = fresh.model_copy(update={"refresh_token": grant.refresh_token})
        return fresh


class ConnectionTokens:
    """The :class:`~nyla.connections.http.TokenSource` of one connection."""

    def __init__(self, manager: TokenManager, connection_id: str) -> None:
        self.manager = manager
        self.connection_id = connection_id

    async def token(self) -> str | None:
        """The current access token (refreshed ahead of expiry)."""
        return await self.manager.access_token(self.connection_id)

    async def refresh(self, rejected: str | None) -> str | None:
        """A fresh token after a 401."""
        return await self.manager.refresh_after_rejection(self.connection_id, rejected)
