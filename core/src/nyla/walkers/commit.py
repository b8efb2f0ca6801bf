"""Writing a sync page in one transaction (the sweep is :mod:`nyla.walkers.sweep`).

A page's chunks, its seen items, its tombstones and the checkpoint after it are committed
together: an interrupted sync resumes at the first page not committed, with nothing written
twice and nothing lost. The transaction first takes the data source's write lock
(:mod:`nyla.walkers.lock`), then a share lock on the connection and the data source, and
checks consent again; a consent change (which locks them for update and purges) either
finishes before it — and the page is dropped — or waits for it.
"""

from __future__ import annotations

import asyncio
import json
from datetime import datetime
from typing import Any

from sqlalchemy import delete, func, select, text
from sqlalchemy.dialects.postgresql import insert

from nyla.knowledge.consent import purge_files
from nyla.knowledge.policy import effective_policy
from nyla.knowledge.writing import write_prepared
from nyla.models.datasource import WalkResult
from nyla.tables.knowledge import DataSource, FileContentIndex, UserConnection
from nyla.tables.sync import SyncItem, SyncState
from nyla.walkers.items import Known, PagePlan, Seen
from nyla.walkers.lock import write_lock

#: the columns of a seen item a page writes (``seen_at`` is the database's clock)
_SEEN = "data_source_id, item_id, item_hash, content_hash, file_id, run_id, path"


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
        await write_lock(s, ds.id)
        if not await consent_holds(s, ds.id, lock=True):
            raise ConsentWithdrawn(f"indexing was switched off for data source {ds.id}")
        if plan.prepared:
            await write_prepared(s, plan.prepared, lookups=True)
        if plan.renamed:
            await _rename(s, plan.renamed)
        if plan.seen:
            await _mark_seen(s, ds.id, plan.seen, state["run_id"])
        purged = await _delete_items(s, ds, tombstones, "deleted at the source")
        await save_state(s, ds.id, state)
    return purged


class PageCommits:
    """Commits a sync's pages in order, one transaction in flight: the caller lists and
    prepares the next page while the database stores the last (as a bulk load's
    :class:`~nyla.knowledge.batch_writer.BatchWriter`). Each commit adds its purged files and
    chunks to ``result``; :meth:`wait` raises what the last commit raised."""

    def __init__(self, db: Any, ds: Any, result: WalkResult) -> None:
        self.db = db
        self.ds = ds
        self.result = result
        self._task: asyncio.Task[None] | None = None

    async def add(self, plan: PagePlan, tombstones: list[str], state: dict[str, Any]) -> None:
        """Start the commit of a page once the previous one has committed."""
        await self.wait()
        self._task = asyncio.create_task(self._commit(plan, tombstones, state))

    async def _commit(self, plan: PagePlan, tombstones: list[str], state: dict[str, Any]) -> None:
        self.result.items_deleted += await commit_page(self.db, self.ds, plan, tombstones, state)
        self.result.chunks_written += sum(len(p.chunks) for p in plan.prepared)

    async def wait(self) -> None:
        """Wait until every page added has committed."""
        task, self._task = self._task, None
        if task is not None:
            await task

    def cancel(self) -> None:
        """Abandon the commit in flight (it rolls back; the sync resumes before that page)
        when the sync ends with an error of its own."""
        task, self._task = self._task, None
        if task is None:
            return
        if task.done():
            if not task.cancelled():
                task.exception()  # the sync's own error is the one reported
        else:
            task.cancel()


async def _rename(session: Any, renamed: dict[str, tuple[str, str, str | None]]) -> None:
    """Give index rows whose content did not change their item's current name, path and
    web address (one statement for the page; the rows are locked in file id order, the
    order of every writer)."""
    rows = [
        {"file_id": file_id, "name": name, "source_path": path, "web_url": url}
        for file_id, (name, path, url) in sorted(renamed.items())
    ]
    await session.execute(
        text(
            "WITH r AS (SELECT * FROM jsonb_to_recordset(CAST(:rows AS jsonb)) "
            "AS r(file_id text, name text, source_path text, web_url text)), "
            "locked AS (SELECT f.file_no FROM knowledge_file_index f JOIN r USING (file_id) "
            "WHERE f.name <> r.name OR f.source_path IS DISTINCT FROM r.source_path "
            "OR f.web_url IS DISTINCT FROM r.web_url ORDER BY f.file_id FOR UPDATE OF f) "
            "UPDATE knowledge_file_index f SET name = r.name, source_path = r.source_path, "
            "web_url = r.web_url, updated_at = now() FROM r "
            "WHERE f.file_id = r.file_id AND f.file_no IN (SELECT file_no FROM locked)"
        ),
        {"rows": json.dumps(rows)},
    )


async def _mark_seen(session: Any, ds_id: str, seen: dict[str, Seen], run_id: str) -> None:
    """Upsert the page's items as seen by ``run_id`` now; ``seen_at`` never goes back (a
    slower transaction of an overlapping sync must not make an item look unseen)."""
    rows = [
        {
            "data_source_id": ds_id,
            "item_id": item_id,
            "item_hash": mark.item_hash,
            "content_hash": mark.content_hash,
            "file_id": mark.file_id,
            "run_id": run_id,
            "path": mark.path,
        }
        for item_id, mark in sorted(seen.items())  # one lock order for every writer
    ]
    # one JSON parameter, not a VALUES row of eight binds per item: compiling those cost a
    # page of 100 items about 35 ms of client time (as write_prepared found for its rows)
    await session.execute(
        text(
            f"INSERT INTO sync_item ({_SEEN}, seen_at) SELECT {_SEEN}, now() "
            "FROM jsonb_populate_recordset(NULL::sync_item, CAST(:rows AS jsonb)) "
            "ON CONFLICT (data_source_id, item_id) DO UPDATE SET "
            "item_hash = EXCLUDED.item_hash, content_hash = EXCLUDED.content_hash, "
            "file_id = EXCLUDED.file_id, run_id = EXCLUDED.run_id, "
            "path = coalesce(EXCLUDED.path, sync_item.path), "
            "seen_at = greatest(sync_item.seen_at, EXCLUDED.seen_at)"
        ),
        {"rows": json.dumps(rows)},
    )


async def save_state(session: Any, ds_id: str, state: dict[str, Any]) -> None:
    """Upsert the data source's sync state (in the caller's transaction)."""
    statement = insert(SyncState).values(data_source_id=ds_id, **state)
    await session.execute(
        statement.on_conflict_do_update(
            index_elements=["data_source_id"],
            set_={**{k: statement.excluded[k] for k in state}, "updated_at": func.now()},
        )
    )


async def db_now(db: Any) -> datetime:
    """The database's clock (what ``seen_at`` is stamped with)."""
    async with db.session() as s:
        return (await s.execute(select(func.now()))).scalar_one()  # type: ignore[no-any-return]


async def _delete_items(session: Any, ds: Any, item_ids: list[str], reason: str) -> int:
    if not item_ids:
        return 0
    file_ids = [f"{ds.connection_id}:{i}" for i in item_ids]
    result = await purge_files(session, file_ids, reason)
    await session.execute(
        delete(SyncItem).where(SyncItem.data_source_id == ds.id, SyncItem.item_id.in_(item_ids))
    )
    return result.files
