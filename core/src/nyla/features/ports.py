"""What the feature service and its data agent are built with, as protocols: the kernel hands
the service the plugin host as :class:`FeaturePlugins` and the agent loop as
:class:`AgentLoop` (with the database), never itself."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from datetime import datetime

    from nyla.agent.spec import RunSpec
    from nyla.models.agent import AgentEvent
    from nyla.models.feature import Feature

#: the kernel's agent loop: the events of one run of a spec (the data agent runs its own)
AgentLoop = Callable[["RunSpec"], AsyncIterator["AgentEvent"]]


class FeaturePlugins(Protocol):
    """The plugin host as the feature service reads it: the features and why any failed."""

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
