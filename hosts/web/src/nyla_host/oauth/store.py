"""The authorization server's rows: clients, consent requests, codes and grants. Codes and
refresh tokens are kept as SHA-256 hashes; each one-time step (taking a request, using a code,
rotating a refresh token) is a single conditional statement, so two racing requests cannot
both succeed."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy import delete, func, select, update

from nyla_host.oauth.tables import OAuthClientRow, OAuthCodeRow, OAuthGrantRow, OAuthRequestRow
from nyla_host.tables import ApiTokenRow


def digest(secret: str) -> str:
    """The SHA-256 hex digest a code or refresh token is stored as."""
    return hashlib.sha256(secret.encode()).hexdigest()


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class CodeGrant:
    """An authorization code's row: who approved, for which client, with what parameters."""

    client_id: str
    user_id: str
    mandate_id: str | None
    params: dict[str, Any]
    expires_at: datetime
    used: bool
    token_id: str | None


@dataclass(frozen=True)
class Grant:
    """A client's grant: its access token's id, resource, scopes and refresh expiry."""

    token_id: str
    client_id: str
    user_id: str
    resource: str
    scopes: list[str]
    refresh_expires_at: datetime


def _grant(row: OAuthGrantRow) -> Grant:
    return Grant(
        token_id=row.token_id,
        client_id=row.client_id,
        user_id=row.user_id,
        resource=row.resource,
        scopes=list(row.scopes),
        refresh_expires_at=row.refresh_expires_at,
    )


class OAuthStore:
    """Reads and writes the authorization server's tables in the kernel database."""

    def __init__(self, db: Any) -> None:
        self.db = db

    async def add_client(self, client_id: str, name: str, info: dict[str, Any]) -> None:
        """Keep a registered client's information."""
        async with self.db.session() as s:
            s.add(OAuthClientRow(client_id=client_id, client_name=name, info=info))

    async def client(self, client_id: str) -> dict[str, Any] | None:
        """A registered client's information, or ``None``."""
        async with self.db.session() as s:
            row = await s.get(OAuthClientRow, client_id)
            return dict(row.info) if row is not None else None

    async def clients_since(self, since: datetime) -> int:
        """How many clients registered since ``since`` (the global registration cap)."""
        query = select(func.count()).where(OAuthClientRow.created_at > since)
        async with self.db.session() as s:
            return int((await s.execute(query)).scalar_one())

    async def add_request(
        self, request_id: str, client_id: str, params: dict[str, Any], ttl_s: float
    ) -> None:
        """Keep an authorization request until the person decides (or ``ttl_s`` passes);
        expired ones are swept on the way."""
        async with self.db.session() as s:
            await s.execute(delete(OAuthRequestRow).where(OAuthRequestRow.expires_at < _now()))
            await s.execute(delete(OAuthCodeRow).where(OAuthCodeRow.expires_at < _now()))
            expires = _now() + timedelta(seconds=ttl_s)
            s.add(
                OAuthRequestRow(
                    id=request_id, client_id=client_id, params=params, expires_at=expires
                )
            )

    async def request(self, request_id: str) -> tuple[str, dict[str, Any]] | None:
        """A pending, unexpired request's client id and parameters."""
        async with self.db.session() as s:
            row = await s.get(OAuthRequestRow, request_id)
            if row is None or row.expires_at <= _now():
                return None
            return row.client_id, dict(row.params)

    async def take_request(self, request_id: str) -> tuple[str, dict[str, Any]] | None:
        """Remove a pending request and return it: a decision is made once."""
        query = (
            delete(OAuthRequestRow)
            .where(OAuthRequestRow.id == request_id, OAuthRequestRow.expires_at > _now())
            .returning(OAuthRequestRow.client_id, OAuthRequestRow.params)
        )
        async with self.db.session() as s:
            row = (await s.execute(query)).first()
        return (row[0], dict(row[1])) if row is not None else None

    async def add_code(
        self,
        code: str,
        *,
        client_id: str,
        owner: tuple[str, str | None],
        params: dict[str, Any],
        ttl_s: float,
    ) -> None:
        """Keep an authorization code (its hash) for ``owner`` (user id, mandate id)."""
        row = OAuthCodeRow(
            code_hash=digest(code),
            client_id=client_id,
            user_id=owner[0],
            mandate_id=owner[1],
            params=params,
            expires_at=_now() + timedelta(seconds=ttl_s),
        )
        async with self.db.session() as s:
            s.add(row)

    async def code(self, code: str) -> CodeGrant | None:
        """The row of an authorization code, used or not."""
        async with self.db.session() as s:
            row = await s.get(OAuthCodeRow, digest(code))
            if row is None:
                return None
            return CodeGrant(
                client_id=row.client_id,
                user_id=row.user_id,
                mandate_id=row.mandate_id,
                params=dict(row.params),
                expires_at=row.expires_at,
                used=row.used_at is not None,
                token_id=row.token_id,
            )

    async def use_code(self, code: str) -> bool:
        """Mark an unused, unexpired code used; False when it was used (or expired) already."""
        query = (
            update(OAuthCodeRow)
            .where(
                OAuthCodeRow.code_hash == digest(code),
                OAuthCodeRow.used_at.is_(None),
                OAuthCodeRow.expires_at > _now(),
            )
            .values(used_at=_now())
        )
        async with self.db.session() as s:
            return bool((await s.execute(query)).rowcount)

    async def add_grant(self, code: str, grant: Grant, refresh_token: str) -> None:
        """Keep the grant a code was exchanged for, and note its token on the code (so a
        second use of the code can end the grant)."""
        row = OAuthGrantRow(
            token_id=grant.token_id,
            client_id=grant.client_id,
            user_id=grant.user_id,
            resource=grant.resource,
            scopes=grant.scopes,
            refresh_hash=digest(refresh_token),
            refresh_expires_at=grant.refresh_expires_at,
        )
        async with self.db.session() as s:
            s.add(row)
            await s.execute(
                update(OAuthCodeRow)
                .where(OAuthCodeRow.code_hash == digest(code))
                .values(token_id=grant.token_id)
            )

    async def grant_by_refresh(self, refresh_token: str) -> tuple[Grant | None, Grant | None]:
        """``(current, replaced)``: the grant whose refresh token this is, or the grant whose
        refresh token it was before the last rotation (a replayed one)."""
        hashed = digest(refresh_token)
        async with self.db.session() as s:
            current = (
                await s.execute(select(OAuthGrantRow).where(OAuthGrantRow.refresh_hash == hashed))
            ).scalar_one_or_none()
            if current is not None:
                return _grant(current), None
            replaced = (
                await s.execute(select(OAuthGrantRow).where(OAuthGrantRow.previous_hash == hashed))
            ).scalar_one_or_none()
            return None, _grant(replaced) if replaced is not None else None

    async def grant(self, token_id: str) -> Grant | None:
        """The grant of an access token's id."""
        async with self.db.session() as s:
            row = await s.get(OAuthGrantRow, token_id)
            return _grant(row) if row is not None else None

    async def rotate(self, old: str, new: str, ttl_s: float) -> str | None:
        """Replace a grant's refresh token; the grant's token id, or ``None`` when ``old`` is
        not (or no longer) its refresh token."""
        query = (
            update(OAuthGrantRow)
            .where(OAuthGrantRow.refresh_hash == digest(old))
            .values(
                refresh_hash=digest(new),
                previous_hash=digest(old),
                refresh_expires_at=_now() + timedelta(seconds=ttl_s),
            )
            .returning(OAuthGrantRow.token_id)
        )
        async with self.db.session() as s:
            row = (await s.execute(query)).first()
        return row[0] if row is not None else None

    async def token_active(self, token_id: str) -> bool:
        """Whether an access token is unrevoked (expired is fine: a refresh renews it)."""
        query = select(ApiTokenRow.id).where(
            ApiTokenRow.id == token_id, ApiTokenRow.revoked_at.is_(None)
        )
        async with self.db.session() as s:
            return (await s.execute(query)).first() is not None

    async def grants_of(self, user_id: str) -> list[dict[str, Any]]:
        """A person's grants whose access token is not revoked, newest first, with the
        client's name and redirect hosts, the token's last use and when the grant ends
        unless the client refreshes it (its refresh token's expiry)."""
        query = (
            select(
                OAuthGrantRow,
                OAuthClientRow.client_name,
                OAuthClientRow.info,
                ApiTokenRow.last_used_at,
            )
            .join(ApiTokenRow, ApiTokenRow.id == OAuthGrantRow.token_id)
            .join(OAuthClientRow, OAuthClientRow.client_id == OAuthGrantRow.client_id)
            .where(OAuthGrantRow.user_id == user_id, ApiTokenRow.revoked_at.is_(None))
            .order_by(OAuthGrantRow.created_at.desc())
        )
        async with self.db.session() as s:
            rows = (await s.execute(query)).all()
        return [
            {
                "id": grant.token_id,
                "clientId": grant.client_id,
                "clientName": name or grant.client_id,
                "resource": grant.resource,
                "scopes": list(grant.scopes),
                "createdAt": grant.created_at.isoformat(),
                "lastUsedAt": last_used.isoformat() if last_used else None,
                "expiresAt": grant.refresh_expires_at.isoformat(),
                "redirectHosts": _hosts(info),
            }
            for grant, name, info, last_used in rows
        ]


def _hosts(info: dict[str, Any]) -> list[str]:
    """The distinct hosts (with port) of a client's registered redirect URIs, in order."""
    hosts = (urlsplit(str(uri)).netloc for uri in info.get("redirect_uris") or [])
    return list(dict.fromkeys(host for host in hosts if host))
