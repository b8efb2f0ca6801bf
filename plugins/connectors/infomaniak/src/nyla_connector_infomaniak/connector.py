"""The Infomaniak adapter: kDrive (``/kdrive/...``) and calendars (``/calendar/...``) of one
account, authenticated with an Infomaniak API token (the connection's token)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, ClassVar

from nyla.sdk.connectors import (
    BaseConnector,
    ConnectorContext,
    ConnectorSettings,
    Download,
    HttpPolicy,
    Item,
    ItemPage,
    SyncPage,
    VendorBadRequestError,
    setting,
)
from nyla_connector_infomaniak import caldav, kdrive

QUERY_SYNTAX = (
    "Scope `/kdrive` or `/kdrive/<dirId>`: kDrive's search over file names and content below "
    "that directory; scope `/calendar/<name>`: events whose title contains the words."
)


def _surface(path: str) -> str:
    head = [p for p in path.split("?")[0].split("/") if p][:1]
    return head[0] if head else ""


class InfomaniakSettings(ConnectorSettings):
    """Which kDrive a connection reads and where its calendars are."""

    drive_id: str | None = setting(
        None,
        kind="text",
        label="kDrive id",
        help="the number in the kDrive URL",
        pattern=r"^[0-9]{1,20}$",
    )
    caldav_user: str | None = setting(
        None,
        kind="text",
        label="CalDAV user",
        help="the CalDAV user name (default: the connection's account)",
    )
    caldav_url: str | None = setting(
        None,
        kind="url",
        label="CalDAV server",
        help=f"the CalDAV server (default {caldav.DEFAULT_CALDAV})",
        server_only=True,
    )


class InfomaniakConnector(BaseConnector):
    """Infomaniak: kDrive over REST, calendars over CalDAV."""

    service: ClassVar[str] = "infomaniak"
    label: ClassVar[str] = "Infomaniak"
    query_syntax: ClassVar[str] = QUERY_SYNTAX
    base_url: ClassVar[str | None] = "https://api.infomaniak.com"
    # Infomaniak's API allows 60 requests a minute per token
    http_policy: ClassVar[HttpPolicy] = HttpPolicy(
        max_concurrency=4, rate_requests=60, rate_window_s=60, timeout_s=30
    )
    auth_modes: ClassVar[tuple[str, ...]] = ("token",)
    settings: ClassVar[type[ConnectorSettings]] = InfomaniakSettings

    async def search(
        self, ctx: ConnectorContext, query: str, scope: str = "", cursor: str | None = None
    ) -> ItemPage:
        """kDrive search, or an event title search in one calendar."""
        if _surface(scope) == "calendar":
            return await caldav.search(ctx, query, scope)
        return await kdrive.search(ctx, query, scope, cursor)

    async def browse(
        self, ctx: ConnectorContext, path: str = "", cursor: str | None = None
    ) -> ItemPage:
        """``/``: kDrive and Calendar; a kDrive directory; the calendars; a calendar's events
        in a date range (under three months)."""
        surface = _surface(path)
        if not surface:
            return ItemPage(
                items=[
                    Item(id="surface:kdrive", title="kDrive", kind="folder", path="/kdrive"),
                    Item(id="surface:calendar", title="Calendar", kind="folder", path="/calendar"),
                ]
            )
        if surface == "calendar":
            if path.split("?")[0].strip("/") == "calendar":
                return await caldav.calendars(ctx)
            return await caldav.events(ctx, path)
        return await kdrive.browse(ctx, path, cursor)

    async def download(
        self, ctx: ConnectorContext, item_id: str, max_bytes: int | None = None
    ) -> Download:
        """A kDrive file's bytes or an event's iCalendar object."""
        kind, _, rest = item_id.partition(":")
        if kind == "kdrive" and kdrive.is_number(rest):
            return await kdrive.download(ctx, rest, max_bytes)
        if kind == "caldav" and rest:
            return await caldav.download(ctx, rest, max_bytes)
        raise VendorBadRequestError(
            f"infomaniak: {item_id!r} is not an item id (kdrive:<id> or caldav:<href>)",
            service="infomaniak",
        )

    async def sync(
        self, ctx: ConnectorContext, scope: str, checkpoint: dict[str, Any] | None
    ) -> AsyncIterator[SyncPage]:
        """``listing/continue`` for a kDrive directory, ``sync-collection`` for a calendar."""
        pages = (
            caldav.sync(ctx, scope, checkpoint)
            if _surface(scope) == "calendar"
            else kdrive.sync(ctx, scope, checkpoint)
        )
        async for page in pages:
            yield page

    async def list_ids(self, ctx: ConnectorContext, scope: str) -> AsyncIterator[list[str]]:
        """Every id below a kDrive directory or in a calendar."""
        if _surface(scope) == "calendar":
            async for page in caldav.sync(ctx, scope, None):
                yield [i.id for i in page.items]
            return
        async for ids in kdrive.list_ids(ctx, scope):
            yield ids
