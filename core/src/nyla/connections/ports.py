"""What the connection service needs of its host, as protocols: the kernel satisfies them,
and the service imports them instead of the kernel, so the kernel can build it without a
circle."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from nyla.db import Database


class ConnectorPlugins(Protocol):
    """The plugin host as the connection service reads it: the connector adapters by id."""

    @property
    def connectors(self) -> Mapping[str, Any]: ...


class ConnectionsHost(Protocol):
    """The host of the connection service (the kernel): database, settings, plugin host."""

    @property
    def db(self) -> Database: ...

    @property
    def settings(self) -> Mapping[str, Any]: ...

    @property
    def plugins(self) -> ConnectorPlugins: ...
