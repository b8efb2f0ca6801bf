"""What the agent is built with: :class:`AgentServices`, the sibling services the kernel hands
it (the agent never sees the kernel), and the plugin host as :class:`AgentPlugins`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from nyla.models.tool_services import ToolFeatures, ToolWorkflows

if TYPE_CHECKING:
    import pluggy

    from nyla.access.service import ServiceAccess
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

    @property
    def features(self) -> Mapping[str, Any]: ...

    def models(self) -> list[Any]: ...


@dataclass(frozen=True, slots=True)
class AgentServices:
    """What the agent runs on, handed in by the kernel: the AI service, the plugin host, the
    database (traces, owned-id checks), the files (chat workflows), the connections, the model
    allow-list, and the knowledge store and the features, looked up on first use (a run that
    never needs them does not build them); ``settings`` are the kernel's; ``actions`` answers
    the toolboxes of the workflow actions (one per method), beside the plugins' own;
    ``workflows`` the stored workflow graphs; ``service_access`` the service permissions."""

    ai: AiService
    plugins: AgentPlugins
    db: Database
    files: FileStore
    connections: ConnectionService
    model_access: ModelAccess
    knowledge: Callable[[], KnowledgeService]
    features: Callable[[], ToolFeatures]
    settings: Mapping[str, Any] = field(default_factory=dict)
    actions: Callable[[], Mapping[str, Any]] | None = None
    #: the stored workflow graphs (the ``workflow`` toolbox), looked up on first use
    workflows: Callable[[], ToolWorkflows] | None = None
    #: who may use which service (``None``: everyone may use every service)
    service_access: ServiceAccess | None = None
