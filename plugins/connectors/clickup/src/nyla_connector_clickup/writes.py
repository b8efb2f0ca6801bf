"""ClickUp writes: create a task in a list (``POST /list/{list_id}/task``), update one
(``PUT /task/{task_id}``), comment on it (``POST /task/{task_id}/comment``). Statuses are
set by name (ClickUp answers 400 for one the list does not have)."""

from __future__ import annotations

from typing import Any

from nyla.sdk.connectors import ConnectorContext, TaskChange, VendorBadRequestError
from nyla_connector_clickup.wire import PRIORITIES, day_start_ms


async def create(ctx: ConnectorContext, adapter: Any, list_id: str, change: TaskChange) -> dict:
    """A new task in ``list_id``; returns its payload."""
    if not (change.title or "").strip():
        raise VendorBadRequestError("clickup: a new task needs a title", service="clickup")
    body = await _fields(ctx, adapter, change, team=None)
    if "assignees" in body:
        body["assignees"] = body["assignees"]["add"]
    response = await ctx.http.request("POST", f"/list/{list_id}/task", json=body)
    task = response.json()
    if change.comment:
        await comment(ctx, str(task["id"]), change.comment)
    return task


async def update(ctx: ConnectorContext, adapter: Any, task: dict, change: TaskChange) -> dict:
    """Change a task's fields, then add the comment; returns the task as it is now."""
    body = await _fields(ctx, adapter, change, team=str(task.get("team_id") or ""))
    task_id = str(task["id"])
    if body:
        task = (await ctx.http.request("PUT", f"/task/{task_id}", json=body)).json()
    if change.comment:
        await comment(ctx, task_id, change.comment)
        task = await ctx.http.get_json(f"/task/{task_id}")
    return task


async def comment(ctx: ConnectorContext, task_id: str, text: str) -> None:
    """Add a comment (nobody notified)."""
    await ctx.http.request(
        "POST", f"/task/{task_id}/comment", json={"comment_text": text, "notify_all": False}
    )


async def _fields(
    ctx: ConnectorContext, adapter: Any, change: TaskChange, team: str | None
) -> dict[str, Any]:
    body: dict[str, Any] = {}
    if change.title is not None:
        body["name"] = change.title
    if change.description is not None:
        body["description"] = change.description
    if change.status is not None:
        body["status"] = change.status.strip().lower()
    if change.due is not None:
        body["due_date"] = day_start_ms(change.due, await adapter.zone(ctx))
        body["due_date_time"] = False
    if change.priority is not None:
        wanted = change.priority.strip().lower()
        if wanted not in PRIORITIES:
            raise VendorBadRequestError(
                f"clickup: priority {change.priority!r}; possible: {', '.join(PRIORITIES)}",
                service="clickup",
            )
        body["priority"] = PRIORITIES[wanted]
    if change.assignee is not None:
        body["assignees"] = {
            "add": [await _user_id(ctx, adapter, change.assignee, team)],
            "rem": [],
        }
    return body


async def _user_id(ctx: ConnectorContext, adapter: Any, who: str, team: str | None) -> int:
    """A user id for ``me``, an e-mail address or a user name (workspace members)."""
    wanted = who.strip().lower()
    if wanted == "me":
        return int((await adapter.me(ctx))["id"])
    for row in (await ctx.http.get_json("/team")).get("teams") or []:
        if team and str(row["id"]) != team:
            continue
        for member in row.get("members") or []:
            user = member.get("user") or {}
            if wanted in (
                str(user.get("email", "")).lower(),
                str(user.get("username", "")).lower(),
            ):
                return int(user["id"])
    raise VendorBadRequestError(f"clickup: no workspace member matches {who!r}", service="clickup")
