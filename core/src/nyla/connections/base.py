"""The base class of connector adapters and the helpers the kernel runs them with.

A connector subclasses :class:`BaseConnector` and overrides the capabilities its service has;
:func:`capabilities` derives the set from what is overridden (never from a flag), and the
contract suite runs the tests of exactly that set.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any, ClassVar

from nyla.connections.errors import CursorExpiredError, NotSupportedError
from nyla.connections.http import HttpPolicy, VendorHttp
from nyla.connections.settings import ConnectorSettings, server_only_keys
from nyla.models.datasource import (
    CAPABILITIES,
    ConnectorContext,
    Download,
    Item,
    ItemPage,
    OAuthConfig,
    OutgoingMessage,
    SyncPage,
    TokenGrant,
)


class BaseConnector:
    """Base of a connector adapter: override what the service can do.

    Class attributes: ``service`` (unique id, e.g. ``msft``), ``label``, ``query_syntax``
    (shown to the model in ``searchDataSource``'s description), ``base_url`` (the API root),
    ``oauth`` (token endpoints; enables refresh), ``http_policy`` (the vendor's limits),
    ``auth_modes`` (``device_code``, ``token``, ``password``, ``none``: how
    ``nyla connections add`` signs in), ``settings`` (the typed settings a connection takes,
    see :mod:`nyla.connections.settings`), ``admin_consent`` (a directory admin may have to
    consent for the whole organisation before a user can sign in).
    """

    service: ClassVar[str] = ""
    label: ClassVar[str] = ""
    query_syntax: ClassVar[str] = "plain words; the service's own search decides the matching"
    base_url: ClassVar[str | None] = None
    oauth: ClassVar[OAuthConfig | None] = None
    http_policy: ClassVar[HttpPolicy] = HttpPolicy()
    auth_modes: ClassVar[tuple[str, ...]] = ("token",)
    #: the settings a connection takes (``nyla connections add --setting k=v``); fields that
    #: point the server somewhere are ``server_only`` (a multi-user host takes them only from
    #: its operator)
    settings: ClassVar[type[ConnectorSettings]] = ConnectorSettings
    admin_consent: ClassVar[bool] = False

    async def search(
        self, ctx: ConnectorContext, query: str, scope: str = "", cursor: str | None = None
    ) -> ItemPage:
        """The service's own search, scoped to ``scope`` (a path, folder or label), one page."""
        raise NotSupportedError(f"{self.service} has no search")

    async def browse(
        self, ctx: ConnectorContext, path: str = "", cursor: str | None = None
    ) -> ItemPage:
        """The items in one container (``""`` is the root), one page."""
        raise NotSupportedError(f"{self.service} cannot be browsed")

    async def item(self, ctx: ConnectorContext, item_id: str) -> Item:
        """One item's full metadata (default: not available separately)."""
        raise NotSupportedError(f"{self.service} cannot read one item's metadata")

    async def download(
        self, ctx: ConnectorContext, item_id: str, max_bytes: int | None = None
    ) -> Download:
        """An item's content as bytes; more than ``max_bytes`` raises ``ItemTooLargeError``."""
        raise NotSupportedError(f"{self.service} has no downloads")

    async def upload(
        self, ctx: ConnectorContext, path: str, name: str, content: bytes, mime: str
    ) -> Item:
        """Store a file in the container ``path``; returns the new item."""
        raise NotSupportedError(f"{self.service} takes no uploads")

    async def send(self, ctx: ConnectorContext, message: OutgoingMessage) -> str:
        """Send a message; returns the vendor's id of the sent message."""
        raise NotSupportedError(f"{self.service} cannot send messages")

    async def sync(
        self, ctx: ConnectorContext, scope: str, checkpoint: dict[str, Any] | None
    ) -> AsyncIterator[SyncPage]:
        """Pages of changes below ``scope`` since ``checkpoint`` (``None``: everything, with
        ``full_listing``), each with the checkpoint that resumes after it. An expired
        checkpoint raises ``CursorExpiredError``."""
        raise NotSupportedError(f"{self.service} cannot be synced")
        yield SyncPage()  # pragma: no cover - makes this an async generator

    async def list_ids(self, ctx: ConnectorContext, scope: str) -> AsyncIterator[list[str]]:
        """Every item id below ``scope``, in pages (a slim listing to reconcile deletions).
        Must raise on any failure: a listing that ends early must never look complete."""
        raise NotSupportedError(f"{self.service} cannot list ids")
        yield []  # pragma: no cover

    def oauth_for(self, settings: Mapping[str, Any]) -> OAuthConfig | None:
        """The OAuth endpoints for a connection with ``settings`` (a sovereign cloud, a
        tenant); ``oauth`` unless the connector's endpoints depend on the connection."""
        return self.oauth

    def admin_consent_url(
        self, settings: Mapping[str, Any], client_id: str, redirect_uri: str
    ) -> str | None:
        """Where a directory admin consents for the organisation, for connectors that
        declare ``admin_consent`` (``None``: no such step)."""
        return None

    def api_base(self, settings: Mapping[str, Any]) -> str | None:
        """The API root for a connection with ``settings``: its ``baseUrl`` where the
        connector declares that as a server-only setting (only an operator sets those), else
        ``base_url``. Undeclared URL settings are never read."""
        own = settings.get("baseUrl") if "baseUrl" in server_only_keys(self) else None
        return str(own) if own else self.base_url

    async def refresh_token(
        self, http: VendorHttp, refresh_token: str, *, settings: Mapping[str, Any] | None = None
    ) -> TokenGrant:
        """New tokens for a refresh token (standard OAuth 2.0 at :meth:`oauth_for` the
        connection's ``settings``)."""
        oauth = self.oauth_for(settings or {})
        if oauth is None:
            raise NotSupportedError(f"{self.service} has no token refresh")
        from nyla.connections.oauth import oauth2_refresh

        return await oauth2_refresh(http, oauth, refresh_token, service=self.service)

    async def check(self, ctx: ConnectorContext) -> str:
        """A cheap call proving the connection works (``nyla connections test``); returns a
        short description of what was reached."""
        page = await self.browse(ctx, "")
        return f"{len(page.items)} item(s) at the root"


def api_base(adapter: Any, settings: Mapping[str, Any]) -> str:
    """The API root of a connection of ``adapter`` with ``settings`` (any adapter object: a
    :class:`BaseConnector` decides itself, others get their ``base_url``)."""
    if isinstance(adapter, BaseConnector):
        return adapter.api_base(settings) or ""
    return getattr(adapter, "base_url", None) or ""


def capabilities(adapter: Any) -> frozenset[str]:
    """What an adapter implements: the capability methods it overrides (for a
    :class:`BaseConnector`) or has (for any other object); ``refresh`` when it can renew
    tokens."""
    found = set()
    for name in CAPABILITIES:
        method_name = "refresh_token" if name == "refresh" else name
        method = getattr(type(adapter), method_name, None)
        if method is None:
            continue
        if isinstance(adapter, BaseConnector) and method is getattr(BaseConnector, method_name):
            if name == "refresh" and getattr(adapter, "oauth", None) is not None:
                found.add(name)
            continue
        found.add(name)
    if isinstance(adapter, BaseConnector) and type(adapter).item is not BaseConnector.item:
        found.add("item")
    return frozenset(found)


async def sync_pages(
    adapter: Any, ctx: ConnectorContext, scope: str, checkpoint: dict[str, Any] | None
) -> AsyncIterator[SyncPage]:
    """``adapter.sync`` with the full re-sync the runner owes an expired cursor: when the
    checkpoint (or a cursor met mid-run) has expired, start again from nothing; those pages
    are a full listing (unchanged items are skipped by hash, duplicates by id)."""
    restarted = False
    while True:
        try:
            async for page in adapter.sync(ctx, scope, None if restarted else checkpoint):
                if restarted and not page.full_listing:
                    page = page.model_copy(update={"full_listing": True})
                yield page
            return
        except CursorExpiredError:
            if restarted:
                raise
            restarted = True


class BaseWalker:
    """Base of a RAG walker: the connector ``services`` it syncs and its limit kind
    (``files``: max_bytes, max_file_size, max_items, max_depth; ``clickup``: max_tasks, ...).
    The kernel's walker runner does the crawling; override :meth:`accepts` to leave items out."""

    id: ClassVar[str] = ""
    services: ClassVar[list[str]] = []
    limit_kind: ClassVar[str] = "files"

    def accepts(self, item: Item) -> bool:
        """Whether to index ``item`` (default: every item that is not a folder)."""
        return not item.is_folder
