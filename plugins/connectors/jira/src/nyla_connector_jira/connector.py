"""The Jira Cloud adapter (REST v3): search on ``/rest/api/3/search/jql`` with
``nextPageToken`` (the old ``/rest/api/3/search`` answers 410 Gone since Atlassian removed
it), projects to browse, one issue with its comments, writes, and the walker's sync on
``updated >= cursor - overlap``."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar

from nyla.sdk.connectors import (
    ConnectorContext,
    ConnectorSettings,
    Download,
    HttpPolicy,
    Item,
    ItemPage,
    ItemTooLargeError,
    OAuthConfig,
    SinceCheckpoint,
    SyncPage,
    TaskChange,
    TaskConnector,
    TaskDetail,
    TaskQuery,
    VendorBadRequestError,
    confine_path,
    setting,
    url_segment,
)
from nyla_connector_jira import issues, writes
from nyla_connector_jira.issues import ISSUE, LIST_FIELDS, READ_FIELDS, SYNC_FIELDS

AUTH = "https://auth.atlassian.com"
GATEWAY = "https://api.atlassian.com/ex/jira"
SEARCH = "/rest/api/3/search/jql"
#: issues changed this long before the cursor are read again (clock skew, minute-precise JQL)
OVERLAP = timedelta(minutes=5)
PAGE = 100
IDS_PAGE = 1000

QUERY_SYNTAX = (
    "Plain words search summary, description and comments (JQL `text ~`); `jql:<query>` runs "
    'JQL as written, e.g. `jql:assignee = currentUser() AND duedate <= "2026-12-31"`. The '
    "scope `/<PROJECT KEY>` keeps the search in one project; empty: every project."
)


class JiraCheckpoint(SinceCheckpoint):
    """Where an issue sync resumes: the "updated since" state, and while a run pages the
    ``/search/jql`` page token it is at."""

    token: str | None = None


class JiraSettings(ConnectorSettings):
    """Which Jira site a connection reaches: its cloud id (through Atlassian's gateway) or an
    operator's API root."""

    cloud_id: str | None = setting(
        None, kind="text", label="Cloud id", help="the site's cloud id (instead of an API root)"
    )
    site_url: str | None = setting(
        None,
        kind="url",
        label="Site URL",
        help="https://<your-site>.atlassian.net, for links to issues",
    )
    base_url: str | None = setting(
        None,
        kind="url",
        label="API root",
        help="https://api.atlassian.com/ex/jira/<cloudId> or a proxy",
        server_only=True,
    )


class JiraConnector(TaskConnector):
    """Jira Cloud over REST v3 with OAuth 2.0 (3LO); Atlassian rotates refresh tokens, so
    every refresh goes through the token manager's lock."""

    service: ClassVar[str] = "jira"
    label: ClassVar[str] = "Jira"
    query_syntax: ClassVar[str] = QUERY_SYNTAX
    base_url: ClassVar[str | None] = None
    oauth: ClassVar[OAuthConfig | None] = OAuthConfig(
        token_url=f"{AUTH}/oauth/token",
        authorize_url=f"{AUTH}/authorize",
        scopes=["read:jira-work", "write:jira-work", "read:jira-user", "offline_access"],
        client_id_setting="NYLA_JIRA_CLIENT_ID",
        client_secret_setting="NYLA_JIRA_CLIENT_SECRET",
    )
    # Jira Cloud limits by cost points per hour and answers 429 with Retry-After; a few
    # requests at a time and its X-RateLimit-Remaining keep a walker well below that.
    http_policy: ClassVar[HttpPolicy] = HttpPolicy(
        max_concurrency=4,
        rate_requests=600,
        rate_window_s=60,
        timeout_s=30,
        remaining_header="X-RateLimit-Remaining",
        # Jira Cloud may answer 429 with only X-RateLimit-Reset, an ISO 8601 time
        # (developer.atlassian.com/cloud/jira/platform/rate-limiting/)
        reset_header="X-RateLimit-Reset",
    )
    auth_modes: ClassVar[tuple[str, ...]] = ("token",)
    settings: ClassVar[type[ConnectorSettings]] = JiraSettings

    # ---- the connector protocol ---------------------------------------------------------

    async def search(
        self, ctx: ConnectorContext, query: str, scope: str = "", cursor: str | None = None
    ) -> ItemPage:
        """Issues by text or JQL (see ``query_syntax``), newest change first."""
        jql = issues.text_jql(query, issues.project_of(scope))
        return await self._issue_page(ctx, jql, cursor)

    async def browse(
        self, ctx: ConnectorContext, path: str = "", cursor: str | None = None
    ) -> ItemPage:
        """``/``: the projects the account sees; ``/<KEY>``: that project's issues."""
        project = issues.project_of(path)
        if project:
            jql = f"{issues.with_scope(project)} ORDER BY updated DESC"
            return await self._issue_page(ctx, jql, cursor)
        start = int(cursor or 0)
        body = await ctx.http.get_json(
            _api(ctx, "/rest/api/3/project/search"),
            params={"startAt": start, "maxResults": 50, "orderBy": "key"},
        )
        values = body.get("values") or []
        folders = [
            Item(
                id=f"project:{p['key']}",
                title=str(p.get("name") or p["key"]),
                kind="folder",
                path=f"/{p['key']}",
                extra={"project": p["key"]},
            )
            for p in values
        ]
        more = not body.get("isLast", True) and values
        return ItemPage(items=folders, cursor=str(start + len(values)) if more else None)

    async def item(self, ctx: ConnectorContext, item_id: str) -> Item:
        """One issue's metadata (by id or key)."""
        raw = await ctx.http.get_json(
            _api(ctx, f"/rest/api/3/issue/{_issue(item_id)}"),
            params={"fields": ",".join(LIST_FIELDS)},
        )
        return issues.issue_item(raw, _site(ctx))

    async def download(
        self, ctx: ConnectorContext, item_id: str, max_bytes: int | None = None
    ) -> Download:
        """An attachment's bytes (``attachment:<id>``: its metadata, then its content with
        ``redirect=false`` so Jira answers the bytes instead of a redirect to its media
        service), or an issue as its JSON."""
        if not item_id.startswith("attachment:"):
            key = _issue(item_id)
            raw = await ctx.http.get_json(
                _api(ctx, f"/rest/api/3/issue/{key}"), params={"fields": ",".join(READ_FIELDS)}
            )
            data = json.dumps(raw, ensure_ascii=False, indent=1).encode("utf-8")
            if max_bytes is not None and len(data) > max_bytes:
                raise ItemTooLargeError(
                    f"jira: issue JSON of {len(data)} bytes", size=len(data), limit=max_bytes
                )
            item = issues.issue_item(raw, _site(ctx))
            return Download(item=item, content=data, mime="application/json")
        att = item_id.removeprefix("attachment:")
        if not (att.isascii() and att.isdigit() and len(att) <= 20):
            raise VendorBadRequestError(
                f"jira: {item_id!r} is not an attachment id", service="jira"
            )
        meta = await ctx.http.get_json(_api(ctx, f"/rest/api/3/attachment/{att}"))
        content = await ctx.http.download(
            _api(ctx, f"/rest/api/3/attachment/content/{att}"),
            params={"redirect": "false"},
            max_bytes=max_bytes,
        )
        item = issues.attachment_item(meta)
        return Download(item=item, content=content, mime=item.mime or "application/octet-stream")

    async def sync(
        self, ctx: ConnectorContext, scope: str, checkpoint: dict[str, Any] | None
    ) -> AsyncIterator[SyncPage]:
        """Issues changed since the checkpoint's ``since`` (less :data:`OVERLAP`), oldest
        change first; from nothing, every issue of the scope (a full listing). Deletions are
        found by :meth:`list_ids` (Jira has no feed of deleted issues)."""
        cp = JiraCheckpoint.load(checkpoint)
        full, bound, seen, token = cp.listing_all, cp.start, cp.newest, cp.token
        zone = await self._zone(ctx)
        jql = issues.sync_jql(issues.project_of(scope), None if full else bound, zone, OVERLAP)
        while True:
            try:
                body = await self._search(ctx, jql, SYNC_FIELDS, token, PAGE)
            except VendorBadRequestError:
                if not token:
                    raise
                token = None  # the page token expired (Jira keeps them 7 days): ask again
                continue
            items = [issues.issue_item(r, _site(ctx), with_text=True) for r in body["issues"]]
            seen = issues.newest(items, seen)
            token = body.get("nextPageToken")
            done = bool(body.get("isLast", True)) or not token
            state = (
                JiraCheckpoint(since=seen or bound or datetime.now(UTC))
                if done
                else JiraCheckpoint(full=full, bound=bound, seen=seen, token=token)
            )
            yield SyncPage(items=items, checkpoint=state.dump(), done=done, full_listing=full)
            if done:
                return

    async def list_ids(self, ctx: ConnectorContext, scope: str) -> AsyncIterator[list[str]]:
        """Every issue id of the scope (``fields=id``, large pages); raises on any failure."""
        project = issues.project_of(scope)
        jql = issues.with_scope(project) if project else 'updated >= "1970-01-01 00:00"'
        token: str | None = None
        while True:
            body = await self._search(ctx, jql, ("id",), token, IDS_PAGE)
            yield [str(r["id"]) for r in body["issues"]]
            token = body.get("nextPageToken")
            if body.get("isLast", True) or not token:
                return

    async def check(self, ctx: ConnectorContext) -> str:
        """``/myself``: who the token belongs to."""
        me = await ctx.http.get_json(_api(ctx, "/rest/api/3/myself"))
        return f"signed in as {me.get('displayName')} <{me.get('emailAddress')}>"

    # ---- tasks ----------------------------------------------------------------------------

    async def search_tasks(
        self, ctx: ConnectorContext, query: TaskQuery, cursor: str | None = None
    ) -> ItemPage:
        """A structured search as bounded JQL, due date first."""
        return await self._issue_page(ctx, issues.task_jql(query, ""), cursor)

    async def read_task(self, ctx: ConnectorContext, task_id: str) -> TaskDetail:
        """One issue with description, comments (oldest first) and attachments."""
        key = _issue(task_id)
        raw = await ctx.http.get_json(
            _api(ctx, f"/rest/api/3/issue/{key}"), params={"fields": ",".join(READ_FIELDS)}
        )
        body = await ctx.http.get_json(
            _api(ctx, f"/rest/api/3/issue/{key}/comment"),
            params={"orderBy": "created", "maxResults": 100},
        )
        f = raw.get("fields") or {}
        issue_key = str(raw.get("key"))
        return TaskDetail(
            item=issues.issue_item(raw, _site(ctx)),
            description=issues.adf_text(f.get("description")).strip(),
            comments=[issues.to_comment(c) for c in body.get("comments") or []],
            attachments=[issues.attachment_item(a, issue_key) for a in f.get("attachment") or []],
        )

    async def create_task(self, ctx: ConnectorContext, container: str, change: TaskChange) -> Item:
        """A new issue (type Task) in the project ``container``."""
        created = await writes.create(ctx, _api, issues.project_of(container), change)
        return await self.item(ctx, created)

    async def update_task(self, ctx: ConnectorContext, task_id: str, change: TaskChange) -> Item:
        """Fields, a transition to ``status`` and a comment, in that order."""
        key = _issue(task_id)
        await writes.update(ctx, _api, key, change)
        return await self.item(ctx, key)

    # ---- helpers --------------------------------------------------------------------------

    async def _search(
        self, ctx: ConnectorContext, jql: str, fields: tuple[str, ...], token: str | None,
        size: int,
    ) -> dict[str, Any]:  # fmt: skip
        params: dict[str, Any] = {"jql": jql, "fields": ",".join(fields), "maxResults": size}
        if token:
            params["nextPageToken"] = token
        body = await ctx.http.get_json(_api(ctx, SEARCH), params=params)
        body.setdefault("issues", [])
        return body

    async def _issue_page(self, ctx: ConnectorContext, jql: str, cursor: str | None) -> ItemPage:
        body = await self._search(ctx, jql, LIST_FIELDS, cursor, 50)
        items = [issues.issue_item(r, _site(ctx)) for r in body["issues"]]
        token = body.get("nextPageToken")
        return ItemPage(items=items, cursor=None if body.get("isLast", True) else token)

    async def _zone(self, ctx: ConnectorContext) -> str:
        """The account's time zone: JQL reads date literals in it."""
        me = await ctx.http.get_json(_api(ctx, "/rest/api/3/myself"))
        return str(me.get("timeZone") or "UTC")


def _api(ctx: ConnectorContext, path: str) -> str:
    """``path`` below the connection's base URL, or the gateway URL of its ``cloudId``."""
    settings = ctx.connection.settings
    if settings.get("baseUrl") or not settings.get("cloudId"):
        return path
    return (
        f"{GATEWAY}/{url_segment(str(settings['cloudId']), what='cloudId', service='jira')}{path}"
    )


def _site(ctx: ConnectorContext) -> str | None:
    value = ctx.connection.settings.get("siteUrl")
    return str(value) if value else None


def _issue(item_id: str) -> str:
    """The issue id or key in an item id (``10002``, ``NYLA-3``, ``/NYLA/NYLA-3``); the
    path is checked by the SDK first, so ``NYLA-3/..`` is refused, not read as ``NYLA-3``."""
    value = confine_path("", item_id.strip(), service="jira").rsplit("/", 1)[-1]
    if not ISSUE.fullmatch(value):
        raise VendorBadRequestError(f"jira: {item_id!r} is not an issue id or key", service="jira")
    return value
