"""What the feature service and its data agent need of their host, as a protocol: the kernel
satisfies it, and they import it instead of the kernel, so the kernel can build them without a
circle."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from nyla.agent.ports import AgentPlugins

if TYPE_CHECKING:
    from datetime import datetime

    from nyla.agent.runtime import AgentRuntime
    from nyla.db import Database

    from nyla.models.feature import Feature


class FeaturePlugins(AgentPlugins, Protocol):
    """The plugin host as the feature service reads it: the agent's view and the features."""

    @property
    def features(self) -> Mapping[str, Any]: ...

    def failure_hint(self, kind: str) -> str: ...


class FeatureTables(Protocol):
    """The feature service as the data agent uses it: a feature, its data provider made
    ready, its table tools and its schema prompt (the kernel's ``FeatureService``)."""

    def feature(self, code: str) -> Feature: ...

    async def provider(self, code: str) -> Any: ...

    def table_tools(
        self,
        code: str,
        instance_id: str,
        *,
        validate: bool = True,
        use_ontology: bool = True,
        on_call: Callable[[str, dict[str, Any], Any], None] | None = None,
    ) -> list[Any]: ...

    def schema_prompt(
        self,
        code: str,
        *,
        use_ontology: bool = True,
        now: datetime | None = None,
        timezone: str = "UTC",
        temporal: bool = True,
    ) -> str: ...


class FeatureHost(Protocol):
    """The host of the feature service (the kernel): its database and plugins, the feature
    service and the agent runtime (the data agent runs an agent over a feature's tables)."""

    @property
    def db(self) -> Database: ...

    @property
    def agent(self) -> AgentRuntime: ...

    @property
    def plugins(self) -> FeaturePlugins: ...

    @property
    def features(self) -> FeatureTables: ...
