"""What the sync is built with, as protocols: the kernel hands the walker runner and the sync
service the plugin host, the connection service, the parts of the knowledge store and the
job runner they use through these, never itself; the sync service hands its scheduler and
survey what each uses."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from nyla.connections.session import ConnectorSession
    from nyla.models.knowledge import PurgeResult


class WalkerPlugins(Protocol):
    """The plugin host as the sync reads it: the walkers by id."""

    @property
    def walkers(self) -> Mapping[str, Any]: ...


class WalkerLookup(Protocol):
    """The walker runner as the survey and the scheduler ask it: the walker of a connector
    service, and every service an installed walker syncs."""

    def walker_for(self, service: str) -> Any: ...

    def services(self) -> set[str]: ...


class SourceConnections(Protocol):
    """The connection service as the sync uses it: a session on a data source's connection
    (``user_id=None``: the kernel's own, trusted call)."""

    def open(
        self, connection_id: str, *, user_id: str | None
    ) -> AbstractAsyncContextManager[ConnectorSession]: ...


class FilePreparer(Protocol):
    """The knowledge store's indexer as the sync uses it: one file read, chunked and embedded
    for the page's commit (or the index result when nothing is left to write)."""

    async def prepare(
        self,
        file: Any,
        content: bytes,
        *,
        context: Any,
        source_path: str | None = None,
        connection_id: str | None = None,
        memo: Any = None,
        phase: Any = None,
        consent_checked: bool = False,
    ) -> Any: ...


class VectorIndexer(Protocol):
    """The knowledge store's vector indexes as the sync uses them: the model's HNSW index
    built after a sync's bulk load."""

    async def ensure_vector_index(self, model: str, dims: int) -> None: ...


class IndexSwitch(Protocol):
    """The knowledge store's governance as the sync uses it: a data source's RAG indexing
    switched on or off (off purges what it indexed)."""

    async def set_rag_index_enabled(
        self, data_source_id: str, enabled: bool | None, *, actor: str
    ) -> PurgeResult: ...


class SyncJobs(Protocol):
    """The job runner as the sync runs on it (in process, or procrastinate's)."""

    async def run(self, kind: str, fn: Any, **fields: Any) -> tuple[str, Any]: ...

    async def submit(self, kind: str, fn: Any, **fields: Any) -> str: ...

    async def cancel(self, job_id: str) -> bool: ...


#: procrastinate's deferral of a sync job (:meth:`nyla.jobs.queue.ProcrastinateRunner.defer_sync`)
DeferSync = Callable[..., Awaitable[str]]


class SyncAccess(Protocol):
    """The kernel's service access (``kernel.service_access``) as a sync asks it whether the
    source's owner may still use the knowledge store and the source's connector."""

    async def check_all(
        self, user_id: str, mandate_id: str | None, permissions: list[str]
    ) -> None: ...


class SyncPort(Protocol):
    """The sync service as its scheduler uses it (it builds the scheduler): a sync started."""

    async def start(
        self,
        ds_id: str,
        *,
        user_id: str | None,
        limits: dict[str, int] | None = None,
        first_slice: int | None = None,
    ) -> str: ...
