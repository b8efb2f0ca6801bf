"""The deletion sweep after a complete listing: what the listing did not see goes, except

- what lies below a folder the listing could not read (:class:`~nyla.models.datasource.
  Unlisted`; an item whose path is not known is kept whenever anything was unlisted),
- what any sync saw after this listing began (``seen_at``): a sync that overlapped this one
  re-marked it, so it exists,
- everything, when more than the threshold of the known items would go (a listing that
  shrank that much is more likely truncated than true).

The sweep runs in one transaction under the data source's write lock (page commits take it
too), and the ``DELETE`` repeats the conditions, so what it removes is exactly what was
unseen when it ran.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import and_, delete, false, func, or_, select

from nyla.knowledge.consent import purge_files
from nyla.models.datasource import Unlisted
from nyla.tables.sync import SyncItem
from nyla.walkers.commit import consent_holds
from nyla.walkers.lock import write_lock

#: item ids per DELETE statement (PostgreSQL takes at most 65535 parameters)
BATCH = 10_000


@dataclass
class Listing:
    """What a listing saw: ``run_id`` (a full listing: the items it saw carry it) or
    ``listed`` (a slim listing: the ids it returned), when it ``started``, and the folders
    it could not list."""

    run_id: str | None = None
    listed: set[str] | None = None
    started: datetime | None = None
    unlisted: list[Unlisted] = field(default_factory=list)

    def unseen(self, item_id: str, run_id: str, seen_at: datetime | None) -> bool:
        """Whether the listing missed this item and no sync saw it since it began."""
        missed = (self.listed is not None and item_id not in self.listed) or (
            self.run_id is not None and run_id != self.run_id
        )
        if not missed:
            return False
        return self.started is None or seen_at is None or seen_at < self.started

    def shielded(self, path: str | None) -> bool:
        """Whether an item at ``path`` lies below a folder that could not be listed."""
        if not self.unlisted:
            return False
        if path is None:
            return True
        for part in self.unlisted:
            top = part.path.rstrip("/")
            if not top or path == top or path.startswith(top + "/"):
                return True
        return False

    def still_unseen(self) -> Any:
        """The SQL form of :meth:`unseen` (without the ``listed`` part, which the caller
        applies as the candidate ids)."""
        conditions = []
        if self.run_id is not None:
            conditions.append(SyncItem.run_id != self.run_id)
        if self.started is not None:
            conditions.append(or_(SyncItem.seen_at.is_(None), SyncItem.seen_at < self.started))
        return and_(*conditions) if conditions else ~false()


async def sweep(db: Any, ds: Any, listing: Listing, *, threshold: float) -> tuple[str, int]:
    """Delete what ``listing`` did not see (see the module); returns what the sweep says
    and how many files it purged."""
    async with db.session() as s:
        await write_lock(s, ds.id)
        if not await consent_holds(s, ds.id, lock=True):
            return "not run: indexing was switched off", 0
        mine = SyncItem.data_source_id == ds.id
        known = int(await s.scalar(select(func.count()).select_from(SyncItem).where(mine)) or 0)
        candidates = select(SyncItem.item_id, SyncItem.run_id, SyncItem.path, SyncItem.seen_at)
        if listing.listed is None:
            # a full listing: only what it did not see is read (every item of a 50,000-file
            # source read here was ~40 MiB of a sync's peak); the SQL form is the same test
            candidates = candidates.where(mine, listing.still_unseen())
        else:
            candidates = candidates.where(mine)
        gone = [
            item_id
            for item_id, run_id, path, seen_at in await s.execute(candidates)
            if listing.unseen(item_id, run_id, seen_at) and not listing.shielded(path)
        ]
        if len(gone) > threshold * known:
            return (
                f"refused: the listing shrank from {known} to {known - len(gone)} items "
                f"(more than {threshold:.0%} would be deleted)",
                0,
            )
        deleted: list[str] = []
        for start in range(0, len(gone), BATCH):
            batch = gone[start : start + BATCH]
            done = await s.execute(
                delete(SyncItem)
                .where(
                    SyncItem.data_source_id == ds.id,
                    SyncItem.item_id.in_(batch),
                    listing.still_unseen(),
                )
                .returning(SyncItem.item_id)
            )
            deleted += [r[0] for r in done]
        files = [f"{ds.connection_id}:{i}" for i in deleted]
        purged = (await purge_files(s, files, "not in the source's complete listing")).files
    return outcome(len(deleted), listing.unlisted), purged


def outcome(deleted: int, unlisted: list[Unlisted]) -> str:
    """What a sweep that ran says (``complete: ...`` or ``incomplete: ...``)."""
    what = f"{deleted} deleted" if deleted else "nothing deleted"
    if not unlisted:
        return f"complete: {what}"
    count = len(unlisted)
    folders = "1 folder" if count == 1 else f"{count} folders"
    first = f"{unlisted[0].path or '/'}: {unlisted[0].reason}"
    more = "" if count == 1 else f" and {count - 1} more"
    below = "it" if count == 1 else "them"
    return f"incomplete: {folders} could not be listed ({first}{more}); {what}, none below {below}"
