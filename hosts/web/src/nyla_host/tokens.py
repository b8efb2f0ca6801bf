"""API tokens: ``nyla_<id>_<secret>``; the database keeps the id and the SHA-256 of the
secret, never the secret. A token is shown once, when it is created.

Every request carries its token, so a store keeps what it verified instead of reading the
row each time (never beyond the token's expiry): a revocation through the same store takes
effect at once. One made elsewhere (``nyla tokens revoke``, another server process) is
heard at once through ``NOTIFY`` (:data:`REVOKED_CHANNEL`) by a host that listens: while
its listener is connected, a verified token is kept :data:`HEARD_TTL_S` seconds, and every
such entry is dropped the moment the listener loses its connection (a notification may be
lost then). Without a listener an entry holds :data:`CACHE_TTL_S` seconds, the longest a
revocation made elsewhere can take. The secret is still checked against the cached hash on
every request.

A token may carry an *audience*: then it is good only where that audience is asked for
(:meth:`TokenStore.verify` with ``audience``), never on the rest of the API. The OAuth
authorization server (:mod:`nyla_host.oauth`) issues its access tokens that way, bound to
the MCP endpoint's URL."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import select, text, update

from nyla_host.identity import Identity, Role
from nyla_host.tables import ApiTokenRow

PREFIX = "nyla_"
#: seconds a verified token is trusted without reading its row again (the longest a
#: revocation made by another process can take to reach this one)
CACHE_TTL_S = 5.0
#: seconds a verified token is trusted while revocations are heard at once (``NOTIFY``): the
#: bound for one made without a notification (an ``UPDATE`` of the table by hand)
HEARD_TTL_S = 60.0
#: verified tokens kept at most (the oldest goes first)
CACHE_SIZE = 4096
#: a token's last use is written when the stored one is older than this
LAST_USED_GRAIN = timedelta(minutes=1)
_TOKEN_ROW = (
    "SELECT secret_hash, user_id, mandate_id, role, name, revoked_at, expires_at, last_used_at, "
    "audience FROM host_api_tokens WHERE id = %s"
)


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def split_token(token: str) -> tuple[str, str] | None:
    """``(id, secret)`` of a well-formed token, else ``None``."""
    if not token.startswith(PREFIX):
        return None
    token_id, sep, secret = token[len(PREFIX) :].partition("_")
    if not sep or not token_id or len(secret) < 16:
        return None
    return token_id, secret


@dataclass
class TokenInfo:
    """What ``nyla tokens list`` shows of a token (never its secret)."""

    id: str
    name: str
    user_id: str
    mandate_id: str | None
    role: str
    created_at: datetime | None
    expires_at: datetime | None
    last_used_at: datetime | None
    revoked_at: datetime | None
    #: where the token is good (``None``: the whole API), e.g. the MCP endpoint's URL
    audience: str | None = None

    def to_wire(self) -> dict[str, Any]:
        """camelCase JSON for ``--json`` output."""

        def iso(value: datetime | None) -> str | None:
            return value.isoformat() if value else None

        return {
            "id": self.id,
            "name": self.name,
            "userId": self.user_id,
            "mandateId": self.mandate_id,
            "role": self.role,
            "createdAt": iso(self.created_at),
            "expiresAt": iso(self.expires_at),
            "lastUsedAt": iso(self.last_used_at),
            "revokedAt": iso(self.revoked_at),
            "audience": self.audience,
        }


def _info(row: ApiTokenRow) -> TokenInfo:
    return TokenInfo(
        id=row.id,
        name=row.name,
        user_id=row.user_id,
        mandate_id=row.mandate_id,
        role=row.role,
        created_at=row.created_at,
        expires_at=row.expires_at,
        last_used_at=row.last_used_at,
        revoked_at=row.revoked_at,
        audience=row.audience,
    )


#: the notification a revocation sends, so every host drops the token from its cache at once
REVOKED_CHANNEL = "nyla_token_revoked"


@dataclass(frozen=True)
class _Verified:
    secret_hash: str
    identity: Identity
    #: ``clock()`` reading until which the entry holds
    until: float
    audience: str | None = None
    #: the revocation listener's connection it was kept under (``None``: none)
    heard: int | None = None


class TokenStore:
    """Create, verify, list and revoke API tokens in the kernel database. ``cache_ttl_s``
    bounds how long a verified token is trusted without its row (0: read it every time);
    ``clock`` is the monotonic clock the bound is kept on. ``heard`` (set when the host
    listens for revocations, :meth:`nyla.agent.run_bus.RunBus.listening`): the listener's
    connection while it is connected, else ``None``; entries then hold ``heard_ttl_s``."""

    def __init__(
        self,
        db: Any,
        *,
        cache_ttl_s: float = CACHE_TTL_S,
        heard_ttl_s: float = HEARD_TTL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.db = db
        self.cache_ttl_s, self.heard_ttl_s = cache_ttl_s, heard_ttl_s
        self.clock = clock
        self.heard: Callable[[], int | None] = lambda: None
        self._verified: dict[str, _Verified] = {}
        self._reading: dict[str, asyncio.Future[_Verified | None]] = {}
        #: counts this store's revocations: a read that saw one begin is not kept
        self._generation = 0

    async def create(
        self,
        user_id: str,
        *,
        role: Role | str = Role.USER,
        mandate_id: str | None = None,
        name: str = "",
        expires_in_days: float | None = None,
        audience: str | None = None,
    ) -> tuple[str, TokenInfo]:
        """A new token for ``user_id``; returns the token (shown once) and its record. With
        ``audience`` the token is good only where :meth:`verify` is asked for it."""
        if not user_id.strip():
            raise ValueError("a token needs a user id")
        role = role if isinstance(role, Role) else Role.parse(role)
        if role is Role.MANDATE_ADMIN and not mandate_id:
            raise ValueError("a mandate admin token needs --mandate")
        token_id, secret = secrets.token_hex(6), secrets.token_urlsafe(32)
        expires = None
        if expires_in_days is not None:
            expires = datetime.now(UTC) + timedelta(days=expires_in_days)
        row = ApiTokenRow(
            id=token_id,
            name=name,
            secret_hash=_hash(secret),
            user_id=user_id,
            mandate_id=mandate_id,
            role=role.value,
            expires_at=expires,
            created_at=datetime.now(UTC),
            audience=audience,
        )
        async with self.db.session() as s:
            s.add(row)
        return f"{PREFIX}{token_id}_{secret}", _info(row)

    async def verify(self, token: str, *, audience: str | None = None) -> Identity | None:
        """The identity of a valid, unrevoked, unexpired token; ``None`` otherwise. A token
        bound to an audience is valid only when ``audience`` names it (an unbound token is
        valid everywhere)."""
        parts = split_token(token)
        if parts is None:
            return None
        token_id, secret = parts
        digest = _hash(secret)
        hit = self._verified.get(token_id)
        if hit is None or hit.until <= self.clock() or not self._still_heard(hit):
            hit = await self._reread(token_id, digest)
        if hit is None or not hmac.compare_digest(hit.secret_hash, digest):
            return None
        if hit.audience is not None and hit.audience != audience:
            return None
        return hit.identity

    def _still_heard(self, hit: _Verified) -> bool:
        """An entry kept while revocations were heard holds only while the same listener
        connection still hears them."""
        return hit.heard is None or hit.heard == self.heard()

    async def _reread(self, token_id: str, digest: str) -> _Verified | None:
        """The token's row, read once for all the requests that ask at the same time (when
        an entry ends, every request in flight with that token would read it)."""
        pending = self._reading.get(token_id)
        if pending is None:
            pending = asyncio.ensure_future(self._read(token_id, digest))
            self._reading[token_id] = pending
            pending.add_done_callback(lambda _: self._reading.pop(token_id, None))
        return await asyncio.shield(pending)

    async def _read(self, token_id: str, digest: str) -> _Verified | None:
        """A valid token's row as a cache entry (kept unless the cache is off or this store
        revoked the token while it was being read); its last use is written when the
        request that read it holds the right secret."""
        generation, heard = self._generation, self.heard()
        self._verified.pop(token_id, None)
        rows = await self.db.read_driver(lambda conn: conn.rows(_TOKEN_ROW, (token_id,)))
        if not rows:
            return None
        secret_hash, user_id, mandate_id, role, name, revoked_at, expires_at, last_used, aud = rows[
            0
        ]
        now = datetime.now(UTC)
        if revoked_at is not None or (expires_at and expires_at <= now):
            return None
        right = hmac.compare_digest(secret_hash, digest)
        if right and (last_used is None or now - last_used > LAST_USED_GRAIN):
            # coarse, so a busy client does not write every call
            async with self.db.session() as s:
                await s.execute(
                    update(ApiTokenRow).where(ApiTokenRow.id == token_id).values(last_used_at=now)
                )
        identity = Identity(
            user_id=user_id, mandate_id=mandate_id, role=Role(role), via="token", name=name
        )
        ttl = self.cache_ttl_s if heard is None or self.cache_ttl_s <= 0 else self.heard_ttl_s
        if expires_at is not None:
            ttl = min(ttl, (expires_at - now).total_seconds())
        entry = _Verified(secret_hash, identity, self.clock() + ttl, aud, heard)
        if ttl > 0 and generation == self._generation and heard == self.heard():
            while len(self._verified) >= CACHE_SIZE:
                del self._verified[next(iter(self._verified))]
            self._verified[token_id] = entry
        return entry

    async def list(self, *, include_revoked: bool = False) -> list[TokenInfo]:
        """Every token, newest first."""
        query = select(ApiTokenRow).order_by(ApiTokenRow.created_at.desc())
        if not include_revoked:
            query = query.where(ApiTokenRow.revoked_at.is_(None))
        async with self.db.session() as s:
            return [_info(r) for r in (await s.execute(query)).scalars()]

    async def revoke(self, token_id: str) -> bool:
        """Revoke a token by id (or by the whole token); False when none was active."""
        parts = split_token(token_id)
        key = parts[0] if parts else token_id
        from nyla.host import channel_name

        async with self.db.session() as s:
            result = await s.execute(
                update(ApiTokenRow)
                .where(ApiTokenRow.id == key, ApiTokenRow.revoked_at.is_(None))
                .values(revoked_at=datetime.now(UTC))
            )
            # every host that listens forgets it at once (delivered when this commits)
            channel = channel_name(self.db, REVOKED_CHANNEL)
            await s.execute(text("SELECT pg_notify(:c, :k)"), {"c": channel, "k": key})
        self.forget(key)
        return bool(result.rowcount)

    async def reissue(self, token_id: str, *, expires_in_s: float) -> str | None:
        """A new secret (and expiry) for an active token, which keeps its id, name and place in
        the list; the old secret stops working at once, on every host. ``None`` when the token
        is revoked or unknown. (An OAuth refresh rotates its access token this way.)"""
        from nyla.host import channel_name

        secret = secrets.token_urlsafe(32)
        expires = datetime.now(UTC) + timedelta(seconds=expires_in_s)
        async with self.db.session() as s:
            result = await s.execute(
                update(ApiTokenRow)
                .where(ApiTokenRow.id == token_id, ApiTokenRow.revoked_at.is_(None))
                .values(secret_hash=_hash(secret), expires_at=expires)
            )
            channel = channel_name(self.db, REVOKED_CHANNEL)
            await s.execute(text("SELECT pg_notify(:c, :k)"), {"c": channel, "k": token_id})
        self.forget(token_id)
        return f"{PREFIX}{token_id}_{secret}" if result.rowcount else None

    def forget(self, token_id: str) -> None:
        """Drop a token from this store's cache (revoked here or on another host: the
        host hears of it through ``NOTIFY`` on :data:`REVOKED_CHANNEL`)."""
        self._generation += 1
        self._verified.pop(token_id, None)
