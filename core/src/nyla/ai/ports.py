"""What the AI service needs of its host, as protocols: the kernel satisfies them, and the
service imports them instead of the kernel, so the kernel can build it without a circle."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol


class ProviderPlugins(Protocol):
    """The plugin host as the AI service reads it: providers, neutralizers, their models."""

    @property
    def providers(self) -> Mapping[str, Any]: ...

    @property
    def neutralizers(self) -> Mapping[str, Any]: ...

    def models(self) -> list[Any]: ...

    def owner_of(self, kind: str, key: str) -> str | None: ...


class AiHost(Protocol):
    """The host of the AI service (the kernel): its settings and its plugin host."""

    @property
    def settings(self) -> Mapping[str, Any]: ...

    @property
    def plugins(self) -> ProviderPlugins: ...
