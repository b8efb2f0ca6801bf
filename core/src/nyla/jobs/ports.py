"""The sync service as the job queue calls it, as protocols: the queue is typed against them
instead of the sync service (which defers its jobs to the queue), so neither imports the
other both ways."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from nyla.models.datasource import WalkResult


class Ticker(Protocol):
    """The resync scheduler as the queue's periodic task calls it."""

    async def tick(self, now: datetime | None = None) -> dict[str, str]: ...


class QueuedSync(Protocol):
    """The sync service as the queue's workers call it: one sync's work, the scheduler."""

    @property
    def scheduler(self) -> Ticker: ...

    async def work(
        self,
        ds_id: str,
        handle: Any,
        *,
        limits: dict[str, int] | None = None,
        first_slice: int | None = None,
    ) -> WalkResult: ...
