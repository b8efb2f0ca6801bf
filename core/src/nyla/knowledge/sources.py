"""Read views of the data-source trees of connections for hosts (the write side is in
:mod:`nyla.knowledge.consent` and :class:`~nyla.knowledge.service.KnowledgeService`)."""

from __future__ import annotations

from typing import Any

from pydantic import Field
from sqlalchemy import select

from nyla.knowledge.policy import effective_policy
from nyla.models.base import WireModel
from nyla.tables.knowledge import DataSource, UserConnection


class DataSourceView(WireModel):
    """A tree element of a connection: its explicit policy values (``None`` = inherited)
    and the effective ones the policy resolver gives it (``rag_index_effective`` is also off
    whenever its connection's knowledge consent is off)."""

    id: str
    connection_id: str
    path: str
    label: str = ""
    user_id: str
    mandate_id: str | None = None
    scope: str | None = None
    rag_index_enabled: bool | None = None
    rag_index_effective: bool = False
    neutralize: bool | None = None
    neutralize_effective: bool = False
    scope_effective: str = "personal"
    last_indexed: float | None = None
    settings: dict[str, Any] = Field(default_factory=dict)


def _source(row: DataSource, siblings: list[DataSource], consent: bool) -> DataSourceView:
    return DataSourceView(
        id=row.id,
        connection_id=row.connection_id,
        path=row.path,
        label=row.label,
        user_id=row.user_id,
        mandate_id=row.mandate_id,
        scope=row.scope,
        rag_index_enabled=row.rag_index_enabled,
        rag_index_effective=consent
        and bool(effective_policy(siblings, row.path, "rag_index_enabled").value),
        neutralize=row.neutralize,
        neutralize_effective=bool(effective_policy(siblings, row.path, "neutralize").value),
        scope_effective=str(effective_policy(siblings, row.path, "scope").value),
        last_indexed=row.last_indexed,
        settings=dict(row.settings or {}),
    )


async def list_data_sources(db: Any, connection_id: str) -> list[DataSourceView]:
    """The tree elements of a connection, ordered by path."""
    query = select(DataSource).where(DataSource.connection_id == connection_id)
    async with db.session() as s:
        rows = list((await s.execute(query.order_by(DataSource.path))).scalars())
        consent = await _consent(s, connection_id)
    return [_source(r, rows, consent) for r in rows]


async def _consent(session: Any, connection_id: str) -> bool:
    """Whether the connection exists with its knowledge ingestion consent on."""
    query = select(UserConnection.knowledge_ingestion_enabled).where(
        UserConnection.id == connection_id
    )
    return bool((await session.execute(query)).scalar())


async def get_data_source(db: Any, data_source_id: str) -> DataSourceView | None:
    """One tree element with its effective policy, or ``None``."""
    async with db.session() as s:
        row = await s.get(DataSource, data_source_id)
        if row is None:
            return None
        siblings = list(
            (
                await s.execute(
                    select(DataSource).where(DataSource.connection_id == row.connection_id)
                )
            ).scalars()
        )
        consent = await _consent(s, row.connection_id)
    return _source(row, siblings, consent)
