"""The Google adapter: one connection, every surface of the account (Gmail, Drive, Calendar,
Contacts), routed by the path grammar of :mod:`nyla_connector_google.paths`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, ClassVar

from nyla.sdk.connectors import (
    ConnectorContext,
    ConnectorSettings,
    Download,
    HttpPolicy,
    Item,
    ItemPage,
    MailConnector,
    MailMessage,
    MailQuery,
    OAuthConfig,
    OutgoingMessage,
    SyncPage,
    VendorBadRequestError,
    setting,
)
from nyla_connector_google import calendar, drive, gmail, gmail_sync
from nyla_connector_google.paths import api, parse, split_id

OAUTH = "https://oauth2.googleapis.com"

QUERY_SYNTAX = (
    "Scope decides what is searched: `/mail/<label>` (INBOX, SENT, a label id) or `/mail` "
    "searches Gmail with its operators (`from:ada@example.com`, `subject:invoice`, "
    "`after:2026/01/01`, `before:2026/02/01`, `has:attachment`, plain words); "
    "`/drive/<folderId>` or `/drives/<driveId>/<folderId>` searches file names and content "
    "in that folder (`fullText contains`), `/drive` or an empty scope every file of every "
    "drive the user reaches; `/calendar/<calendarId>` matches event text; `/contacts` names, "
    "addresses and phone numbers."
)


class GoogleSettings(ConnectorSettings):
    """A Google connection needs nothing but its sign-in; an operator may route it through
    a proxy."""

    base_url: str | None = setting(
        None,
        kind="url",
        label="API root",
        help="one root serving every Google API below /gmail/v1, /drive/v3, /calendar/v3, "
        "/people/v1 (a proxy; default: Google's own hosts)",
        server_only=True,
    )


class GoogleConnector(MailConnector):
    """Google Workspace over plain httpx: Gmail, Drive (shared drives too), Calendar and
    Contacts; history / changes / sync-token sync of a label, a folder, a calendar or the
    contacts."""

    service: ClassVar[str] = "google"
    label: ClassVar[str] = "Google"
    query_syntax: ClassVar[str] = QUERY_SYNTAX
    # each API has its own host (see paths.APIS); a connection's baseUrl replaces them all
    base_url: ClassVar[str | None] = None
    oauth: ClassVar[OAuthConfig | None] = OAuthConfig(
        token_url=f"{OAUTH}/token",
        device_code_url=f"{OAUTH}/device/code",
        authorize_url="https://accounts.google.com/o/oauth2/v2/auth",
        scopes=[
            "https://www.googleapis.com/auth/gmail.modify",
            "https://www.googleapis.com/auth/drive.readonly",
            "https://www.googleapis.com/auth/calendar.readonly",
            "https://www.googleapis.com/auth/contacts.readonly",
        ],
        client_id_setting="NYLA_GOOGLE_CLIENT_ID",
        client_secret_setting="NYLA_GOOGLE_CLIENT_SECRET",
    )
    # Gmail's quota is in units per mailbox (gmail.spend); Drive allows 12,000 queries per
    # minute per user: requests are capped at 8 at a time per account
    # Google answers throttling as 403 with these reasons too, to be retried with exponential
    # backoff (developers.google.com/gmail/api/guides/handle-errors)
    http_policy: ClassVar[HttpPolicy] = HttpPolicy(
        max_concurrency=8,
        timeout_s=30,
        rate_limit_reasons=frozenset({"rateLimitExceeded", "userRateLimitExceeded"}),
    )
    auth_modes: ClassVar[tuple[str, ...]] = ("device_code", "token")
    settings: ClassVar[type[ConnectorSettings]] = GoogleSettings

    # ---- the connector protocol ---------------------------------------------------------

    async def search(
        self, ctx: ConnectorContext, query: str, scope: str = "", cursor: str | None = None
    ) -> ItemPage:
        """The surface's own search, scoped by ``scope`` (see ``query_syntax``)."""
        target = parse(scope)
        if target.kind in ("mail", "labels"):
            return await gmail.search_mail(ctx, MailQuery(text=query, folder=target.ident), cursor)
        if target.kind in ("threads", "thread"):
            return await gmail.threads(ctx, target.ident, query, cursor)
        if target.kind == "drive" and not (target.ident == "root" and not target.drive):
            return await drive.search(ctx, target, query, cursor)
        if target.kind == "calendar":
            return await calendar.events(ctx, target, cursor, q=query)
        if target.kind == "calendars":
            return await calendar.events(ctx, parse("/calendar/primary"), cursor, q=query)
        if target.kind == "contacts":
            return await calendar.search_contacts(ctx, query)
        return await drive.search(ctx, None, query, cursor)

    async def browse(
        self, ctx: ConnectorContext, path: str = "", cursor: str | None = None
    ) -> ItemPage:
        """One container: the surfaces at ``/``, then labels, messages, files, events."""
        target = parse(path)
        if target.kind == "root":
            return ItemPage(items=[_surface(p, t) for p, t in _SURFACES])
        if target.kind in ("labels", "mail", "thread"):
            return await gmail.browse_mail(ctx, target, cursor)
        if target.kind == "threads":
            return await gmail.threads(ctx, target.ident, "", cursor)
        if target.kind == "drives":
            return await drive.browse_drives(ctx, cursor)
        if target.kind == "drive":
            return await drive.browse_folder(ctx, target, cursor)
        if target.kind == "calendars":
            return await calendar.browse_calendars(ctx, cursor)
        if target.kind == "calendar":
            return await calendar.events(ctx, target, cursor)
        return await calendar.browse_contacts(ctx, cursor)

    async def item(self, ctx: ConnectorContext, item_id: str) -> Item:
        """One item's metadata by its id."""
        kind, parts = split_id(item_id)
        if kind == "mail":
            return await gmail.message(ctx, parts[0])
        if kind == "file":
            return await drive.file_meta(ctx, parts[0])
        return (await self.download(ctx, item_id)).item

    async def download(
        self, ctx: ConnectorContext, item_id: str, max_bytes: int | None = None
    ) -> Download:
        """Files (Google Docs exported), attachments, a message as MIME, an event or a
        contact as its JSON."""
        kind, parts = split_id(item_id)
        if kind == "file":
            return await drive.download(ctx, parts[0], max_bytes)
        if kind == "attachment":
            return await gmail.download_attachment(ctx, parts[0], parts[1], max_bytes)
        if kind in ("mail", "draft"):
            return await gmail.download_message(ctx, parts[-1], max_bytes)
        if kind == "event":
            return await calendar.download_event(ctx, parts[0], parts[1], max_bytes)
        if kind == "contact":
            return await calendar.download_contact(ctx, parts[0], max_bytes)
        raise VendorBadRequestError(f"google: {item_id!r} cannot be downloaded", service="google")

    async def send(self, ctx: ConnectorContext, message: OutgoingMessage) -> str:
        """``messages.send``."""
        return await gmail.send(ctx, message)

    async def sync(
        self, ctx: ConnectorContext, scope: str, checkpoint: dict[str, Any] | None
    ) -> AsyncIterator[SyncPage]:
        """Sync of a Gmail label (``history.list``), a Drive folder tree (``changes.list``),
        a calendar or the contacts (``syncToken``)."""
        target = parse(scope)
        if target.kind == "mail":
            pages = gmail_sync.sync_mail(ctx, target, checkpoint)
        elif target.kind == "drive":
            pages = drive.sync_drive(ctx, target, checkpoint)
        elif target.kind == "calendar":
            pages = calendar.sync_events(ctx, target, checkpoint)
        elif target.kind == "contacts":
            pages = calendar.sync_contacts(ctx, target, checkpoint)
        else:
            raise VendorBadRequestError(
                f"google: {target.path} cannot be synced; sync a label (/mail/<label>), a "
                "folder (/drive/<folderId>, /drives/<driveId>[/<folderId>]), a calendar "
                "(/calendar/<calendarId>) or /contacts",
                service="google",
            )
        async for page in pages:
            yield page

    async def list_ids(self, ctx: ConnectorContext, scope: str) -> AsyncIterator[list[str]]:
        """Every item id below ``scope`` (label, folder tree, calendar, contacts)."""
        target = parse(scope)
        if target.kind == "mail":
            listing = gmail_sync.message_ids(ctx, target)
        elif target.kind == "drive":
            listing = drive.file_ids(ctx, target)
        elif target.kind == "calendar":
            listing = calendar.event_ids(ctx, target)
        elif target.kind == "contacts":
            listing = calendar.contact_ids(ctx)
        else:
            raise VendorBadRequestError(
                f"google: {target.path} has no id listing", service="google"
            )
        async for ids in listing:
            yield ids

    async def check(self, ctx: ConnectorContext) -> str:
        """Drive's ``about``: who the token belongs to."""
        about = await ctx.http.get_json(api(ctx, "drive", "/about"), params={"fields": "user"})
        user = about.get("user") or {}
        return f"signed in as {user.get('displayName')} <{user.get('emailAddress')}>"

    # ---- mail -----------------------------------------------------------------------------

    async def search_mail(
        self, ctx: ConnectorContext, query: MailQuery, cursor: str | None = None
    ) -> ItemPage:
        """Gmail search (``q=`` in the label), metadata resolved in parallel."""
        return await gmail.search_mail(ctx, query, cursor)

    async def read_message(self, ctx: ConnectorContext, message_id: str) -> MailMessage:
        """A message (or a draft's message) with its text body and attachments."""
        return await gmail.read_message(ctx, _message(message_id))

    async def draft(self, ctx: ConnectorContext, message: OutgoingMessage) -> Item:
        """A draft (``drafts.create``)."""
        return await gmail.create_draft(ctx, message)

    async def send_draft(self, ctx: ConnectorContext, draft_id: str) -> str:
        """Send a draft (``drafts.send``)."""
        kind, parts = split_id(draft_id)
        if kind != "draft":
            raise VendorBadRequestError(f"google: {draft_id!r} is not a draft id", service="google")
        return await gmail.send_draft(ctx, parts[0])

    async def move(self, ctx: ConnectorContext, message_id: str, folder: str) -> Item:
        """Gmail labels as folders (``archive`` takes the message out of the inbox)."""
        return await gmail.move(ctx, _message(message_id), folder)

    async def flag(
        self,
        ctx: ConnectorContext,
        message_id: str,
        *,
        flagged: bool | None = None,
        read: bool | None = None,
    ) -> Item:
        """Star (the follow-up flag) and the read state."""
        return await gmail.flag(ctx, _message(message_id), flagged, read)


def _message(item_id: str) -> str:
    kind, parts = split_id(item_id)
    if kind not in ("mail", "draft"):
        raise VendorBadRequestError(f"google: {item_id!r} is not a message id", service="google")
    return parts[-1]


_SURFACES = (
    ("/mail", "Gmail"),
    ("/drive", "My Drive"),
    ("/drives", "Shared drives"),
    ("/calendar", "Calendar"),
    ("/contacts", "Contacts"),
)


def _surface(path: str, title: str) -> Item:
    return Item(id=f"surface:{path.strip('/')}", title=title, kind="folder", path=path)
