"""What the feature service and its data agent need of their host, as a protocol: the kernel
satisfies it, and they import it instead of the kernel, so the kernel can build them without a
circle."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from nyla.agent.ports import AgentHost, AgentPlugins

if TYPE_CHECKING:
    from nyla.features.service import FeatureService


class FeaturePlugins(AgentPlugins, Protocol):
    """The plugin host as the feature service reads it: the agent's view and the features."""

    @property
    def features(self) -> Mapping[str, Any]: ...

    def failure_hint(self, kind: str) -> str: ...


class FeatureHost(AgentHost, Protocol):
    """The host of the feature service (the kernel): the agent's host and the feature service
    (the data agent runs an agent over a feature's tables)."""

    @property
    def plugins(self) -> FeaturePlugins: ...

    @property
    def features(self) -> FeatureService: ...
