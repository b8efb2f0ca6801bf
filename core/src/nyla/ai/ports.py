"""What the AI service is built with besides its settings, as a protocol: the plugin host
satisfies it, and the kernel hands it to the service (the service never sees the kernel)."""

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
