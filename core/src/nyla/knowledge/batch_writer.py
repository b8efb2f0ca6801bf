"""Background batch writes of a bulk load: prepare the next files while the last are stored."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from nyla.knowledge.writing import PreparedFile
from nyla.models.knowledge import IndexResult

#: stores prepared files (``lookups`` as in :meth:`~nyla.knowledge.indexing.Indexer.write`)
WriteFn = Callable[..., Awaitable[list[IndexResult]]]


class BatchWriter:
    """Writes prepared files in the background, in transactions of about ``batch_rows``
    chunks (or ``max_files`` files), one transaction in flight: the caller prepares (reads,
    extracts, embeds) the next batch while the database stores the last. ``on_written``
    receives ``(tag, prepared, result)`` triples in the order the files were added. ``write``
    stores a list of prepared files (usually :meth:`Indexer.write
    <nyla.knowledge.indexing.Indexer.write>`)."""

    def __init__(
        self,
        write: WriteFn,
        *,
        batch_rows: int,
        on_written: Callable[[list[tuple[Any, PreparedFile, IndexResult]]], None],
        max_files: int = 200,
        lookups: bool = False,
    ) -> None:
        self.write = write
        self.batch_rows = batch_rows
        self.max_files = max_files
        self.lookups = lookups
        self.on_written = on_written
        self._pending: list[tuple[Any, PreparedFile]] = []
        self._rows = 0
        self._task: asyncio.Task[None] | None = None

    async def add(self, prepared: PreparedFile, tag: Any = None) -> None:
        """Queue a file; starts a write once a batch is full (after the previous one)."""
        self._pending.append((tag, prepared))
        self._rows += len(prepared.chunks)
        if self._rows >= self.batch_rows or len(self._pending) >= self.max_files:
            await self._start()

    async def flush(self) -> None:
        """Write what is queued and wait until every write has finished."""
        await self._start()
        await self._wait()

    def cancel(self) -> None:
        """Abandon the write in flight (its transaction rolls back: nothing half-written)."""
        if self._task is not None and not self._task.done():
            self._task.cancel()

    async def _start(self) -> None:
        batch, self._pending, self._rows = self._pending, [], 0
        await self._wait()
        if batch:
            self._task = asyncio.create_task(self._write(batch))

    async def _wait(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            await task

    async def _write(self, batch: list[tuple[Any, PreparedFile]]) -> None:
        results = await self.write([p for _, p in batch], lookups=self.lookups)
        self.on_written([(tag, p, r) for (tag, p), r in zip(batch, results, strict=True)])
