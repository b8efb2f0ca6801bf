"""The Microsoft 365 adapter: one connection, every Graph surface of the account, routed by
the path grammar of :mod:`nyla_connector_msft.paths`."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Mapping
from typing import Any, ClassVar, Literal
from urllib.parse import urlencode

from nyla.sdk import ConfigurationError
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
from nyla_connector_msft import drive, items, mail
from nyla_connector_msft.paths import GRAPH, follow, parse, seg, split_id

LOGIN = "https://login.microsoftonline.com/common/oauth2/v2.0"

#: Microsoft's national clouds: where each signs in and serves Graph
#: (learn.microsoft.com/graph/deployments#app-registration-and-token-service-root-endpoints)
CLOUDS: dict[str, tuple[str, str]] = {
    "global": ("https://login.microsoftonline.com", "https://graph.microsoft.com"),
    "usgov": ("https://login.microsoftonline.us", "https://graph.microsoft.us"),
    "usgov-dod": ("https://login.microsoftonline.us", "https://dod-graph.microsoft.us"),
    "china": ("https://login.chinacloudapi.cn", "https://microsoftgraph.chinacloudapi.cn"),
}
#: a tenant: its id, a verified domain, or common / organizations / consumers
_TENANT = re.compile(r"[A-Za-z0-9][A-Za-z0-9.-]{0,99}")
#: scopes that are not Graph permissions (never prefixed with a national Graph host)
_OIDC_SCOPES = frozenset({"offline_access", "openid", "profile", "email"})


def cloud_endpoints(settings: Mapping[str, Any]) -> tuple[str, str, str]:
    """``(login root, Graph root, tenant)`` of a connection's ``cloud`` and ``tenant``
    settings; a clear error for a cloud or tenant that is not one."""
    cloud = str(settings.get("cloud") or "global").strip().lower()
    if cloud not in CLOUDS:
        raise ConfigurationError(f"msft: unknown cloud {cloud!r}; one of {', '.join(CLOUDS)}")
    tenant = str(settings.get("tenant") or "common").strip()
    if not _TENANT.fullmatch(tenant):
        raise ConfigurationError(f"msft: {tenant[:40]!r} is not a tenant id or domain")
    login, graph = CLOUDS[cloud]
    return login, graph, tenant


QUERY_SYNTAX = (
    "Scope decides what is searched: `/mail` or `/mail/<folder>` searches Outlook with KQL "
    "(`from:ada@example.com`, `subject:invoice`, `received>=2026-01-01`, plain words); "
    "`/drive/<folder>`, `/drives/<id>/<folder>` or `/sites/<site>/<library>/<folder>` "
    "searches file names and content below that folder; `/sites` finds sites by name; "
    "`/calendar` matches event subjects; `/contacts` names and addresses; an empty scope "
    "runs Microsoft Search over every OneDrive and SharePoint file the user can read."
)


class MsftSettings(ConnectorSettings):
    """Which Microsoft cloud and directory a connection signs in to; an operator may route
    Graph through a proxy."""

    cloud: Literal["global", "usgov", "usgov-dod", "china"] = setting(
        "global", kind="text", label="Microsoft cloud", help="global, usgov, usgov-dod or china"
    )
    tenant: str = setting(
        "common",
        kind="text",
        label="Tenant",
        help="the directory to sign in to: its id or domain (common: any account)",
        pattern=r"^[A-Za-z0-9][A-Za-z0-9.-]{0,99}$",
    )
    base_url: str | None = setting(
        None,
        kind="url",
        label="Graph root",
        help="Graph's root behind a proxy (default: the cloud's Graph, .../v1.0)",
        server_only=True,
    )


class MsftConnector(MailConnector):
    """Microsoft 365 over Graph: Outlook mail, calendar and contacts, OneDrive and
    SharePoint; delta-query sync of a mail folder or a drive folder."""

    service: ClassVar[str] = "msft"
    label: ClassVar[str] = "Microsoft 365"
    query_syntax: ClassVar[str] = QUERY_SYNTAX
    base_url: ClassVar[str | None] = GRAPH
    oauth: ClassVar[OAuthConfig | None] = OAuthConfig(
        token_url=f"{LOGIN}/token",
        device_code_url=f"{LOGIN}/devicecode",
        authorize_url=f"{LOGIN}/authorize",
        scopes=[
            "offline_access",
            "User.Read",
            "Mail.ReadWrite",
            "Mail.Send",
            "Calendars.Read",
            "Contacts.Read",
            "Files.Read.All",
            "Sites.Read.All",
        ],
        client_id_setting="NYLA_MSFT_CLIENT_ID",
        client_secret_setting="NYLA_MSFT_CLIENT_SECRET",
    )
    # Outlook's published limits: 10,000 requests per 10 minutes per app and mailbox, at
    # most 4 concurrent requests per mailbox.
    http_policy: ClassVar[HttpPolicy] = HttpPolicy(
        max_concurrency=4, rate_requests=10_000, rate_window_s=600, timeout_s=30
    )
    auth_modes: ClassVar[tuple[str, ...]] = ("device_code", "token")
    settings: ClassVar[type[ConnectorSettings]] = MsftSettings
    admin_consent: ClassVar[bool] = True

    def oauth_for(self, settings: Mapping[str, Any]) -> OAuthConfig | None:
        """The sign-in endpoints of the connection's cloud and tenant; in a national cloud
        the Graph permissions are named with that cloud's Graph host."""
        login, graph, tenant = cloud_endpoints(settings)
        oauth = self.oauth
        if oauth is None or (login, tenant) == (CLOUDS["global"][0], "common"):
            return oauth
        root = f"{login}/{tenant}/oauth2/v2.0"
        scopes = oauth.scopes
        if graph != CLOUDS["global"][1]:
            scopes = [s if s in _OIDC_SCOPES else f"{graph}/{s}" for s in scopes]
        return oauth.model_copy(
            update={
                "token_url": f"{root}/token",
                "device_code_url": f"{root}/devicecode",
                "authorize_url": f"{root}/authorize",
                "scopes": scopes,
            }
        )

    def admin_consent_url(
        self, settings: Mapping[str, Any], client_id: str, redirect_uri: str
    ) -> str | None:
        """Where a directory admin consents for the whole organisation (needed before users
        of a tenant that allows no user consent can sign in)."""
        login, _, tenant = cloud_endpoints(settings)
        query = urlencode({"client_id": client_id, "redirect_uri": redirect_uri})
        where = "organizations" if tenant == "common" else tenant
        return f"{login}/{where}/adminconsent?{query}"

    def api_base(self, settings: Mapping[str, Any]) -> str | None:
        """Graph's root: an operator's ``baseUrl`` (a proxy), else the connection's cloud's."""
        return (
            super().api_base(settings)
            if settings.get("baseUrl")
            else (f"{cloud_endpoints(settings)[1]}/v1.0")
        )

    # ---- the connector protocol ---------------------------------------------------------

    async def search(
        self, ctx: ConnectorContext, query: str, scope: str = "", cursor: str | None = None
    ) -> ItemPage:
        """The surface's own search, scoped by ``scope`` (see ``query_syntax``)."""
        target, cursor = parse(scope), follow(cursor)
        if target.kind in ("mail", "mail_folders"):
            return await mail.search_mail(ctx, MailQuery(text=query, folder=target.folder), cursor)
        if target.kind == "drive":
            return await drive.search_folder(ctx, target, query, cursor)
        if target.kind in ("sites", "site"):
            return await drive.search_sites(ctx, query, cursor)
        if target.kind in ("calendar", "calendars"):
            return await mail.search_events(ctx, query, cursor)
        if target.kind == "contacts":
            return await mail.search_contacts(ctx, query, cursor)
        return await drive.search_everywhere(ctx, query, cursor)

    async def browse(
        self, ctx: ConnectorContext, path: str = "", cursor: str | None = None
    ) -> ItemPage:
        """One container: the surfaces at ``/``, then folders, messages, events, files."""
        target, cursor = parse(path), follow(cursor)
        if target.kind == "root":
            return ItemPage(items=[_surface(p, t) for p, t in _SURFACES])
        if target.kind in ("mail", "mail_folders"):
            return await mail.browse_mail(ctx, target, cursor)
        if target.kind in ("calendar", "calendars"):
            return await mail.browse_calendar(ctx, target, cursor)
        if target.kind == "contacts":
            return await mail.browse_contacts(ctx, target, cursor)
        if target.kind in ("sites", "site"):
            return await drive.browse_sites(ctx, target, cursor)
        return await drive.browse_folder(ctx, target, cursor)

    async def item(self, ctx: ConnectorContext, item_id: str) -> Item:
        """One item's metadata by its id."""
        kind, parts = split_id(item_id)
        if kind == "mail":
            return await mail.message(ctx, parts[0])
        if kind == "file":
            return await drive.file_meta(ctx, parts[0], parts[1])
        return (await self.download(ctx, item_id)).item

    async def download(
        self, ctx: ConnectorContext, item_id: str, max_bytes: int | None = None
    ) -> Download:
        """Files and attachments as their bytes, a message as MIME, an event or contact as
        its Graph JSON."""
        kind, parts = split_id(item_id)
        if kind == "file":
            return await drive.download_file(ctx, parts[0], parts[1], max_bytes)
        if kind == "attachment":
            return await mail.download_attachment(ctx, parts[0], parts[1], max_bytes)
        if kind == "mail":
            return await mail.download_message(ctx, parts[0], max_bytes)
        url = f"/me/{'events' if kind == 'event' else 'contacts'}/{seg(parts[0])}"
        raw = await ctx.http.get_json(url)
        meta = items.event_item(raw) if kind == "event" else items.contact_item(raw)
        data = json.dumps(raw, ensure_ascii=False, indent=1).encode()
        mail.check_size(meta.model_copy(update={"size": len(data)}), max_bytes)
        return Download(
            item=meta.model_copy(update={"title": f"{meta.title}.json"}),
            content=data,
            mime="application/json",
        )

    async def send(self, ctx: ConnectorContext, message: OutgoingMessage) -> str:
        """A draft, then ``send`` (so the sent message has an id to report)."""
        draft = await mail.create_draft(ctx, message)
        return await mail.send_draft(ctx, split_id(draft.id)[1][0])

    async def sync(
        self, ctx: ConnectorContext, scope: str, checkpoint: dict[str, Any] | None
    ) -> AsyncIterator[SyncPage]:
        """Delta sync of a mail folder (``messages/delta``) or a drive folder
        (``root/delta``)."""
        target = parse(scope)
        if target.kind == "mail":
            pages = mail.sync_messages(ctx, target, checkpoint)
        elif target.kind == "drive":
            pages = drive.sync_drive(ctx, target, checkpoint)
        else:
            raise VendorBadRequestError(
                f"msft: {target.path} cannot be synced; sync a mail folder (/mail/<folder>) "
                "or a drive folder (/drive/..., /drives/<id>/..., /sites/<site>/<library>/...)",
                service="msft",
            )
        async for page in pages:
            yield page

    async def list_ids(self, ctx: ConnectorContext, scope: str) -> AsyncIterator[list[str]]:
        """Every item id below ``scope`` (mail folder or drive folder)."""
        target = parse(scope)
        if target.kind == "mail":
            listing = mail.message_ids(ctx, target)
        elif target.kind == "drive":
            listing = drive.file_ids(ctx, target)
        else:
            raise VendorBadRequestError(f"msft: {target.path} has no id listing", service="msft")
        async for ids in listing:
            yield ids

    async def check(self, ctx: ConnectorContext) -> str:
        """``/me``: who the token belongs to."""
        me = await ctx.http.get_json("/me", params={"$select": "displayName,mail"})
        return f"signed in as {me.get('displayName')} <{me.get('mail')}>"

    # ---- mail -----------------------------------------------------------------------------

    async def search_mail(
        self, ctx: ConnectorContext, query: MailQuery, cursor: str | None = None
    ) -> ItemPage:
        """Outlook search: KQL ``$search``, or a ``receivedDateTime`` listing."""
        return await mail.search_mail(ctx, query, follow(cursor))

    async def read_message(self, ctx: ConnectorContext, message_id: str) -> MailMessage:
        """A message with its text body and attachments."""
        return await mail.read_message(ctx, _message(message_id))

    async def draft(self, ctx: ConnectorContext, message: OutgoingMessage) -> Item:
        """A draft in Drafts."""
        return await mail.create_draft(ctx, message)

    async def send_draft(self, ctx: ConnectorContext, draft_id: str) -> str:
        """Send a draft."""
        return await mail.send_draft(ctx, _message(draft_id))

    async def move(self, ctx: ConnectorContext, message_id: str, folder: str) -> Item:
        """Move a message to a folder (id or well-known name)."""
        return await mail.move(ctx, _message(message_id), folder)

    async def flag(
        self,
        ctx: ConnectorContext,
        message_id: str,
        *,
        flagged: bool | None = None,
        read: bool | None = None,
    ) -> Item:
        """Follow-up flag and read state."""
        return await mail.flag(ctx, _message(message_id), flagged, read)


def _message(item_id: str) -> str:
    kind, parts = split_id(item_id)
    if kind != "mail":
        raise VendorBadRequestError(f"msft: {item_id!r} is not a message id", service="msft")
    return parts[0]


_SURFACES = (
    ("/mail", "Mail"),
    ("/calendar", "Calendar"),
    ("/contacts", "Contacts"),
    ("/drive", "OneDrive"),
    ("/sites", "SharePoint sites"),
)


def _surface(path: str, title: str) -> Item:
    return Item(id=f"surface:{path.strip('/')}", title=title, kind="folder", path=path)
