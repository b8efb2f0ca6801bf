"""What the connection service is built with, as protocols: the kernel hands it the plugin
host as :class:`ConnectorPlugins` (with the database and the settings) and the knowledge store's
purge of a connection's files as :class:`~nyla.connections.store.IndexPurge`, never itself.

:class:`ConnectionsPort` is the connection service itself as the modules it builds see it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from nyla.connections.http import VendorHttp
    from nyla.connections.limits import Limiter
    from nyla.connections.on_demand import OnDemandClient
    from nyla.connections.store import ConnectionStore
    from nyla.models.datasource import ConnectionInfo


class ConnectorPlugins(Protocol):
    """The plugin host as the connection service reads it: the connector adapters by id."""

    @property
    def connectors(self) -> Mapping[str, Any]: ...


class ConnectionsPort(Protocol):
    """The connection service as adding a connection and browser sign-in use it
    (:mod:`nyla.connections.connect`, :mod:`nyla.connections.authcode`); the service builds
    those, so they see it through this protocol."""

    @property
    def connect_timeout_s(self) -> float: ...

    @property
    def store(self) -> ConnectionStore: ...

    @property
    def limiter(self) -> Limiter: ...

    @property
    def sleep(self) -> Callable[[float], Awaitable[None]]: ...

    @property
    def adapters(self) -> Mapping[str, Any]: ...

    def adapter(self, service: str) -> Any: ...

    def _client(
        self, adapter: Any, connection: ConnectionInfo | None
    ) -> AbstractAsyncContextManager[OnDemandClient]: ...

    def plain_http(
        self, service: str, connection: ConnectionInfo | None = None
    ) -> AbstractAsyncContextManager[VendorHttp]: ...
