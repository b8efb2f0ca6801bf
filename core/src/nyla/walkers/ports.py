"""What the sync (and the job queue that runs it) need of their host, as a protocol: the
kernel satisfies it, and they import it instead of the kernel, so the kernel can build them
without a circle."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from nyla.connections.service import ConnectionService
    from nyla.db import Database
    from nyla.jobs.queue import ProcrastinateRunner
    from nyla.jobs.runtime import JobRunner
    from nyla.knowledge.service import KnowledgeService


class WalkerPlugins(Protocol):
    """The plugin host as the sync reads it: the walkers by id."""

    @property
    def walkers(self) -> Mapping[str, Any]: ...


class WalkerLookup(Protocol):
    """The walker runner as the survey asks it: the walker of a connector service."""

    def walker_for(self, service: str) -> Any: ...


class SyncPort(Protocol):
    """The sync service as its scheduler and survey use it (it builds them)."""

    @property
    def runner(self) -> WalkerLookup: ...

    async def start(
        self,
        ds_id: str,
        *,
        user_id: str | None,
        limits: dict[str, int] | None = None,
        first_slice: int | None = None,
    ) -> str: ...


class SyncHost(Protocol):
    """The host of the sync (the kernel): settings, database, plugin host, the connections
    it reads, the knowledge store it writes, the jobs it runs as, and the sync service."""

    @property
    def settings(self) -> dict[str, Any]: ...

    @property
    def db(self) -> Database: ...

    @property
    def plugins(self) -> WalkerPlugins: ...

    @property
    def connections(self) -> ConnectionService: ...

    @property
    def knowledge(self) -> KnowledgeService: ...

    @property
    def jobs_backend(self) -> str: ...

    @property
    def jobs(self) -> JobRunner | ProcrastinateRunner: ...

    @property
    def sync(self) -> SyncPort: ...
