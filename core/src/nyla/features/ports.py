"""What the feature service and its data agent need of their host, as a protocol: the kernel
satisfies it, and they import it instead of the kernel, so the kernel can build them without a
circle."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from nyla.agent.ports import AgentHost

if TYPE_CHECKING:
    from nyla.features.service import FeatureService


class FeatureHost(AgentHost, Protocol):
    """The host of the feature service (the kernel): the agent's host and the feature service
    (the data agent runs an agent over a feature's tables)."""

    @property
    def features(self) -> FeatureService: ...
