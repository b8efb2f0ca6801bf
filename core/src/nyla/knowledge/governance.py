"""Connections, data sources, consent and purge: the governance side of the knowledge store
(``kernel.knowledge.governance``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import ColumnElement, select

from nyla.db import Database
from nyla.knowledge.consent import (
    PermissionDeniedError,
    purge_files,
    set_knowledge_consent,
    set_rag_index_enabled,
)
from nyla.knowledge.policy import effective_policy, normalize_path
from nyla.models.files import Scope
from nyla.models.knowledge import PolicyValue, PurgeResult
from nyla.tables.knowledge import DataSource, FileContentIndex, UserConnection, audit


class Governance:
    """Registering connections and data sources, the policy resolver, consent switches and
    purges, each in one transaction with an audit record where something is deleted."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def add_connection(
        self,
        connection_id: str,
        service: str,
        *,
        user_id: str,
        mandate_id: str | None = None,
        label: str = "",
        knowledge_ingestion_enabled: bool = True,
    ) -> None:
        """Register a user's connection (the host's connection store mirrors it here)."""
        async with self.db.session() as s:
            s.add(
                UserConnection(
                    id=connection_id,
                    service=service,
                    user_id=user_id,
                    mandate_id=mandate_id,
                    label=label,
                    knowledge_ingestion_enabled=knowledge_ingestion_enabled,
                )
            )

    async def add_data_source(
        self,
        data_source_id: str,
        connection_id: str,
        path: str,
        *,
        user_id: str,
        mandate_id: str | None = None,
        feature_instance_id: str | None = None,
        rag_index_enabled: bool | None = None,
        neutralize: bool | None = None,
        scope: Scope | str | None = None,
        settings: dict[str, Any] | None = None,
        label: str = "",
    ) -> None:
        """Register a tree element of a connection with its explicit policy values."""
        async with self.db.session() as s:
            s.add(
                DataSource(
                    id=data_source_id,
                    connection_id=connection_id,
                    path=normalize_path(path),
                    label=label,
                    user_id=user_id,
                    mandate_id=mandate_id,
                    feature_instance_id=feature_instance_id,
                    rag_index_enabled=rag_index_enabled,
                    neutralize=neutralize,
                    scope=str(Scope(scope)) if scope is not None else None,
                    settings=settings or {},
                )
            )

    async def resolve_policy(self, connection_id: str, path: str, field: str) -> PolicyValue:
        """The effective ``rag_index_enabled`` / ``neutralize`` / ``scope`` at ``path``."""
        async with self.db.session() as s:
            rows = list(
                (
                    await s.execute(
                        select(DataSource).where(DataSource.connection_id == connection_id)
                    )
                ).scalars()
            )
        return effective_policy(rows, path, field)

    async def set_rag_index_enabled(
        self, data_source_id: str, enabled: bool | None, *, actor: str
    ) -> PurgeResult:
        """Toggle indexing of a tree element; off purges synchronously in one transaction."""
        async with self.db.session() as s:
            return await set_rag_index_enabled(s, data_source_id, enabled, actor=actor)

    async def set_source_policy(
        self, data_source_id: str, field: str, value: Any, *, actor: str
    ) -> PurgeResult:
        """Set ``neutralize`` or ``scope`` of a tree element (``None``: inherit); files
        indexed under the old effective value are purged so the next sync redoes them."""
        from nyla.knowledge.source_policy import set_source_policy

        async with self.db.session() as s:
            return await set_source_policy(s, data_source_id, field, value, actor=actor)

    async def set_knowledge_consent(
        self, connection_id: str, enabled: bool, *, actor: str
    ) -> PurgeResult:
        """Toggle a connection's ingestion consent; off purges and cancels its jobs."""
        async with self.db.session() as s:
            return await set_knowledge_consent(s, connection_id, enabled, actor=actor)

    async def purge(
        self,
        *,
        actor: str,
        file_ids: Sequence[str] | None = None,
        data_source_id: str | None = None,
        connection_id: str | None = None,
        owner_user_id: str | None = None,
        mandate_id: str | None = None,
        is_mandate_admin: bool = False,
        is_platform_admin: bool = False,
    ) -> PurgeResult:
        """Delete indexed files (and their chunks) matching every given criterion, in one
        transaction, with an audit record. At least one criterion is required.

        The actor may purge the files it owns; a mandate admin also the mandate-scoped files
        of its mandate (``mandate_id`` must be given), a platform admin any file. When any
        matching file is beyond that, nothing is deleted (``PermissionDeniedError``)."""
        f = FileContentIndex
        where: list[ColumnElement[bool]] = []
        if file_ids is not None:
            where.append(f.file_id.in_(list(file_ids)))
        if data_source_id is not None:
            where.append(f.data_source_id == data_source_id)
        if connection_id is not None:
            where.append(f.connection_id == connection_id)
        if owner_user_id is not None:
            where.append(f.user_id == owner_user_id)
        if mandate_id is not None:
            where.append(f.mandate_id == mandate_id)
        if not where:
            raise ValueError("purge needs at least one criterion")
        async with self.db.session() as s:
            rows = (
                await s.execute(select(f.file_id, f.user_id, f.scope, f.mandate_id).where(*where))
            ).all()
            if not is_platform_admin:
                foreign = [
                    r.file_id
                    for r in rows
                    if r.user_id != actor
                    and not (
                        is_mandate_admin
                        and mandate_id is not None
                        and r.scope == Scope.MANDATE.value
                        and r.mandate_id == mandate_id
                    )
                ]
                if foreign:
                    raise PermissionDeniedError(
                        f"{actor} may not purge {len(foreign)} of the {len(rows)} matching "
                        f"files (e.g. {foreign[0]}); nothing was deleted"
                    )
            result = await purge_files(s, [r.file_id for r in rows], "purge")
            audit(
                s,
                "knowledge_purged",
                actor,
                data_source_id or connection_id or owner_user_id or mandate_id or "files",
                {"files": result.files, "chunks": result.chunks},
            )
        return result
