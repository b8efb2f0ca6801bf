"""API tokens: ``nyla_<id>_<secret>``; the database keeps the id and the SHA-256 of the
secret, never the secret. A token is shown once, when it is created."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import select, update

from nyla_host.identity import Identity, Role
from nyla_host.tables import ApiTokenRow

PREFIX = "nyla_"


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
    )


class TokenStore:
    """Create, verify, list and revoke API tokens in the kernel database."""

    def __init__(self, db: Any) -> None:
        self.db = db

    async def create(
        self,
        user_id: str,
        *,
        role: Role | str = Role.USER,
        mandate_id: str | None = None,
        name: str = "",
        expires_in_days: float | None = None,
    ) -> tuple[str, TokenInfo]:
        """A new token for ``user_id``; returns the token (shown once) and its record."""
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
        )
        async with self.db.session() as s:
            s.add(row)
        return f"{PREFIX}{token_id}_{secret}", _info(row)

    async def verify(self, token: str) -> Identity | None:
        """The identity of a valid, unrevoked, unexpired token; ``None`` otherwise."""
        parts = split_token(token)
        if parts is None:
            return None
        token_id, secret = parts
        now = datetime.now(UTC)
        async with self.db.session() as s:
            row = await s.get(ApiTokenRow, token_id)
            if row is None or not hmac.compare_digest(row.secret_hash, _hash(secret)):
                return None
            if row.revoked_at is not None or (row.expires_at and row.expires_at <= now):
                return None
            if row.last_used_at is None or now - row.last_used_at > timedelta(minutes=1):
                row.last_used_at = now  # coarse, so a busy client does not write every call
            return Identity(
                user_id=row.user_id,
                mandate_id=row.mandate_id,
                role=Role(row.role),
                via="token",
                name=row.name,
            )

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
        async with self.db.session() as s:
            result = await s.execute(
                update(ApiTokenRow)
                .where(ApiTokenRow.id == key, ApiTokenRow.revoked_at.is_(None))
                .values(revoked_at=datetime.now(UTC))
            )
        return bool(result.rowcount)
