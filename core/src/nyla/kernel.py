"""The kernel object a host holds: plugins, database and the services built on them."""

from __future__ import annotations

import importlib
from functools import cached_property
from typing import TYPE_CHECKING, Any

from nyla.db import Database
from nyla.plugins import PluginHost

if TYPE_CHECKING:  # the services import this module's callers; build them lazily
    from nyla.agent.runtime import AgentRuntime
    from nyla.ai.access import ModelAccess
    from nyla.ai.service import AiService
    from nyla.connections.service import ConnectionService
    from nyla.features.service import FeatureService
    from nyla.files.store import FileStore
    from nyla.jobs.queue import ProcrastinateRunner
    from nyla.jobs.runtime import JobRunner
    from nyla.knowledge.service import KnowledgeService
    from nyla.walkers.service import SyncService


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
    def ai(self) -> AiService:
        """The AI service: the one way to call a model."""
        return _service("nyla.ai.service:AiService", self)

    @cached_property
    def model_access(self) -> ModelAccess:
        """The model allow-list: which models a user or mandate may use."""
        from nyla.ai.access import ModelAccess

        return ModelAccess(self.db)

    @cached_property
    def agent(self) -> AgentRuntime:
        """The agent runtime (ReAct loop, tools, toolboxes)."""
        from nyla.agent.ports import AgentServices
        from nyla.agent.runtime import AgentRuntime

        services = AgentServices(
            ai=self.ai,
            plugins=self.plugins,
            db=self.db,
            files=self.files,
            connections=self.connections,
            model_access=self.model_access,
            knowledge=lambda: self.knowledge,
            features=lambda: self.features,
            settings=self.settings,
        )
        return AgentRuntime(services)

    @cached_property
    def files(self) -> FileStore:
        """The scoped file store (FileItem, folders, chat documents)."""
        return _service("nyla.files.store:FileStore", self)

    @cached_property
    def knowledge(self) -> KnowledgeService:
        """The knowledge store (indexing, semantic search, agent context, consent)."""
        from nyla.knowledge.service import KnowledgeService

        return KnowledgeService(self.db, self.ai, self.settings)

    @cached_property
    def features(self) -> FeatureService:
        """Feature data access (table tools, validator, data agent)."""
        return _service("nyla.features.service:FeatureService", self)

    @cached_property
    def connections(self) -> ConnectionService:
        """Connections to external services, their tokens, and connector sessions."""
        return _service("nyla.connections.service:ConnectionService", self)

    @property
    def jobs_backend(self) -> str:
        """Where background jobs run: ``inprocess`` (default) or ``procrastinate``
        (``NYLA_JOBS``)."""
        import os

        return str(self.settings.get("jobs") or os.environ.get("NYLA_JOBS") or "inprocess")

    @cached_property
    def jobs(self) -> JobRunner | ProcrastinateRunner:
        """The job runner (heartbeat, boot recovery, zombie killer, cancel)."""
        if self.jobs_backend == "procrastinate":
            return _service("nyla.jobs.queue:ProcrastinateRunner", self)
        from nyla.jobs.runtime import JobRunner

        return JobRunner(self.db)

    @cached_property
    def sync(self) -> SyncService:
        """Syncs of data sources into the knowledge store (walkers, as jobs)."""
        return _service("nyla.walkers.service:SyncService", self)

    def derived_key(self, purpose: str) -> bytes:
        """A key for ``purpose`` (signing links, say) derived from the configured secret
        (``NYLA_SECRET_KEY``, see :mod:`nyla.connections.keys`), never that secret itself."""
        from nyla.connections.crypto import TokenCipher

        explicit = self.settings.get("secret_key")
        cipher = (
            TokenCipher([explicit])
            if explicit
            else TokenCipher.from_config(self.settings.get("data_dir"))
        )
        return cipher.derive_key(purpose)

    async def aclose(self) -> None:
        """Release pooled connections and clients."""
        if "jobs" in self.__dict__:
            await self.jobs.aclose()
        if "db" in self.__dict__:
            await self.db.dispose()
