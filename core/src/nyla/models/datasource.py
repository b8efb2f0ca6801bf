"""Contracts of connectors to external sources and of the RAG walkers that sync them."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from pydantic import Field

from nyla.models.base import WireModel


class ExternalEntry(WireModel):
    """An item in an external source: file, folder, mail, event, contact, task.

    ``metadata`` holds the vendor's fields; the adapter's ``normalize_metadata`` maps them to
    the common keys (``date``, ``from``, ``start``, ``end``, ``location``, ``email``, ``phone``,
    ``company``, ``status``, ``assignee``, ``due``) that tool output renders inline.
    """

    id: str
    name: str
    path: str = ""
    kind: str = "file"  # file | folder | mail | event | contact | task
    is_folder: bool = False
    mime_type: str | None = None
    size: int | None = None
    modified_at: datetime | None = None
    web_url: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class EntryPage(WireModel):
    """One page of entries; ``next_page_token`` is set when more exist."""

    entries: list[ExternalEntry] = Field(default_factory=list)
    next_page_token: str | None = None


class DownloadedFile(WireModel):
    """Bytes downloaded from a source, with what is known about them."""

    name: str
    content: bytes
    mime_type: str = "application/octet-stream"
    metadata: dict[str, Any] = Field(default_factory=dict)


class ConnectionInfo(WireModel):
    """A user's connection to an external service (tokens stay with the host)."""

    id: str
    service: str
    user_id: str
    access_token: str | None = None
    base_url: str | None = None
    settings: dict[str, Any] = Field(default_factory=dict)


@runtime_checkable
class ConnectorAdapter(Protocol):
    """An adapter to one external service (seeds: ``ServiceAdapter``), contributed through
    ``nyla_connectors``. Search-first: ``search`` runs the source's own server-side search,
    scoped to the connected folder/label and paginated; ``browse`` only lists a folder."""

    service: str

    async def browse(
        self,
        connection: ConnectionInfo,
        path: str = "",
        page_token: str | None = None,
        limit: int = 50,
    ) -> EntryPage: ...

    async def search(
        self,
        connection: ConnectionInfo,
        query: str,
        scope_path: str = "",
        page_token: str | None = None,
        limit: int = 25,
    ) -> EntryPage: ...

    async def download(self, connection: ConnectionInfo, entry_id: str) -> DownloadedFile: ...

    def normalize_metadata(self, entry: ExternalEntry) -> dict[str, Any]: ...


class JobProgress(Protocol):
    """Progress callback a walker reports through; ``is_cancelled`` is checked cooperatively."""

    def update(self, done: int, total: int | None = None, message: str = "") -> None: ...

    def is_cancelled(self) -> bool: ...


class WalkResult(WireModel):
    """What one walk did."""

    data_source_id: str
    items_seen: int = 0
    items_indexed: int = 0
    items_failed: int = 0
    bytes_indexed: int = 0
    stopped_at_limit: bool = False
    cancelled: bool = False
    errors: list[str] = Field(default_factory=list)


@runtime_checkable
class Walker(Protocol):
    """A RAG walker, contributed through ``nyla_walkers``: syncs the DataSources of its
    connector ``services`` that have ``rag_index_enabled`` into the knowledge store."""

    id: str
    services: list[str]

    async def walk(
        self,
        data_sources: list[dict[str, Any]],
        progress: JobProgress,
        ingest: Callable[..., Awaitable[Any]],
        limits: dict[str, Any] | None = None,
    ) -> list[WalkResult]: ...
