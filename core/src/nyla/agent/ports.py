"""What the agent needs of its host, as a protocol: the kernel satisfies it, and the agent
imports it instead of the kernel, so the kernel can build the agent without a circle."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from nyla.models.tool_services import ToolFeatures

if TYPE_CHECKING:
    import pluggy

    from nyla.ai.access import ModelAccess
    from nyla.ai.service import AiService
    from nyla.connections.service import ConnectionService
    from nyla.db import Database
    from nyla.files.store import FileStore
    from nyla.knowledge.service import KnowledgeService


class AgentPlugins(Protocol):
    """The plugin host as the agent reads it: toolboxes, connectors, models and the hooks."""

    @property
    def pm(self) -> pluggy.PluginManager: ...

    @property
    def toolboxes(self) -> dict[str, Any]: ...

    @property
    def connectors(self) -> Mapping[str, Any]: ...

    def models(self) -> list[Any]: ...


class AgentHost(Protocol):
    """The host of the agent (the kernel): the services a run uses and the plugin host."""

    @property
    def settings(self) -> dict[str, Any]: ...

    @property
    def db(self) -> Database: ...

    @property
    def plugins(self) -> AgentPlugins: ...

    @property
    def ai(self) -> AiService: ...

    @property
    def model_access(self) -> ModelAccess: ...

    @property
    def connections(self) -> ConnectionService: ...

    @property
    def files(self) -> FileStore: ...

    @property
    def knowledge(self) -> KnowledgeService: ...


class RuntimeHost(AgentHost, Protocol):
    """The host of the agent runtime: the agent's host and the feature service, whose data
    agent the tools of a run may start (:func:`nyla.agent.tool_services.tool_services`)."""

    @property
    def features(self) -> ToolFeatures: ...
