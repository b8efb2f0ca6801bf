"""The ClickUp adapter (API v2, plain httpx through the kernel's vendor HTTP layer):
workspaces → spaces → folders → lists → tasks, search on the workspace's task endpoint
(``GET /team/{team_id}/task``, the seeds' ``searchTeamTasks``), one task with its comments
and attachments, writes, and the walker's sync on ``date_updated_gt`` with an overlap."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar

from pydantic import Field

from nyla.sdk.connectors import (
    ConnectorContext,
    ConnectorSettings,
    Download,
    HttpPolicy,
    Item,
    ItemPage,
    ItemTooLargeError,
    SinceCheckpoint,
    SyncPage,
    TaskChange,
    TaskConnector,
    TaskDetail,
    TaskQuery,
    VendorBadRequestError,
    VendorNotFoundError,
    confine_path,
    setting,
)
from nyla_connector_clickup import hierarchy, search, writes
from nyla_connector_clickup.keyset import Keyset, keyset_page
from nyla_connector_clickup.wire import (
    attachment_item,
    is_id,
    newest,
    overlap_ms,
    parse_scope,
    task_item,
    to_comment,
)

API = "https://api.clickup.com/api/v2"
#: tasks changed this long before the cursor are read again (clock skew, late writes)
OVERLAP = timedelta(minutes=5)
#: ClickUp answers 25 comments per request; a task's newest 100 are read
COMMENT_PAGES = 4

QUERY_SYNTAX = (
    "Plain words, matched in task names and descriptions over the workspace's tasks (ClickUp's "
    "team task endpoint; API v2 has no text search). The scope is a path: `/<workspace id>`, "
    "`/<workspace>/<space>`, `/<workspace>/<space>/<folder>` or `.../<folder or ->/<list>`; "
    "empty: every workspace."
)


class ClickUpCheckpoint(SinceCheckpoint):
    """Where a task sync resumes: the "updated since" state, and while a run pages the
    workspace (``team``, an index into the scope's workspaces) and the keyset position in
    it."""

    team: int = 0
    keyset: Keyset = Field(default_factory=Keyset)


class ClickUpSettings(ConnectorSettings):
    """A ClickUp connection: the time zone of its due dates; an operator may set the API
    root."""

    time_zone: str | None = setting(
        None,
        kind="text",
        label="Time zone",
        help="the time zone of due dates, e.g. Europe/Zurich (default: the ClickUp profile's)",
    )
    base_url: str | None = setting(
        None, kind="url", label="API root", help=f"default {API}", server_only=True
    )


class ClickUpConnector(TaskConnector):
    """ClickUp with a personal token (``pk_...``) or an OAuth access token (ClickUp's OAuth
    tokens do not expire and come without a refresh token)."""

    service: ClassVar[str] = "clickup"
    label: ClassVar[str] = "ClickUp"
    query_syntax: ClassVar[str] = QUERY_SYNTAX
    base_url: ClassVar[str | None] = API
    # 100 requests per minute per token (Free Forever, Unlimited, Business); a 429 carries
    # X-RateLimit-Reset (Unix seconds) and no Retry-After
    http_policy: ClassVar[HttpPolicy] = HttpPolicy(
        max_concurrency=4,
        rate_requests=100,
        rate_window_s=60,
        rate_per_account=True,
        timeout_s=30,
        max_total_wait_s=180,
        remaining_header="X-RateLimit-Remaining",
        reset_header="X-RateLimit-Reset",
        auth_scheme="",
    )
    auth_modes: ClassVar[tuple[str, ...]] = ("token",)
    settings: ClassVar[type[ConnectorSettings]] = ClickUpSettings

    def __init__(self) -> None:
        self._zones: dict[str, str] = {}

    # ---- the connector protocol ---------------------------------------------------------

    async def search(
        self, ctx: ConnectorContext, query: str, scope: str = "", cursor: str | None = None
    ) -> ItemPage:
        """Tasks whose name or description holds every word, in the scope's workspaces."""
        words = query.lower().split()
        return await search.team_search(
            ctx,
            parse_scope(scope),
            {},
            lambda t: search.words_match(t, words),
            await self.zone(ctx),
            cursor,
        )

    async def browse(
        self, ctx: ConnectorContext, path: str = "", cursor: str | None = None
    ) -> ItemPage:
        """Workspaces, spaces, folders and lists down to a list; a list's tasks, paged."""
        scope = parse_scope(path)
        if not scope.list:
            return ItemPage(items=await hierarchy.containers(ctx, scope))
        page = int(cursor or 0)
        body = await ctx.http.get_json(
            f"/list/{scope.list}/task",
            params={"page": page, "include_closed": "true", "subtasks": "true"},
        )
        tasks = body.get("tasks") or []
        zone = await self.zone(ctx)
        last = search.is_last(body, tasks)
        return ItemPage(
            items=[task_item(t, zone) for t in tasks], cursor=None if last else str(page + 1)
        )

    async def item(self, ctx: ConnectorContext, item_id: str) -> Item:
        """One task's metadata."""
        return task_item(await self._task(ctx, item_id), await self.zone(ctx))

    async def download(
        self, ctx: ConnectorContext, item_id: str, max_bytes: int | None = None
    ) -> Download:
        """An attachment's bytes (``attachment:<task>:<id>``), or a task as its JSON (the
        seeds: download the task JSON only for details)."""
        if not item_id.startswith("attachment:"):
            raw = await self._task(ctx, item_id)
            data = json.dumps(raw, ensure_ascii=False, indent=1).encode("utf-8")
            if max_bytes is not None and len(data) > max_bytes:
                raise ItemTooLargeError(
                    f"clickup: task JSON of {len(data)} bytes", size=len(data), limit=max_bytes
                )
            item = task_item(raw, await self.zone(ctx))
            return Download(item=item, content=data, mime="application/json")
        _, task_id, att_id = [*item_id.split(":", 2), "", ""][:3]
        if not is_id(att_id):
            raise VendorBadRequestError(
                f"clickup: {item_id!r} is not an attachment id (attachment:<task>:<id>)",
                service="clickup",
            )
        task = await self._task(ctx, task_id)
        found = next((a for a in task.get("attachments") or [] if str(a.get("id")) == att_id), None)
        if found is None or not found.get("url"):
            raise VendorNotFoundError(
                f"clickup: no attachment {att_id} on task {task_id}", service="clickup"
            )
        content = await ctx.http.download(str(found["url"]), max_bytes=max_bytes)
        item = attachment_item(found, task)
        return Download(item=item, content=content, mime=item.mime or "application/octet-stream")

    async def sync(
        self, ctx: ConnectorContext, scope: str, checkpoint: dict[str, Any] | None
    ) -> AsyncIterator[SyncPage]:
        """Tasks of the scope's lists (within the workspace and list limits) changed since the
        checkpoint's ``since`` less :data:`OVERLAP`; from nothing, every task (a full
        listing). Read in creation order by keyset (:mod:`nyla_connector_clickup.keyset`), so
        an edit during the listing cannot hide a task. Deletions are found by
        :meth:`list_ids`."""
        cp = ClickUpCheckpoint.load(checkpoint)
        full, bound, seen = cp.listing_all, cp.start, cp.newest
        groups = search.by_team(await hierarchy.lists_in_scope(ctx, parse_scope(scope)))
        zone = await self.zone(ctx)
        start, key = cp.team, cp.keyset
        if not groups:
            mark = seen or bound or datetime.now(UTC)
            yield SyncPage(
                checkpoint=ClickUpCheckpoint(since=mark).dump(), done=True, full_listing=full
            )
            return
        for index in range(min(start, len(groups) - 1), len(groups)):
            team, list_ids = groups[index]
            params = search.sync_params(list_ids)
            if not full and bound:
                params["date_updated_gt"] = overlap_ms(bound, OVERLAP)
            last = False
            while not last:
                tasks, last, key = await keyset_page(ctx, team, params, key)
                items = [task_item(t, zone, with_text=True) for t in tasks]
                seen = newest(items, seen)
                done = last and index == len(groups) - 1
                state = (
                    ClickUpCheckpoint(since=seen or bound or datetime.now(UTC))
                    if done
                    else ClickUpCheckpoint(
                        full=full,
                        bound=bound,
                        seen=seen,
                        team=index + 1 if last else index,
                        keyset=Keyset() if last else key,
                    )
                )
                yield SyncPage(items=items, checkpoint=state.dump(), done=done, full_listing=full)
            key = Keyset()

    async def list_ids(self, ctx: ConnectorContext, scope: str) -> AsyncIterator[list[str]]:
        """Every task id of the scope's lists (closed tasks and subtasks included), in
        creation order by keyset; raises on any failure."""
        groups = search.by_team(await hierarchy.lists_in_scope(ctx, parse_scope(scope)))
        for team, list_ids in groups:
            key, last = Keyset(), False
            while not last:
                tasks, last, key = await keyset_page(ctx, team, search.sync_params(list_ids), key)
                yield [str(t["id"]) for t in tasks]

    async def check(self, ctx: ConnectorContext) -> str:
        """``/user``: who the token belongs to."""
        me = (await ctx.http.get_json("/user")).get("user") or {}
        return f"signed in as {me.get('username')} <{me.get('email')}>"

    # ---- tasks ----------------------------------------------------------------------------

    async def search_tasks(
        self, ctx: ConnectorContext, query: TaskQuery, cursor: str | None = None
    ) -> ItemPage:
        """A structured search on the workspaces' task endpoint, due date first."""
        zone = await self.zone(ctx)
        me = await self.me(ctx) if query.mine else None
        params = search.task_params(query, zone, me)
        keep = search.task_filter(query)
        scope = search.container_scope(query.container)
        page = await search.team_search(ctx, scope, params, keep, zone, cursor)
        page.items.sort(key=lambda i: (not i.extra.get("due"), i.extra.get("due") or ""))
        return page

    async def read_task(self, ctx: ConnectorContext, task_id: str) -> TaskDetail:
        """One task with its description, comments (oldest first) and attachments."""
        raw = await self._task(ctx, task_id)
        comments: list[dict[str, Any]] = []
        params: dict[str, Any] = {}
        for _ in range(COMMENT_PAGES):  # newest 25 first; older ones by start/start_id
            got = (await ctx.http.get_json(f"/task/{raw['id']}/comment", params=params)).get(
                "comments"
            ) or []
            comments += got
            if len(got) < 25:
                break
            params = {"start": got[-1]["date"], "start_id": got[-1]["id"]}
        comments.sort(key=lambda c: int(c.get("date") or 0))
        return TaskDetail(
            item=task_item(raw, await self.zone(ctx)),
            description=str(raw.get("text_content") or raw.get("description") or "").strip(),
            comments=[to_comment(c) for c in comments],
            attachments=[attachment_item(a, raw) for a in raw.get("attachments") or []],
        )

    async def create_task(self, ctx: ConnectorContext, container: str, change: TaskChange) -> Item:
        """A new task in the list ``container`` (its id or path)."""
        raw = await writes.create(ctx, self, search.list_of(container), change)
        return task_item(raw, await self.zone(ctx))

    async def update_task(self, ctx: ConnectorContext, task_id: str, change: TaskChange) -> Item:
        """Fields (name, description, status, due, priority, assignee), then a comment."""
        raw = await writes.update(ctx, self, await self._task(ctx, task_id), change)
        return task_item(raw, await self.zone(ctx))

    # ---- helpers --------------------------------------------------------------------------

    async def me(self, ctx: ConnectorContext) -> dict[str, Any]:
        """The token's user (``GET /user``)."""
        return (await ctx.http.get_json("/user")).get("user") or {}

    async def zone(self, ctx: ConnectorContext) -> str:
        """The user's time zone (due dates are days there): the ``timeZone`` setting, else
        the ClickUp profile's (read once per connection)."""
        setting = ctx.connection.settings.get("timeZone")
        if setting:
            return str(setting)
        key = ctx.connection.id
        if key not in self._zones:
            self._zones[key] = str((await self.me(ctx)).get("timezone") or "UTC")
        return self._zones[key]

    async def _task(self, ctx: ConnectorContext, task_id: str) -> dict[str, Any]:
        return await ctx.http.get_json(f"/task/{task_of(task_id)}")


def task_of(item_id: str) -> str:
    """The task id in an item id or path (``86c0abc1``, ``/9001/790/-/124/86c0abc1``)."""
    value = confine_path("", item_id.strip(), service="clickup").rsplit("/", 1)[-1]
    if not is_id(value):
        raise VendorBadRequestError(f"clickup: {item_id!r} is not a task id", service="clickup")
    return value
