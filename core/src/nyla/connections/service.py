"""``kernel.connections``: the connection store, the token manager and the connector
registry behind one service that hosts, tools, walkers and the CLI share.

``open(connection_id, user_id=...)`` yields a :class:`ConnectorSession`: the connection, its
adapter and a :class:`~nyla.connections.http.VendorHttp` that authenticates with the
connection's token (refreshed under the credential's lock), waits out throttling and keeps
the vendor's budget. Every id is checked against the caller.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nyla.connections.authcode import AuthCodeFlow
from nyla.connections.base import BaseConnector, api_base, capabilities
from nyla.connections.connect import PROBE_TIMEOUT_S, NewConnection, connect
from nyla.connections.crypto import TokenCipher
from nyla.connections.egress_policy import (
    EgressPolicy,
    Resolver,
    names_only_resolver,
    system_resolver,
)
from nyla.connections.errors import ConnectorError, NeedsReconsentError
from nyla.connections.http import HttpPolicy, VendorHttp
from nyla.connections.limits import Limiter
from nyla.connections.on_demand import OnDemandClient
from nyla.connections.session import ConnectorSession as ConnectorSession
from nyla.connections.store import ConnectionStore
from nyla.connections.tokens import ConnectionTokens, TokenManager
from nyla.errors import NotFoundError
from nyla.models.datasource import ConnectionInfo, TokenGrant
from nyla.models.knowledge import PurgeResult

if TYPE_CHECKING:
    import httpx

    from nyla.connections.ports import ConnectorPlugins
    from nyla.connections.store import IndexPurge
    from nyla.db import Database


@dataclass
class ConnectionTest:
    """The outcome of ``nyla connections test``."""

    ok: bool
    message: str
    seconds: float
    status: str


class ConnectionService:
    """Connections of users to external services, their tokens, and sessions to work in:
    the connections live in ``db``, the connector adapters come from ``plugins``; removing a
    connection purges what was indexed from it through ``purge_index`` (the knowledge store's).

    ``settings`` are the kernel's (``transport``, ``sleep``, ``resolver``, ``egress_allow``,
    ``connect_timeout_s``, ``secret_key``, ``data_dir``). ``transport`` replaces the network
    (tests pass an ``httpx.MockTransport``); ``sleep`` replaces waiting (tests record instead
    of sleeping). Every client sits on a :class:`~nyla.connections.egress.GuardedTransport`:
    no connection reaches the server's own or private addresses unless the operator allowed
    the host (``egress_allow`` / ``NYLA_EGRESS_ALLOW``); ``resolver`` replaces name
    resolution.
    """

    def __init__(
        self,
        db: Database,
        plugins: ConnectorPlugins,
        *,
        purge_index: IndexPurge,
        settings: Mapping[str, Any] | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        cipher: TokenCipher | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        limiter: Limiter | None = None,
        resolver: Resolver | None = None,
    ) -> None:
        settings = settings or {}
        self.db = db
        self.plugins = plugins
        self.transport = transport if transport is not None else settings.get("transport")
        resolve = resolver or settings.get("resolver")
        if resolve is None:
            resolve = system_resolver if self.transport is None else names_only_resolver
        self.egress = EgressPolicy.configured(
            resolve,
            settings.get("egress_allow"),
            replaced_network=self.transport is not None,
        )
        self.sleep = settings.get("sleep") or sleep
        self.limiter = limiter or Limiter(sleep=self.sleep)
        #: how long the probe of a new connection may take (:func:`~.connect.probe`)
        self.connect_timeout_s = float(settings.get("connect_timeout_s") or PROBE_TIMEOUT_S)
        self.store = ConnectionStore(db, cipher or _LazyCipher(settings), purge_index)
        self.tokens = TokenManager(db, self.store, self._refresh)
        #: browser sign-ins (authorization code with PKCE)
        self.sign_in = AuthCodeFlow(db, self)

    # ---- registry -----------------------------------------------------------------------

    @property
    def adapters(self) -> dict[str, Any]:
        """Installed connector adapters by service id."""
        return dict(self.plugins.connectors)

    def adapter(self, service: str) -> Any:
        """The adapter of ``service``; a clear error naming the installed ones otherwise."""
        adapter = self.plugins.connectors.get(service)
        if adapter is None:
            known = ", ".join(sorted(self.plugins.connectors)) or "none"
            raise NotFoundError(f"no connector for service {service!r} (installed: {known})")
        return adapter

    # ---- connections --------------------------------------------------------------------

    async def add(
        self,
        service: str,
        *,
        user_id: str,
        account: str = "",
        label: str = "",
        grant: TokenGrant | None = None,
        settings: dict[str, Any] | None = None,
        mandate_id: str | None = None,
        knowledge_ingestion_enabled: bool = True,
        connection_id: str | None = None,
    ) -> ConnectionInfo:
        """Store a connection for an installed connector as it is (a trusted kernel caller;
        what a person asks for goes through :meth:`connect`)."""
        self.adapter(service)
        return await self.store.add(
            service=service,
            user_id=user_id,
            account=account,
            label=label,
            grant=grant,
            settings=settings,
            mandate_id=mandate_id,
            knowledge_ingestion_enabled=knowledge_ingestion_enabled,
            connection_id=connection_id,
        )

    async def connect(
        self,
        service: str,
        *,
        user_id: str,
        mandate_id: str | None = None,
        label: str = "",
        account: str = "",
        settings: dict[str, Any] | None = None,
        grant: TokenGrant | None = None,
        operator: bool = False,
    ) -> ConnectionInfo:
        """Make a connection as a person asks for one (the API, ``nyla connections add``):
        settings validated against the connector's model (server-only ones only from an
        ``operator``), the root listed with ``grant``'s token, and only then stored."""
        new = NewConnection(
            service=service,
            user_id=user_id,
            mandate_id=mandate_id,
            label=label,
            account=account,
            settings=settings,
            grant=grant,
        )
        return await connect(self, new, operator=operator)

    async def list(self, user_id: str) -> list[ConnectionInfo]:
        """The user's connections."""
        return await self.store.list(user_id)

    async def get(self, connection_id: str, *, user_id: str | None) -> ConnectionInfo:
        """One connection of ``user_id``."""
        return await self.store.get(connection_id, user_id=user_id)

    async def remove(self, connection_id: str, *, user_id: str) -> PurgeResult:
        """Remove a connection with everything indexed from it."""
        return await self.store.remove(connection_id, actor=user_id)

    async def reconsent(self, connection_id: str, grant: TokenGrant, *, user_id: str) -> None:
        """New tokens after the user signed in again (status back to ``active``)."""
        await self.store.update_grant(connection_id, grant, actor=user_id)

    # ---- sessions -------------------------------------------------------------------------

    @asynccontextmanager
    async def open(
        self, connection_id: str, *, user_id: str | None
    ) -> AsyncIterator[ConnectorSession]:
        """A session on one connection of ``user_id`` (``None``: trusted kernel caller)."""
        connection = await self.store.get(connection_id, user_id=user_id)
        adapter = self.adapter(connection.service)
        async with self._client(adapter, connection) as client:
            http = VendorHttp(
                connection.service,
                connection.account or connection.id,
                client=client,
                auth=ConnectionTokens(self.tokens, connection.id),
                policy=getattr(adapter, "http_policy", None) or HttpPolicy(),
                limiter=self.limiter,
                sleep=self.sleep,
            )
            yield ConnectorSession(connection=connection, adapter=adapter, http=http)

    @asynccontextmanager
    async def _client(
        self, adapter: Any, connection: ConnectionInfo | None
    ) -> AsyncIterator[OnDemandClient]:
        """The connection's client, made at its first request (a connector that reads no
        network, as a local folder's, never imports httpx)."""
        client = OnDemandClient(lambda: self._new_client(adapter, connection))
        try:
            yield client
        finally:
            await client.aclose()

    def _new_client(self, adapter: Any, connection: ConnectionInfo | None) -> httpx.AsyncClient:
        import httpx

        from nyla.connections.egress import GuardedTransport, environment_proxies

        base = api_base(adapter, connection.settings if connection is not None else {})
        policy = getattr(adapter, "http_policy", None) or HttpPolicy()
        real = self.transport is None
        inner: httpx.AsyncBaseTransport = self.transport or httpx.AsyncHTTPTransport()
        # an explicit transport makes httpx ignore HTTPS_PROXY & co.: the guard carries them
        proxies = environment_proxies() if real else {}
        return httpx.AsyncClient(
            base_url=base or "",
            transport=GuardedTransport(inner, self.egress, pin=real, proxies=proxies),
            timeout=httpx.Timeout(policy.timeout_s, connect=policy.connect_timeout_s),
            follow_redirects=True,
        )

    @asynccontextmanager
    async def plain_http(
        self, service: str, connection: ConnectionInfo | None = None
    ) -> AsyncIterator[VendorHttp]:
        """An unauthenticated client for the service's token endpoints (sign-in, refresh)."""
        adapter = self.adapter(service)
        async with self._client(adapter, connection) as client:
            yield VendorHttp(
                service,
                "oauth",
                client=client,
                policy=getattr(adapter, "http_policy", None) or HttpPolicy(),
                limiter=self.limiter,
                sleep=self.sleep,
            )

    async def _refresh(self, connection: ConnectionInfo, refresh_token: str) -> TokenGrant:
        adapter = self.adapter(connection.service)
        if "refresh" not in capabilities(adapter):
            raise NeedsReconsentError(
                f"{connection.service} rejected the token and cannot refresh it: connect again",
                service=connection.service,
            )
        async with self.plain_http(connection.service, connection) as http:
            if isinstance(adapter, BaseConnector):  # (the endpoints may depend on settings)
                return await adapter.refresh_token(
                    http, refresh_token, settings=connection.settings
                )
            return await adapter.refresh_token(http, refresh_token)

    async def test(self, connection_id: str, *, user_id: str) -> ConnectionTest:
        """Call the service once with the connection's token; report what happened."""
        started = time.perf_counter()
        try:
            async with self.open(connection_id, user_id=user_id) as session:
                message = await session.adapter.check(session)
            ok = True
        except ConnectorError as exc:
            ok, message = False, f"{exc.code}: {exc}"
        connection = await self.store.get(connection_id, user_id=user_id)
        return ConnectionTest(
            ok=ok,
            message=message,
            seconds=time.perf_counter() - started,
            status=connection.status,
        )


class _LazyCipher:
    """The cipher the settings configure (``secret_key``, else the key file), made on first
    use (listing connections needs no key)."""

    def __init__(self, settings: Mapping[str, Any]) -> None:
        self.settings = settings
        self._cipher: TokenCipher | None = None

    def _get(self) -> TokenCipher:
        if self._cipher is None:
            explicit = self.settings.get("secret_key")
            self._cipher = (
                TokenCipher([explicit])
                if explicit
                else TokenCipher.from_config(self.settings.get("data_dir"))
            )
        return self._cipher

    def encrypt(self, value: str) -> str:
        return self._get().encrypt(value)

    def decrypt(self, value: str) -> str:
        return self._get().decrypt(value)
