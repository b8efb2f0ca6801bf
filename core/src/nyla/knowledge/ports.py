"""What the knowledge service needs of its host, as a protocol: the kernel satisfies it, and
the service imports it instead of the kernel, so the kernel can build it without a circle."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from nyla.ai.service import AiService
    from nyla.db import Database


class KnowledgeHost(Protocol):
    """The host of the knowledge service (the kernel): database, AI service, settings."""

    @property
    def db(self) -> Database: ...

    @property
    def ai(self) -> AiService: ...

    @property
    def settings(self) -> dict[str, Any]: ...
