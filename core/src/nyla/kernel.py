"""The kernel object a host holds: plugins, database and the services built on them."""

from __future__ import annotations

import importlib
from functools import cached_property
from typing import Any

from nyla.db import Database
from nyla.plugins import PluginHost


def _service(path: str, kernel: Kernel) -> Any:
    module, _, attr = path.partition(":")
    return getattr(importlib.import_module(module), attr)(kernel)


class Kernel:
    """Everything a host needs to run agents: the plugin registries, the database, and the
    services (AI, agent runtime, files, knowledge, features), each built on first use.

    ``Kernel()`` discovers installed plugins and uses the default database; tests pass an
    explicit :class:`PluginHost` and :class:`Database`.
    """

    def __init__(
        self,
        plugins: PluginHost | None = None,
        db: Database | None = None,
        *,
        settings: dict[str, Any] | None = None,
    ) -> None:
        if plugins is not None:
            self.__dict__["plugins"] = plugins
        if db is not None:
            self.__dict__["db"] = db
        self.settings: dict[str, Any] = dict(settings or {})

    @cached_property
    def plugins(self) -> PluginHost:
        """The plugin registries (discovered on first use)."""
        return PluginHost.discover()

    @cached_property
    def db(self) -> Database:
        """The database (embedded PostgreSQL unless ``NYLA_DATABASE_URL`` is set)."""
        return Database()

    @cached_property
    def ai(self) -> Any:
        """The AI service: the one way to call a model."""
        return _service("nyla.ai.service:AiService", self)

    @cached_property
    def agent(self) -> Any:
        """The agent runtime (ReAct loop, tools, toolboxes)."""
        return _service("nyla.agent.runtime:AgentRuntime", self)

    @cached_property
    def files(self) -> Any:
        """The scoped file store (FileItem, folders, chat documents)."""
        return _service("nyla.files.store:FileStore", self)

    @cached_property
    def knowledge(self) -> Any:
        """The knowledge store (indexing, semantic search, agent context, consent)."""
        return _service("nyla.knowledge.service:KnowledgeService", self)

    @cached_property
    def features(self) -> Any:
        """Feature data access (table tools, validator, data agent)."""
        return _service("nyla.features.service:FeatureService", self)

    @cached_property
    def connections(self) -> Any:
        """Connections to external services, their tokens, and connector sessions."""
        return _service("nyla.connections.service:ConnectionService", self)

    @property
    def jobs_backend(self) -> str:
        """Where background jobs run: ``inprocess`` (default) or ``procrastinate``
        (``NYLA_JOBS``)."""
        import os

        return str(self.settings.get("jobs") or os.environ.get("NYLA_JOBS") or "inprocess")

    @cached_property
    def jobs(self) -> Any:
        """The job runner (heartbeat, boot recovery, zombie killer, cancel)."""
        if self.jobs_backend == "procrastinate":
            return _service("nyla.jobs.queue:ProcrastinateRunner", self)
        from nyla.jobs.runtime import JobRunner

        return JobRunner(self.db)

    @cached_property
    def sync(self) -> Any:
        """Syncs of data sources into the knowledge store (walkers, as jobs)."""
        return _service("nyla.walkers.service:SyncService", self)

    async def aclose(self) -> None:
        """Release pooled connections and clients."""
        if "jobs" in self.__dict__:
            await self.jobs.aclose()
        if "db" in self.__dict__:
            await self.db.dispose()
