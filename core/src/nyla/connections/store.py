"""The connection store: a user's connections (``user_connection``) and their tokens,
encrypted at rest (``connection_credential``).

Every read and change checks the caller: a connection belongs to one user. Removing a
connection purges what was indexed from it, cancels its running jobs and deletes its data
sources and tokens, in one transaction with an audit record.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, NamedTuple, Protocol

from sqlalchemy import delete, update
from sqlalchemy.ext.asyncio import AsyncSession

from nyla.connections.crypto import Cipher
from nyla.connections.tables import ConnectionCredential
from nyla.db import Database
from nyla.errors import NotFoundError, PermissionDeniedError
from nyla.jobs.store import cancel_jobs
from nyla.jobs.tables import Job
from nyla.models.datasource import ConnectionInfo, TokenGrant
from nyla.models.knowledge import PurgeResult
from nyla.table_changes import KeptReads, TableChanges
from nyla.tables.knowledge import UserConnection, audit


class IndexPurge(Protocol):
    """Deletes everything indexed from a connection inside the caller's transaction (the
    kernel passes :func:`nyla.knowledge.consent.purge_connection`): removing a connection
    purges its files in the same transaction that deletes it."""

    async def __call__(
        self, session: AsyncSession, connection_id: str, reason: str
    ) -> PurgeResult: ...


ACTIVE = "active"
NEEDS_RECONSENT = "needs_reconsent"
STATUSES = (ACTIVE, NEEDS_RECONSENT, "error", "disabled")


class _Row(NamedTuple):
    """The columns of a connection :func:`connection_info` reads (see :data:`_LIST`)."""

    id: str
    service: str
    user_id: str
    mandate_id: str | None
    account: str | None
    label: str | None
    scopes: list[str] | None
    status: str | None
    knowledge_ingestion_enabled: bool
    settings: dict[str, Any] | None


_LIST = (
    f"SELECT {', '.join(_Row._fields)} FROM {UserConnection.__tablename__}"
    " WHERE user_id = %s ORDER BY created_at"
)


def connection_info(row: UserConnection | _Row) -> ConnectionInfo:
    """The adapter-facing view of a connection row."""
    return ConnectionInfo(
        id=row.id,
        service=row.service,
        user_id=row.user_id,
        mandate_id=row.mandate_id,
        account=row.account or "",
        label=row.label or "",
        scopes=list(row.scopes or []),
        status=row.status or ACTIVE,
        knowledge_ingestion_enabled=row.knowledge_ingestion_enabled,
        settings=dict(row.settings or {}),
    )


class ConnectionStore:
    """Connections and their encrypted tokens in the kernel database."""

    def __init__(self, db: Database, cipher: Cipher, purge_index: IndexPurge) -> None:
        self.db = db
        self.cipher = cipher
        #: the knowledge store's purge of a connection's files, run in the removal's transaction
        self.purge_index = purge_index
        #: each user's connection rows, kept until the table changes (see :meth:`list`); made
        #: now, not at the first list, because it also hooks this store's writes: a connection
        #: removed through this object is out of every store's kept lists in this process at
        #: once, not when the notification arrives
        self._lists: KeptReads[str, tuple[_Row, ...]] = KeptReads(
            TableChanges.of(db).watch([UserConnection.__tablename__])
        )

    async def add(
        self,
        *,
        service: str,
        user_id: str,
        account: str = "",
        label: str = "",
        scopes: list[str] | None = None,
        settings: dict[str, Any] | None = None,
        grant: TokenGrant | None = None,
        mandate_id: str | None = None,
        knowledge_ingestion_enabled: bool = True,
        connection_id: str | None = None,
    ) -> ConnectionInfo:
        """Store a new connection (and its tokens, encrypted); returns it."""
        row = UserConnection(
            id=connection_id or f"conn-{uuid.uuid4().hex[:12]}",
            service=service,
            user_id=user_id,
            mandate_id=mandate_id,
            account=account,
            label=label or account or service,
            scopes=list(scopes or (grant.scopes if grant else [])),
            status=ACTIVE,
            settings=dict(settings or {}),
            knowledge_ingestion_enabled=knowledge_ingestion_enabled,
        )
        async with self.db.session() as s:
            s.add(row)
            await s.flush()
            if grant is not None:
                await self.save_grant(s, row.id, grant)
            audit(s, "connection_added", user_id, row.id, {"service": service, "account": account})
        return connection_info(row)

    async def list(self, user_id: str, *, service: str | None = None) -> list[ConnectionInfo]:
        """The user's connections, oldest first (optionally of one service). Every agent run
        reads them (its data-source block, the toolboxes a connection switches on): the rows
        are kept per user in this process until ``user_connection`` changes, here or in any
        other process (:class:`~nyla.table_changes.KeptReads`: a statement trigger's
        notification, heard within a round trip of its commit; read again every time while
        not listening). A read is one statement on a driver connection of the read pool (an
        ORM session's transaction cost about 2 ms of CPU for it)."""
        rows = await self._lists.get(user_id, lambda: self._read_list(user_id))
        return [connection_info(r) for r in rows if service is None or r.service == service]

    async def _read_list(self, user_id: str) -> tuple[_Row, ...]:
        await self.db.ensure_ready()
        rows = await self.db.read_driver(lambda conn: conn.rows(_LIST, (user_id,)))
        return tuple(_Row(*r) for r in rows)

    async def get(self, connection_id: str, *, user_id: str | None) -> ConnectionInfo:
        """One connection; ``user_id`` must own it (``None``: a trusted kernel caller)."""
        async with self.db.session() as s:
            row = await s.get(UserConnection, connection_id)
            _check_owner(row, connection_id, user_id)
            return connection_info(row)  # type: ignore[arg-type]

    async def remove(self, connection_id: str, *, actor: str) -> PurgeResult:
        """Delete a connection: purge its indexed files, cancel its running jobs, drop its data
        sources and tokens (cascade). Owner only."""
        async with self.db.session() as s:
            row = await s.get(UserConnection, connection_id, with_for_update=True)
            _check_owner(row, connection_id, actor)
            result = await self.purge_index(s, connection_id, "connection removed")
            cancelled = await cancel_jobs(
                s, Job.connection_id == connection_id, Job.status.in_(("running", "queued"))
            )
            await s.execute(delete(UserConnection).where(UserConnection.id == connection_id))
            audit(
                s,
                "connection_removed",
                actor,
                connection_id,
                {
                    "purgedFiles": result.files,
                    "purgedChunks": result.chunks,
                    "cancelledJobs": cancelled,
                },
            )
        return result

    async def set_status(
        self, connection_id: str, status: str, reason: str | None = None, *, session: Any = None
    ) -> None:
        """Record a connection's status (e.g. ``needs_reconsent`` with the vendor's reason)."""
        if status not in STATUSES:
            raise ValueError(f"unknown connection status {status!r}; one of {STATUSES}")
        statement = (
            update(UserConnection)
            .where(UserConnection.id == connection_id)
            .values(status=status, status_reason=reason)
        )
        if session is not None:
            await session.execute(statement)
            return
        async with self.db.session() as s:
            await s.execute(statement)

    async def update_grant(self, connection_id: str, grant: TokenGrant, *, actor: str) -> None:
        """Replace a connection's tokens (a new consent) and mark it active again."""
        async with self.db.session() as s:
            row = await s.get(UserConnection, connection_id, with_for_update=True)
            _check_owner(row, connection_id, actor)
            await self.save_grant(s, connection_id, grant)
            row.status, row.status_reason = ACTIVE, None  # type: ignore[union-attr]
            audit(s, "connection_reconsented", actor, connection_id, {})

    # ---- tokens (in the caller's transaction) ---------------------------------------------

    async def read_grant(self, session: AsyncSession, connection_id: str) -> TokenGrant | None:
        """The decrypted tokens of a connection (``None`` when it has none)."""
        row = await session.get(ConnectionCredential, connection_id, populate_existing=True)
        if row is None:
            return None
        return TokenGrant(
            access_token=self.cipher.decrypt(row.access_token),
            refresh_token=self.cipher.decrypt(row.refresh_token) if row.refresh_token else None,
            expires_at=row.expires_at,
            token_type=row.token_type,
        )

    async def save_grant(
        self, session: AsyncSession, connection_id: str, grant: TokenGrant
    ) -> None:
        """Store tokens encrypted (insert or replace; the version grows)."""
        row = await session.get(ConnectionCredential, connection_id)
        access = self.cipher.encrypt(grant.access_token)
        refresh = self.cipher.encrypt(grant.refresh_token) if grant.refresh_token else None
        if row is None:
            session.add(
                ConnectionCredential(
                    connection_id=connection_id,
                    access_token=access,
                    refresh_token=refresh,
                    token_type=grant.token_type,
                    expires_at=grant.expires_at,
                    version=1,
                )
            )
        else:
            row.access_token, row.refresh_token = access, refresh
            row.token_type, row.expires_at = grant.token_type, grant.expires_at
            row.version += 1
        await session.flush()

    async def token_expiry(self, connection_id: str) -> datetime | None:
        """When the stored access token expires (for listings; never the token itself)."""
        async with self.db.session() as s:
            row = await s.get(ConnectionCredential, connection_id)
            return row.expires_at if row else None


def _check_owner(row: UserConnection | None, connection_id: str, user_id: str | None) -> None:
    if row is None:
        raise NotFoundError(f"no connection {connection_id}")
    if user_id is not None and row.user_id != user_id:
        # the same answer as for a missing one: ids of others' connections are not confirmed
        raise PermissionDeniedError(f"no connection {connection_id} for this user")
