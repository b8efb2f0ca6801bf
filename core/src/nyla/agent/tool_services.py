"""The services port of a run's tools (``ToolContext.services``), built from the agent's
services (:class:`~nyla.agent.ports.AgentServices`, handed in by the kernel) in this one place.

Each service is looked up when a tool first reaches for it, not when the run starts: a run
whose tools never touch the knowledge store or the features does not build them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from nyla.models.knowledge import PolicyValue, SectionText
from nyla.models.tool_services import (
    DataSourceEntry,
    ServiceUnavailableError,
    ToolAi,
    ToolConnections,
    ToolFeatures,
    ToolFiles,
    ToolKnowledge,
    ToolServices,
    ToolWorkflows,
)

if TYPE_CHECKING:
    from nyla.agent.ports import AgentServices
    from nyla.db import Database
    from nyla.knowledge.service import KnowledgeService
    from nyla.models.agent import RunContext


class KnowledgePolicy:
    """The knowledge store's data-source policy and indexed files' sections as tools read
    them."""

    __slots__ = ("_db", "_knowledge")

    def __init__(self, knowledge: KnowledgeService, db: Database) -> None:
        self._knowledge, self._db = knowledge, db

    async def resolve_policy(self, connection_id: str, path: str, field: str) -> PolicyValue:
        """The effective ``rag_index_enabled`` / ``neutralize`` / ``scope`` at ``path``."""
        return await self._knowledge.resolve_policy(connection_id, path, field)

    async def data_sources(self, connection_id: str) -> Sequence[DataSourceEntry]:
        """The connection's folders set up as data sources, ordered by path."""
        from nyla.knowledge.sources import list_data_sources

        return await list_data_sources(self._db, connection_id)

    async def read_section(self, file_id: str, section: str, context: RunContext) -> SectionText:
        """One section of an indexed file ``context`` may read (cached by file version)."""
        return await self._knowledge.read_section(file_id, section, context)


class AgentToolServices:
    """:class:`~nyla.models.tool_services.ToolServices` over the agent's services."""

    __slots__ = ("_services",)

    def __init__(self, services: AgentServices) -> None:
        self._services = services

    @property
    def files(self) -> ToolFiles:
        return self._services.files

    @property
    def connections(self) -> ToolConnections:
        return self._services.connections

    @property
    def ai(self) -> ToolAi:
        return self._services.ai

    @property
    def knowledge(self) -> ToolKnowledge:
        return KnowledgePolicy(self._services.knowledge(), self._services.db)

    @property
    def features(self) -> ToolFeatures:
        return self._services.features()

    @property
    def workflows(self) -> ToolWorkflows:
        if self._services.workflows is None:
            raise ServiceUnavailableError("no workflows service: the kernel handed none")
        return self._services.workflows()


def tool_services(services: AgentServices) -> ToolServices:
    """The services port of the tools of a run on ``services`` (the agent's)."""
    return AgentToolServices(services)
