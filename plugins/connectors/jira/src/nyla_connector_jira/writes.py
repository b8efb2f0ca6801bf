"""Jira writes: create an issue, edit its fields, move it by a transition, comment on it.
Each is one documented REST v3 call (``POST /issue``, ``PUT /issue/{key}``,
``POST /issue/{key}/transitions``, ``POST /issue/{key}/comment``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from nyla.sdk.connectors import ConnectorContext, TaskChange, VendorBadRequestError
from nyla_connector_jira.issues import adf

Api = Callable[[ConnectorContext, str], str]


async def create(ctx: ConnectorContext, api: Api, project: str, change: TaskChange) -> str:
    """A new issue of type Task in ``project``; returns its key."""
    if not project:
        raise VendorBadRequestError("jira: name the project to create the issue in", service="jira")
    if not (change.title or "").strip():
        raise VendorBadRequestError("jira: a new issue needs a title", service="jira")
    fields = await _fields(ctx, api, change)
    fields.update({"project": {"key": project}, "issuetype": {"name": "Task"}})
    response = await ctx.http.request(
        "POST", api(ctx, "/rest/api/3/issue"), json={"fields": fields}
    )
    key = str(response.json()["key"])
    await _transition_and_comment(ctx, api, key, change)
    return key


async def update(ctx: ConnectorContext, api: Api, key: str, change: TaskChange) -> None:
    """Edit fields, then transition to ``change.status``, then add ``change.comment``."""
    fields = await _fields(ctx, api, change)
    if fields:
        await ctx.http.request("PUT", api(ctx, f"/rest/api/3/issue/{key}"), json={"fields": fields})
    await _transition_and_comment(ctx, api, key, change)


async def _fields(ctx: ConnectorContext, api: Api, change: TaskChange) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    if change.title is not None:
        fields["summary"] = change.title
    if change.description is not None:
        fields["description"] = adf(change.description)
    if change.due is not None:
        fields["duedate"] = change.due.isoformat()
    if change.priority is not None:
        fields["priority"] = {"name": change.priority}
    if change.assignee is not None:
        fields["assignee"] = {"accountId": await _account(ctx, api, change.assignee)}
    return fields


async def _account(ctx: ConnectorContext, api: Api, who: str) -> str:
    """An account id for ``me``, an e-mail address or a name (user search)."""
    if who.strip().lower() == "me":
        return str((await ctx.http.get_json(api(ctx, "/rest/api/3/myself")))["accountId"])
    users = await ctx.http.get_json(api(ctx, "/rest/api/3/user/search"), params={"query": who})
    if not users:
        raise VendorBadRequestError(f"jira: no user matches {who!r}", service="jira")
    return str(users[0]["accountId"])


async def _transition_and_comment(
    ctx: ConnectorContext, api: Api, key: str, change: TaskChange
) -> None:
    if change.status:
        url = api(ctx, f"/rest/api/3/issue/{key}/transitions")
        offered = (await ctx.http.get_json(url)).get("transitions") or []
        wanted = change.status.strip().lower()
        match = next(
            (
                t
                for t in offered
                if wanted in (str(t.get("name", "")).lower(), str(t["to"]["name"]).lower())
            ),
            None,
        )
        if match is None:
            names = ", ".join(sorted({t["to"]["name"] for t in offered})) or "none"
            raise VendorBadRequestError(
                f"jira: {key} cannot move to {change.status!r}; possible: {names}", service="jira"
            )
        await ctx.http.request("POST", url, json={"transition": {"id": match["id"]}})
    if change.comment:
        await ctx.http.request(
            "POST",
            api(ctx, f"/rest/api/3/issue/{key}/comment"),
            json={"body": adf(change.comment)},
        )
