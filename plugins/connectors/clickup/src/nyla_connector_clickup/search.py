"""Reading tasks from ClickUp's workspace task endpoint (``GET /team/{team_id}/task``, the
seeds' ``searchTeamTasks``): the query parameters, page by page (``page`` from 0 until
``last_page``), and the filters ClickUp has no parameter for (words, finished statuses)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from nyla.sdk.connectors import (
    ConnectorContext,
    Item,
    ItemPage,
    TaskQuery,
    VendorBadRequestError,
)
from nyla_connector_clickup import hierarchy
from nyla_connector_clickup.wire import (
    NO_FOLDER,
    ListRef,
    Scope,
    day_start_ms,
    is_open,
    matches,
    parse_scope,
    task_item,
)

#: ClickUp's page size on its task endpoints
PAGE_SIZE = 100
#: API pages one search call reads at most while looking for matches
PAGES_PER_CALL = 5

Keep = Callable[[dict[str, Any]], bool]


def is_last(body: dict[str, Any], tasks: list[Any]) -> bool:
    """Whether a task page is the last (``last_page``; a short page when it is absent)."""
    flag = body.get("last_page")
    return bool(flag) if flag is not None else len(tasks) < PAGE_SIZE


async def team_page(
    ctx: ConnectorContext, team: str, params: dict[str, Any], page: int
) -> tuple[list[dict[str, Any]], bool]:
    """One page of a workspace's tasks and whether it is the last."""
    body = await ctx.http.get_json(f"/team/{team}/task", params={**params, "page": page})
    tasks = body.get("tasks") or []
    return tasks, is_last(body, tasks)


def scope_params(scope: Scope) -> dict[str, Any]:
    """The task endpoint's filter for a scope below the workspace."""
    if scope.list:
        return {"list_ids[]": [scope.list]}
    if scope.folder and scope.folder != NO_FOLDER:
        return {"project_ids[]": [scope.folder]}
    if scope.space:
        return {"space_ids[]": [scope.space]}
    return {}


async def team_search(
    ctx: ConnectorContext,
    scope: Scope,
    params: dict[str, Any],
    keep: Keep,
    zone: str,
    cursor: str | None,
) -> ItemPage:
    """Tasks of the scope's workspaces that ``keep`` accepts, one page; the cursor is
    ``<workspace index>.<page>``."""
    teams = await hierarchy.teams(ctx, scope.team, hierarchy.limits_of(ctx)["max_workspaces"])
    index, page = _cursor(cursor)
    query = {"include_closed": "true", "subtasks": "true", **params, **scope_params(scope)}
    items: list[Item] = []
    for _ in range(PAGES_PER_CALL):
        if index >= len(teams):
            return ItemPage(items=items)
        tasks, last = await team_page(ctx, str(teams[index]["id"]), query, page)
        items += [task_item(t, zone) for t in tasks if keep(t)]
        index, page = (index + 1, 0) if last else (index, page + 1)
        if items:
            break
    return ItemPage(items=items, cursor=f"{index}.{page}" if index < len(teams) else None)


def _cursor(cursor: str | None) -> tuple[int, int]:
    if not cursor:
        return 0, 0
    index, _, page = cursor.partition(".")
    if not (index.isdigit() and page.isdigit()):
        raise VendorBadRequestError(f"clickup: bad cursor {cursor!r}", service="clickup")
    return int(index), int(page)


def words_match(task: dict[str, Any], words: list[str]) -> bool:
    """Whether the task holds every word."""
    return matches(task, words)


def sync_params(list_ids: list[str]) -> dict[str, Any]:
    """The walker's filter: the chosen lists, closed tasks and subtasks included (the order
    is the keyset's: :mod:`nyla_connector_clickup.keyset`)."""
    return {"list_ids[]": list_ids, "include_closed": "true", "subtasks": "true"}


def by_team(refs: list[ListRef]) -> list[tuple[str, list[str]]]:
    """List ids grouped by workspace, in walking order."""
    groups: dict[str, list[str]] = {}
    for ref in refs:
        groups.setdefault(ref.team, []).append(ref.id)
    return list(groups.items())


def task_params(query: TaskQuery, zone: str, me: dict[str, Any] | None) -> dict[str, Any]:
    """The task endpoint's parameters of a structured search (due days in ``zone``)."""
    params: dict[str, Any] = {
        "include_closed": "false" if query.open_only else "true",
        "order_by": "due_date",
        "reverse": "true",
    }
    if me is not None:
        params["assignees[]"] = [str(me.get("id"))]
    if query.due_from:
        params["due_date_gt"] = day_start_ms(query.due_from, zone) - 1
    if query.due_to:
        params["due_date_lt"] = day_start_ms(query.due_to + timedelta(days=1), zone)
    return params


def task_filter(query: TaskQuery) -> Keep:
    """What the endpoint cannot filter: words, and statuses of type ``done``."""
    words = query.text.lower().split()
    return lambda t: matches(t, words) and (is_open(t) or not query.open_only)


def container_scope(container: str) -> Scope:
    """A task search's container: a path, or a bare list id."""
    container = container.strip()
    if not container:
        return Scope()
    if "/" in container:
        return parse_scope(container)
    return Scope(list=list_of(container))


def list_of(container: str) -> str:
    """The list id a container names (a list path, ``list:<id>`` or the id)."""
    value = container.strip().removeprefix("list:")
    if "/" in value:
        value = parse_scope(value).list
    if not (value.isascii() and value.isdigit()):
        raise VendorBadRequestError(
            f"clickup: {container!r} names no list (pass a list id or a list path)",
            service="clickup",
        )
    return value
