"""Contracts of connectors to external sources and of the RAG walkers that sync them.

A connector adapter (one per service: ``msft``, ``google``, ``clickup``, ``localfs``, ...)
implements what its service can — live ``search``, ``browse``, ``download``, ``upload``,
``send`` and, for walkers, ``sync(checkpoint)`` and ``list_ids()`` — over one
:class:`ConnectorContext` the kernel hands it (the connection, and an HTTP client that already
authenticates, retries, waits out ``Retry-After`` and keeps the vendor's rate budget).

Every item an adapter returns is an :class:`Item`: one normalised metadata block for all
services, so tools render the same inline line for a mail, an event or a file.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import datetime
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import Field, field_validator

from nyla.models.base import WireModel

ItemKind = Literal["file", "folder", "mail", "event", "contact", "task", "page", "other"]

#: keys of :attr:`Item.extra` that tools render inline, with the kinds that use them
EXTRA_KEYS: dict[str, str] = {
    "from": "mail: sender",
    "to": "mail: recipients (list of addresses)",
    "date": "mail: sent/received time (ISO 8601)",
    "start": "event: start (ISO 8601)",
    "end": "event: end (ISO 8601)",
    "location": "event: place",
    "email": "contact: e-mail address",
    "phone": "contact: phone number",
    "company": "contact: organisation",
    "status": "task: status",
    "assignee": "task: assignee",
    "due": "task: due date",
    "priority": "task: priority",
    "labels": "mail/task: labels or tags (list)",
    "project": "task: project, list or board",
}

#: capability names an adapter may implement (the contract suite derives its tests from them)
CAPABILITIES = ("search", "browse", "download", "upload", "send", "sync", "list_ids", "refresh")


#: the longest web address an item keeps
MAX_URL = 8192


class Item(WireModel):
    """An item of an external source with its normalised metadata block.

    ``version`` is the vendor's change marker (etag, cTag, updated time): a walker re-reads
    an item only when it changed. ``extra`` holds service-specific values under the common
    keys of :data:`EXTRA_KEYS`; anything else goes under ``extra["vendor"]``. ``content``
    carries the item's text when the listing already has it (a mail body, a task
    description); files are fetched with ``download``.
    """

    id: str
    title: str
    kind: ItemKind = "file"
    path: str = ""
    url: str | None = None
    modified: datetime | None = None
    author: str | None = None
    size: int | None = None
    mime: str | None = None
    version: str | None = None
    depth: int = 0
    extra: dict[str, Any] = Field(default_factory=dict)
    content: str | None = None

    @field_validator("url", mode="before")
    @classmethod
    def _web_address(cls, value: Any) -> str | None:
        """Only an absolute http(s) address without whitespace or control characters is
        kept: the page links it and the index stores it. Anything else a vendor sends
        (``javascript:``, a NUL in a name) becomes ``None`` rather than failing the listing."""
        if not isinstance(value, str) or len(value) > MAX_URL:
            return None
        head = value[:8].lower()
        if not head.startswith(("http://", "https://")):
            return None
        if any(ch.isspace() or not ch.isprintable() for ch in value):
            return None
        return value

    @property
    def is_folder(self) -> bool:
        """True for containers (folders, lists, boards) that ``browse`` can open."""
        return self.kind == "folder"


class ItemPage(WireModel):
    """One page of items; ``cursor`` (opaque) is set when more exist."""

    items: list[Item] = Field(default_factory=list)
    cursor: str | None = None


class Download(WireModel):
    """Bytes downloaded from a source, with the item they belong to."""

    item: Item
    content: bytes
    mime: str = "application/octet-stream"

    @property
    def name(self) -> str:
        """File name to store the bytes under."""
        return self.item.title


class DownloadedFile(WireModel):
    """Named bytes handed to ``kernel.knowledge.indexing.ingest`` (one file of a data source)."""

    name: str
    content: bytes
    mime_type: str = "application/octet-stream"
    metadata: dict[str, Any] = Field(default_factory=dict)


class ItemFailure(WireModel):
    """An item the adapter could not read while syncing (the sync goes on)."""

    item_id: str
    reason: str


class Unlisted(WireModel):
    """A part of a listing the connector could not list — a folder it may not read, a
    container the service refused — while it listed the rest.

    ``path`` is the folder as the :attr:`Item.path` of the items below it begins (``/reports``
    covers ``/reports/q3.txt``); ``""`` or ``"/"`` stands for the whole scope. The walker
    deletes nothing below it, reports it, and lists in full again the next time."""

    path: str
    reason: str


class SyncPage(WireModel):
    """One page of a sync: changed or new items, ids deleted at the source (tombstones),
    per-item failures, the parts it could not list, and the checkpoint that resumes *after*
    this page.

    ``done`` marks the last page of this run. ``full_listing`` marks a run that lists every
    item (a first sync, or a re-sync after an expired cursor): when such a run completes, the
    walker may sweep what it did not see — never below an :class:`Unlisted` folder, so a
    connector that skips a folder it cannot read must say so in ``unlisted`` (or raise: a
    listing that ends early must never look complete).
    """

    items: list[Item] = Field(default_factory=list)
    tombstones: list[str] = Field(default_factory=list)
    failures: list[ItemFailure] = Field(default_factory=list)
    unlisted: list[Unlisted] = Field(default_factory=list)
    checkpoint: dict[str, Any] = Field(default_factory=dict)
    done: bool = False
    full_listing: bool = False
    #: the page comes from a feed that reports every deletion since the checkpoint (a delta
    #: or history feed): when every page of an incremental run says so, the walker lists no
    #: ids to find deletions (``list_ids`` would cost a request per page of the whole source)
    deletions_reported: bool = False


class TokenGrant(WireModel):
    """OAuth tokens as a token endpoint returns them (``expires_at`` computed on receipt)."""

    access_token: str
    refresh_token: str | None = None
    expires_at: datetime | None = None
    token_type: str = "Bearer"
    scopes: list[str] = Field(default_factory=list)


class OAuthConfig(WireModel):
    """Where and how a service issues tokens (standard OAuth 2.0 endpoints).

    ``client_id_setting`` / ``client_secret_setting`` name the configuration values
    (environment or config file) that hold the app's credentials.
    """

    token_url: str
    device_code_url: str | None = None
    authorize_url: str | None = None
    scopes: list[str] = Field(default_factory=list)
    client_id_setting: str = ""
    client_secret_setting: str | None = None


class ConnectionInfo(WireModel):
    """A user's connection as adapters see it (the tokens stay with the token manager)."""

    id: str
    service: str
    user_id: str
    mandate_id: str | None = None
    account: str = ""
    label: str = ""
    scopes: list[str] = Field(default_factory=list)
    status: str = "active"
    knowledge_ingestion_enabled: bool = True
    settings: dict[str, Any] = Field(default_factory=dict)

    @property
    def base_url(self) -> str | None:
        """The service endpoint when the connection names one (self-hosted services)."""
        value = self.settings.get("baseUrl")
        return str(value) if value else None


class OutgoingMessage(WireModel):
    """A message to send through a connection (mail, chat)."""

    to: list[str]
    subject: str = ""
    body: str = ""
    cc: list[str] = Field(default_factory=list)
    attachments: list[Download] = Field(default_factory=list)


class ConnectorContext(Protocol):
    """What an adapter method gets: the connection and its vendor HTTP client
    (:class:`nyla.connections.http.VendorHttp`: authenticated, retried, rate-limited)."""

    connection: ConnectionInfo
    http: Any


@runtime_checkable
class ConnectorAdapter(Protocol):
    """An adapter to one external service (seeds: ``ServiceAdapter``), contributed through
    ``nyla_connectors``. Implement the capabilities the service has; subclass
    :class:`nyla.sdk.connectors.BaseConnector` so the kernel can tell which ones those are.

    Search first: ``search`` runs the service's own server-side search, scoped and paged;
    ``browse`` only lists one container.
    """

    service: str
    label: str
    query_syntax: str

    async def search(
        self, ctx: ConnectorContext, query: str, scope: str = "", cursor: str | None = None
    ) -> ItemPage: ...

    async def browse(
        self, ctx: ConnectorContext, path: str = "", cursor: str | None = None
    ) -> ItemPage: ...

    async def download(
        self, ctx: ConnectorContext, item_id: str, max_bytes: int | None = None
    ) -> Download: ...

    def sync(
        self, ctx: ConnectorContext, scope: str, checkpoint: dict[str, Any] | None
    ) -> AsyncIterator[SyncPage]: ...


class JobProgress(Protocol):
    """Progress callback a walker reports through; ``is_cancelled`` is checked cooperatively."""

    def update(self, done: int, total: int | None = None, message: str = "") -> None: ...

    def is_cancelled(self) -> bool: ...


class WalkResult(WireModel):
    """What one walk of one data source did."""

    data_source_id: str
    pages: int = 0
    items_seen: int = 0
    items_indexed: int = 0
    items_unchanged: int = 0
    items_skipped: int = 0
    items_failed: int = 0
    items_deleted: int = 0
    chunks_written: int = 0
    bytes_indexed: int = 0
    stopped_at_limit: bool = False
    cancelled: bool = False
    full_resync: bool = False
    sweep: str = "not run"
    #: folders the listing could not read: nothing below them was deleted
    unlisted: list[Unlisted] = Field(default_factory=list)
    #: this request found the same sync of the data source running and took its result
    joined: bool = False
    #: seconds this sync waited for another one of the data source (another process's)
    waited_s: float = 0.0
    skipped: dict[str, str] = Field(default_factory=dict)
    errors: list[str] = Field(default_factory=list)


@runtime_checkable
class Walker(Protocol):
    """A RAG walker, contributed through ``nyla_walkers``: which connector ``services`` it
    syncs into the knowledge store, and its limit kind (``files`` or ``clickup``). The kernel's
    walker runner does the rest (checkpoints, limits, deletions); a walker may narrow what
    is indexed with ``accepts(item)``."""

    id: str
    services: list[str]
    limit_kind: str

    def accepts(self, item: Item) -> bool: ...
