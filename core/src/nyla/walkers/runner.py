"""The walker runner: one sync of one data source, page by page.

1. Join the same sync of the data source if this runner already runs it; else take the data
   source's sync lock (:mod:`nyla.walkers.lock`), waiting while another process syncs it.
2. Load the data source, its sync state and limits (central defaults and the source's
   ``ragLimits`` as stored now, which the caller's ``limits=`` may only narrow: a first
   slice, ``--max-items``); check consent.
3. Open the connection and iterate ``adapter.sync`` from the stored checkpoint (an expired
   cursor restarts as a full listing).
4. Per page: prepare its items (:mod:`nyla.walkers.items`), then commit chunks, seen items,
   tombstones, the folders it could not list and the checkpoint in one transaction
   (:mod:`nyla.walkers.commit`), in the background while the next page is listed and
   prepared (one commit in flight, in page order).
5. After a complete full listing (or a complete ``list_ids``), sweep what was not seen
   (:mod:`nyla.walkers.sweep`) — never below a folder the listing could not read, and not at
   all when the listing shrank by more than the threshold. A listing with unlisted folders
   is listed in full again the next time.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import select, update

from nyla import tracing
from nyla.connections.base import capabilities, sync_pages
from nyla.connections.errors import ConnectorError
from nyla.errors import NotFoundError
from nyla.knowledge.limits import get_rag_limits
from nyla.models.datasource import SyncPage, Unlisted, WalkResult
from nyla.tables.knowledge import DataSource, FileContentIndex, UserConnection
from nyla.tables.sync import SyncItem, SyncState
from nyla.text import has_unstorable_chars
from nyla.walkers.commit import (
    ConsentWithdrawn,
    PageCommits,
    consent_holds,
    db_now,
    known_items,
    save_state,
)
from nyla.walkers.items import PagePlan, PageWorker, storable_items
from nyla.walkers.lock import source_lock, write_lock
from nyla.walkers.sweep import Listing, sweep

if TYPE_CHECKING:
    from nyla.db import Database
    from nyla.walkers.ports import FilePreparer, SourceConnections, VectorIndexer, WalkerPlugins

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


@dataclass
class ListingRun:
    """The listing a sync is in: its run id, when it began (database time), whether a full
    listing is under way, and the folders it could not list so far."""

    run_id: str
    started: datetime | None = None
    in_listing: bool = False
    unlisted: list[Unlisted] = field(default_factory=list)

    @classmethod
    def resumed(cls, state: SyncState | None) -> ListingRun:
        """The listing a stored state is in (a new run id when none is under way)."""
        if state is None or not state.in_listing:
            return cls(uuid.uuid4().hex)
        unlisted = [Unlisted.model_validate(u) for u in state.unlisted or []]
        return cls(state.run_id, state.listing_started, True, unlisted)

    def add(self, parts: list[Unlisted], result: WalkResult) -> None:
        """Note what a page could not list (reported once per folder)."""
        for part in parts:
            if all(u.path != part.path for u in self.unlisted):
                self.unlisted.append(part)
                result.errors.append(f"could not list {part.path or '/'}: {part.reason}")


class WalkerRunner:
    """Runs syncs of data sources (``kernel.sync.runner``): the walkers of ``plugins`` list
    them through sessions of ``connections``, ``indexer`` prepares their files, ``indexes``
    builds the vector index after, and the rows live in ``db``. ``lock`` is the per-source
    lock (:func:`~nyla.walkers.lock.source_lock`)."""

    def __init__(
        self,
        db: Database,
        plugins: WalkerPlugins,
        connections: SourceConnections,
        indexer: FilePreparer,
        indexes: VectorIndexer,
        *,
        shrink_threshold: float = SHRINK_THRESHOLD,
        lock: Callable[..., Any] = source_lock,
    ) -> None:
        self.db = db
        self.plugins = plugins
        self.connections = connections
        self.indexer = indexer
        self.indexes = indexes
        self.shrink_threshold = shrink_threshold
        self.lock = lock
        self._running: dict[tuple[str, str, bool], asyncio.Task[WalkResult]] = {}

    def services(self) -> set[str]:
        """Every connector service an installed walker syncs."""
        return {svc for walker in self.plugins.walkers.values() for svc in walker.services}

    def walker_for(self, service: str) -> Any:
        """The installed walker that syncs ``service``."""
        for walker in self.plugins.walkers.values():
            if service in walker.services:
                return walker
        raise NotFoundError(f"no walker syncs {service!r}: install its connector's walker")

    async def _load(self, ds_id: str) -> Source:
        async with self.db.session() as s:
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
        progress and is checked for cancellation between items. The same sync already
        running in this runner is joined (its result, ``joined`` set); one running
        elsewhere is waited for (``waited_s``)."""
        key = (ds_id, json.dumps(limits or {}, sort_keys=True), reconcile)
        running = self._running.get(key)
        if running is not None and not running.done():
            joined = await asyncio.shield(running)
            return joined.model_copy(update={"joined": True}, deep=True)
        task = asyncio.ensure_future(self._alone(ds_id, handle, limits, reconcile))
        self._running[key] = task
        try:
            return await task
        finally:
            if self._running.get(key) is task:
                del self._running[key]

    async def _alone(
        self, ds_id: str, handle: Any, limits: dict[str, int] | None, reconcile: bool
    ) -> WalkResult:
        """The sync under the data source's lock."""
        told = False

        async def keep_waiting() -> bool:
            nonlocal told
            if handle is None:
                return True
            if not told:
                told = True
                await handle.progress(0, None, "waiting for the running sync of this source")
            return not await handle.is_cancelled()

        async with self.lock(self.db, ds_id, keep_waiting) as wait:
            if wait.given_up:
                result = WalkResult(data_source_id=ds_id, cancelled=True)
                result.sweep = "not run: cancelled while waiting for another sync"
            else:
                attributes = {"nyla.data_source.id": ds_id}
                with tracing.span("nyla.sync", "nyla.walkers", attributes) as span:
                    result = await self._sync(ds_id, handle, limits, reconcile, span)
                    span.set(_counts(result))
        result.waited_s = wait.waited_s
        return result

    async def _sync(
        self,
        ds_id: str,
        handle: Any,
        limits: dict[str, int] | None,
        reconcile: bool,
        span: tracing.Span,
    ) -> WalkResult:
        source = await self._load(ds_id)
        span.rename(f"nyla.sync {source.connection.service}")
        span.set({"nyla.sync.source": source.connection.service})
        result = WalkResult(data_source_id=ds_id)
        async with self.db.session() as s:
            allowed = await consent_holds(s, ds_id, lock=False)
        if not allowed:
            result.errors.append("RAG indexing is off for this data source or its connection")
            return result
        walker = self.walker_for(source.connection.service)
        merged = narrowed(get_rag_limits(source.ds, walker.limit_kind), limits)
        async with self.connections.open(source.ds.connection_id, user_id=None) as session:
            session.limits = merged
            worker = PageWorker(self.indexer, source, session, handle, merged, walker)
            try:
                await self._pages(source, session, worker, result, reconcile)
            except ConsentWithdrawn as exc:
                result.cancelled = True
                result.errors.append(str(exc))
            for model, dims in worker.dims.items():
                await self.indexes.ensure_vector_index(model, dims)
        await self._record(ds_id, result)
        return result

    async def _pages(
        self, source: Source, session: Any, worker: PageWorker, result: WalkResult, reconcile: bool
    ) -> None:
        commits = PageCommits(self.db, source.ds, result)
        try:
            ended = await self._walk(source, session, worker, result, commits)
            await commits.wait()
            if ended is not None:
                listing, fed = ended
                await self._finish_listing(source, session, result, listing, reconcile and not fed)
        finally:
            commits.cancel()

    async def _walk(
        self, source: Source, session: Any, worker: PageWorker, result: WalkResult,
        commits: PageCommits,
    ) -> tuple[ListingRun, bool] | None:  # fmt: skip
        """List and prepare the pages, each committed while the next is prepared. When the
        listing ended: it, and whether every page came from a feed that reports deletions."""
        state = source.state
        checkpoint = state.checkpoint if state else None
        listing = ListingRun.resumed(state)
        fed = True
        async for page in sync_pages(session.adapter, session, source.ds.path, checkpoint):
            fed = fed and page.deletions_reported
            if page.full_listing and not listing.in_listing:
                listing = ListingRun(uuid.uuid4().hex, await db_now(self.db), True)
                result.full_resync = checkpoint is not None
            listing.add(page.unlisted, result)
            plan = await self._plan(source, worker, page, result)
            stop = result.cancelled or plan.limit is not None
            new_state = _state_after(page, listing, result, plan, state, stop)
            # an id that cannot be stored was never stored: nothing to delete for it
            gone = [t for t in page.tombstones if not has_unstorable_chars(t)]
            await commits.add(plan, gone, new_state)
            result.pages += 1
            result.unlisted = list(listing.unlisted)
            await self._progress(worker, result, session, page_done=page.done)
            if plan.limit is not None:
                result.stopped_at_limit = True
                result.sweep = f"not run: stopped at {plan.limit}"
                return None
            if result.cancelled:
                result.sweep = "not run: cancelled"
                return None
            if page.done:
                return listing, fed
        return None

    async def _plan(
        self, source: Source, worker: PageWorker, page: SyncPage, result: WalkResult
    ) -> PagePlan:
        """Prepare a page's items, and note the items the connector could not read."""
        items, refused = storable_items(page.items)
        for bad in refused:
            result.items_failed += 1
            result.errors.append(
                f"{bad}: the service gave an item id with a NUL byte or undecodable "
                "bytes, which cannot be stored; the item is left out"
            )
        failed = [f.item_id for f in page.failures if not has_unstorable_chars(f.item_id)]
        known = await known_items(self.db, source.ds.id, [i.id for i in items] + failed)
        plan = await worker.prepare_page(items, known, result)
        worker.note_failures(page.failures, known, plan, result)
        return plan

    async def _finish_listing(
        self, source: Source, session: Any, result: WalkResult, run: ListingRun,
        reconcile: bool,
    ) -> None:  # fmt: skip
        db = self.db
        if run.in_listing:
            listing = Listing(run_id=run.run_id, started=run.started, unlisted=run.unlisted)
        elif reconcile and "list_ids" in capabilities(session.adapter):
            started = await db_now(db)
            try:
                listed = {
                    i
                    async for page in session.adapter.list_ids(session, source.ds.path)
                    for i in page
                }
            except ConnectorError as exc:
                result.sweep = f"not run: the listing failed ({exc.code})"
                return
            listing = Listing(listed=listed, started=started, unlisted=run.unlisted)
        else:
            result.sweep = "not needed: the source's feed reported its deletions"
            return
        result.sweep, deleted = await sweep(db, source.ds, listing, threshold=self.shrink_threshold)
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
        # under the write lock, data source row before state row: the order of a page commit
        async with self.db.session() as s:
            await write_lock(s, ds_id)
            if result.items_indexed:
                await s.execute(
                    update(DataSource)
                    .where(DataSource.id == ds_id)
                    .values(last_indexed=time.time())
                )
            await s.execute(
                update(SyncState)
                .where(SyncState.data_source_id == ds_id)
                .values(
                    last_result=result.model_dump(mode="json", by_alias=True, exclude={"skipped"})
                )
            )


def _counts(result: WalkResult) -> dict[str, Any]:
    """A sync's span attributes: its item counts (no names of items)."""
    counts = ("pages", "items_seen", "items_indexed", "items_unchanged", "items_skipped")
    more = ("items_failed", "items_deleted", "chunks_written", "cancelled")
    out: dict[str, Any] = {f"nyla.sync.{n}": getattr(result, n) for n in (*counts, *more)}
    out["nyla.sync.errors"] = len(result.errors)
    return out


def narrowed(stored: dict[str, int], caller: dict[str, int] | None) -> dict[str, int]:
    """The limits of one sync: the stored ones, each lowered to the caller's where it names
    a smaller one (a limit the source's kind lacks is taken as given)."""
    merged = dict(stored)
    for name, value in (caller or {}).items():
        merged[name] = min(value, merged.get(name, value))
    return merged


def _state_after(
    page: SyncPage, listing: ListingRun, result: WalkResult, plan: PagePlan,
    state: SyncState | None, stop: bool,
) -> dict[str, Any]:  # fmt: skip
    """The sync state to commit with a page. A page that is not complete (a limit, a
    cancel) does not pass its checkpoint; a listing that ends with folders it could not list
    leaves no checkpoint, so the next sync lists everything again."""
    checkpoint: dict[str, Any] | None = page.checkpoint
    if stop:
        checkpoint = state.checkpoint if state else None
    elif page.done and listing.unlisted:
        checkpoint = None
    return {
        "run_id": listing.run_id,
        "in_listing": listing.in_listing and (stop or not page.done),
        "listing_started": listing.started,
        "unlisted": [u.model_dump() for u in listing.unlisted],
        "checkpoint": checkpoint,
        "pages": result.pages + 1,
        "stopped_at_limit": plan.limit,
        "skipped": result.skipped,
    }


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
