"""Writing a sync page and sweeping deletions, each in one transaction.

A page's chunks, its seen items, its tombstones and the checkpoint after it are committed
together: an interrupted sync resumes at the first page not committed, with nothing written
twice and nothing lost. The transaction first takes a share lock on the connection and the
data source and checks consent again; a consent change (which locks them for update and
purges) either finishes before it — and the page is dropped — or waits for it.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import delete, func, select
from sqlalchemy.dialects.postgresql import insert

from nyla.knowledge.consent import purge_files
from nyla.knowledge.policy import effective_policy
from nyla.knowledge.tables import DataSource, FileContentIndex, UserConnection
from nyla.knowledge.writing import write_prepared
from nyla.walkers.items import Known, PagePlan
from nyla.walkers.tables import SyncItem, SyncState


class ConsentWithdrawn(Exception):
    """Indexing was switched off for the data source or its connection during the sync."""


async def consent_holds(session: Any, ds_id: str, *, lock: bool) -> bool:
    """Whether the connection's ingestion consent and the data source's effective
    ``rag_index_enabled`` are on (with ``lock``: a share lock on both rows)."""
    query = select(DataSource).where(DataSource.id == ds_id)
    ds = (await session.execute(query.with_for_update(read=True) if lock else query)).scalar()
    if ds is None:
        return False
    conn_query = select(UserConnection).where(UserConnection.id == ds.connection_id)
    conn = (
        await session.execute(conn_query.with_for_update(read=True) if lock else conn_query)
    ).scalar()
    if conn is None or not conn.knowledge_ingestion_enabled:
        return False
    siblings = list(
        (
            await session.execute(
                select(DataSource).where(DataSource.connection_id == ds.connection_id)
            )
        ).scalars()
    )
    return bool(effective_policy(siblings, ds.path, "rag_index_enabled").value)


async def known_items(db: Any, ds_id: str, item_ids: list[str]) -> dict[str, Known]:
    """What earlier syncs stored about these items (indexed: their file is still indexed)."""
    if not item_ids:
        return {}
    async with db.session() as s:
        rows = await s.execute(
            select(
                SyncItem.item_id, SyncItem.item_hash, SyncItem.content_hash, FileContentIndex.status
            )
            .outerjoin(FileContentIndex, FileContentIndex.file_id == SyncItem.file_id)
            .where(SyncItem.data_source_id == ds_id, SyncItem.item_id.in_(item_ids))
        )
        return {r[0]: Known(r[1], r[2], r[3] == "indexed") for r in rows}


async def commit_page(
    db: Any,
    ds: Any,
    plan: PagePlan,
    tombstones: list[str],
    state: dict[str, Any],
) -> int:
    """Write one page in one transaction; returns the number of files purged for tombstones.
    Raises :class:`ConsentWithdrawn` (nothing written) when indexing was switched off."""
    async with db.session() as s:
        if not await consent_holds(s, ds.id, lock=True):
            raise ConsentWithdrawn(f"indexing was switched off for data source {ds.id}")
        if plan.prepared:
            await write_prepared(s, plan.prepared, lookups=True)
        if plan.seen:
            rows = [
                {
                    "data_source_id": ds.id,
                    "item_id": item_id,
                    "item_hash": digest,
                    "content_hash": content_hash,
                    "file_id": file_id,
                    "run_id": state["run_id"],
                }
                for item_id, (digest, content_hash, file_id) in plan.seen.items()
            ]
            statement = insert(SyncItem).values(rows)
            await s.execute(
                statement.on_conflict_do_update(
                    index_elements=["data_source_id", "item_id"],
                    set_={
                        k: statement.excluded[k]
                        for k in ("item_hash", "content_hash", "file_id", "run_id")
                    },
                )
            )
        purged = await _delete_items(s, ds, tombstones, "deleted at the source")
        await save_state(s, ds.id, state)
    return purged


async def save_state(session: Any, ds_id: str, state: dict[str, Any]) -> None:
    """Upsert the data source's sync state (in the caller's transaction)."""
    statement = insert(SyncState).values(data_source_id=ds_id, **state)
    await session.execute(
        statement.on_conflict_do_update(
            index_elements=["data_source_id"],
            set_={**{k: statement.excluded[k] for k in state}, "updated_at": func.now()},
        )
    )


async def _delete_items(session: Any, ds: Any, item_ids: list[str], reason: str) -> int:
    if not item_ids:
        return 0
    file_ids = [f"{ds.connection_id}:{i}" for i in item_ids]
    result = await purge_files(session, file_ids, reason)
    await session.execute(
        delete(SyncItem).where(SyncItem.data_source_id == ds.id, SyncItem.item_id.in_(item_ids))
    )
    return result.files


async def sweep(
    db: Any, ds: Any, *, keep: set[str] | None, run_id: str | None, threshold: float
) -> tuple[str, int]:
    """Delete the items a complete listing did not contain (``keep``: the listed ids, or
    those seen by listing run ``run_id``). Refused when more than ``threshold`` of the known
    items would go: a listing that shrank that much is more likely truncated than true."""
    async with db.session() as s:
        rows = (
            await s.execute(
                select(SyncItem.item_id, SyncItem.run_id).where(SyncItem.data_source_id == ds.id)
            )
        ).all()
        gone = [
            item_id
            for item_id, seen_run in rows
            if (keep is not None and item_id not in keep)
            or (run_id is not None and seen_run != run_id)
        ]
        if not gone:
            return "complete: nothing deleted", 0
        if len(gone) > threshold * len(rows):
            return (
                f"refused: the listing shrank from {len(rows)} to {len(rows) - len(gone)} items "
                f"(more than {threshold:.0%} would be deleted)",
                0,
            )
        deleted = await _delete_items(s, ds, gone, "not in the source's complete listing")
        return f"complete: {len(gone)} deleted", deleted
