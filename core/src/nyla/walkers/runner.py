"""The walker runner: one sync of one data source, page by page.

1. Load the data source, its sync state and limits (central defaults, the source's
   ``ragLimits`` and the caller's overrides); check consent.
2. Open the connection and iterate ``adapter.sync`` from the stored checkpoint (an expired
   cursor restarts as a full listing).
3. Per page: prepare its items (:mod:`nyla.walkers.items`), then commit chunks, seen items,
   tombstones and the checkpoint in one transaction (:mod:`nyla.walkers.commit`).
4. After a complete full listing (or a complete ``list_ids``), sweep what was not seen — unless
   the listing shrank by more than the threshold.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy import select

from nyla.connections.base import capabilities, sync_pages
from nyla.connections.errors import ConnectorError
from nyla.knowledge.consent import NotFoundError
from nyla.knowledge.limits import get_rag_limits
from nyla.knowledge.tables import DataSource, FileContentIndex, UserConnection
from nyla.models.datasource import WalkResult
from nyla.text import has_unstorable_chars
from nyla.walkers.commit import (
    ConsentWithdrawn,
    commit_page,
    consent_holds,
    known_items,
    save_state,
    sweep,
)
from nyla.walkers.items import PageWorker, storable_items
from nyla.walkers.tables import SyncItem, SyncState

if TYPE_CHECKING:
    from nyla.kernel import Kernel

log = logging.getLogger(__name__)

#: more than this share of known items missing from a complete listing refuses the sweep
SHRINK_THRESHOLD = 0.5


@dataclass
class Source:
    """A data source with the rows a sync needs."""

    ds: DataSource
    connection: UserConnection
    siblings: list[DataSource]
    state: SyncState | None


class WalkerRunner:
    """Runs syncs of data sources for a kernel (``kernel.sync`` holds one)."""

    def __init__(self, kernel: Kernel, *, shrink_threshold: float = SHRINK_THRESHOLD) -> None:
        self.kernel = kernel
        self.shrink_threshold = shrink_threshold
        self.walker: Any = None

    def walker_for(self, service: str) -> Any:
        """The installed walker that syncs ``service``."""
        for walker in self.kernel.plugins.walkers.values():
            if service in walker.services:
                return walker
        raise NotFoundError(f"no walker syncs {service!r}: install its connector's walker")

    async def _load(self, ds_id: str) -> Source:
        async with self.kernel.db.session() as s:
            ds = await s.get(DataSource, ds_id)
            if ds is None:
                raise NotFoundError(f"no data source {ds_id}")
            conn = await s.get(UserConnection, ds.connection_id)
            siblings = list(
                (
                    await s.execute(
                        select(DataSource).where(DataSource.connection_id == ds.connection_id)
                    )
                ).scalars()
            )
            state = await s.get(SyncState, ds_id)
            lost = await _index_lost(s, ds_id)
        if lost and state is not None:  # purged meanwhile: what the checkpoint skips is gone
            state.checkpoint, state.in_listing = None, False
        return Source(ds=ds, connection=conn, siblings=siblings, state=state)  # type: ignore[arg-type]

    async def sync(
        self,
        ds_id: str,
        handle: Any = None,
        *,
        limits: dict[str, int] | None = None,
        reconcile: bool = True,
    ) -> WalkResult:
        """Sync one data source; ``handle`` (a :class:`~nyla.jobs.runtime.JobHandle`) gets
        progress and is checked for cancellation between items."""
        source = await self._load(ds_id)
        result = WalkResult(data_source_id=ds_id)
        async with self.kernel.db.session() as s:
            allowed = await consent_holds(s, ds_id, lock=False)
        if not allowed:
            result.errors.append("RAG indexing is off for this data source or its connection")
            return result
        self.walker = self.walker_for(source.connection.service)
        merged = {**get_rag_limits(source.ds, self.walker.limit_kind), **(limits or {})}
        async with self.kernel.connections.open(source.ds.connection_id, user_id=None) as session:
            session.limits = merged
            worker = PageWorker(self, source, session, handle, merged)
            try:
                await self._pages(source, session, worker, result, reconcile)
            except ConsentWithdrawn as exc:
                result.cancelled = True
                result.errors.append(str(exc))
            for model, dims in worker.dims.items():
                await self.kernel.knowledge.ensure_vector_index(model, dims)
        await self._record(ds_id, result)
        return result

    async def _pages(
        self, source: Source, session: Any, worker: PageWorker, result: WalkResult, reconcile: bool
    ) -> None:
        state = source.state
        checkpoint = state.checkpoint if state else None
        in_listing = bool(state and state.in_listing)
        run_id = state.run_id if in_listing and state else uuid.uuid4().hex
        db = self.kernel.db
        async for page in sync_pages(session.adapter, session, source.ds.path, checkpoint):
            if page.full_listing and not in_listing:
                in_listing, run_id = True, uuid.uuid4().hex
                result.full_resync = checkpoint is not None
            items, refused = storable_items(page.items)
            for bad in refused:
                result.items_failed += 1
                result.errors.append(
                    f"{bad}: the service gave an item id with a NUL byte or undecodable "
                    "bytes, which cannot be stored; the item is left out"
                )
            known = await known_items(db, source.ds.id, [i.id for i in items])
            plan = await worker.prepare_page(items, known, result)
            stop = result.cancelled or plan.limit is not None
            new_state = {
                "run_id": run_id,
                "in_listing": in_listing and not page.done,
                "checkpoint": (state.checkpoint if state else None) if stop else page.checkpoint,
                "pages": result.pages + 1,
                "stopped_at_limit": plan.limit,
                "skipped": result.skipped,
            }
            if stop:  # the page is not complete: its checkpoint is not passed
                new_state["in_listing"] = in_listing
            # an id that cannot be stored was never stored: nothing to delete for it
            gone = [t for t in page.tombstones if not has_unstorable_chars(t)]
            result.items_deleted += await commit_page(db, source.ds, plan, gone, new_state)
            result.pages += 1
            result.chunks_written += sum(len(p.chunks) for p in plan.prepared)
            await self._progress(worker, result, session, page_done=page.done)
            if plan.limit is not None:
                result.stopped_at_limit = True
                result.sweep = f"not run: stopped at {plan.limit}"
                return
            if result.cancelled:
                result.sweep = "not run: cancelled"
                return
            if page.done:
                await self._finish_listing(source, session, result, run_id, in_listing, reconcile)
                return

    async def _finish_listing(
        self, source: Source, session: Any, result: WalkResult, run_id: str, full: bool,
        reconcile: bool,
    ) -> None:  # fmt: skip
        db = self.kernel.db
        if full:
            result.sweep, deleted = await sweep(
                db, source.ds, keep=None, run_id=run_id, threshold=self.shrink_threshold
            )
        elif reconcile and "list_ids" in capabilities(session.adapter):
            try:
                listed = {
                    i
                    async for page in session.adapter.list_ids(session, source.ds.path)
                    for i in page
                }
            except ConnectorError as exc:
                result.sweep = f"not run: the listing failed ({exc.code})"
                return
            result.sweep, deleted = await sweep(
                db, source.ds, keep=listed, run_id=None, threshold=self.shrink_threshold
            )
        else:
            result.sweep = "not needed: the source reports deletions"
            return
        result.items_deleted += deleted

    async def _progress(
        self, worker: PageWorker, result: WalkResult, session: Any, *, page_done: bool
    ) -> None:
        if worker.handle is None:
            return
        await worker.handle.progress(result.items_seen, None, f"page {result.pages}")
        await worker.handle.details(
            budgetLeft=session.http.budget_left,
            requests=session.http.stats.requests,
            waitedSeconds=round(session.http.stats.waited_s, 1),
            indexed=result.items_indexed,
            unchanged=result.items_unchanged,
            chunks=result.chunks_written,
        )

    async def _record(self, ds_id: str, result: WalkResult) -> None:
        async with self.kernel.db.session() as s:
            state = await s.get(SyncState, ds_id)
            if state is not None:
                state.last_result = result.model_dump(
                    mode="json", by_alias=True, exclude={"skipped"}
                )
            ds = await s.get(DataSource, ds_id)
            if ds is not None and result.items_indexed:
                import time

                ds.last_indexed = time.time()


async def _index_lost(session: Any, ds_id: str) -> bool:
    """True when items recorded as indexed lost their index rows (a purge happened)."""
    row = (
        await session.execute(
            select(SyncItem.item_id)
            .outerjoin(FileContentIndex, FileContentIndex.file_id == SyncItem.file_id)
            .where(
                SyncItem.data_source_id == ds_id,
                SyncItem.file_id.is_not(None),
                SyncItem.content_hash.is_not(None),
                FileContentIndex.file_id.is_(None),
            )
            .limit(1)
        )
    ).first()
    return row is not None


__all__ = ["WalkerRunner", "save_state"]
