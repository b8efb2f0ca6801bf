"""Walking ClickUp's hierarchy: workspaces (``/team``) → spaces → folders → lists, and the
folderless lists of a space. The walk keeps the seeds' limits: at most ``max_workspaces``
workspaces and ``max_lists_per_workspace`` lists in each (ids in ascending order, so the
same lists are chosen every run)."""

from __future__ import annotations

from typing import Any

from nyla.sdk.connectors import ConnectorContext, Item
from nyla_connector_clickup.wire import NO_FOLDER, ListRef, Scope, folder_item

#: the seeds' ClickUp limits (nyla's central defaults); a data source's ``ragLimits``
#: override them through the walker runner
DEFAULT_LIMITS = {"max_tasks": 2000, "max_workspaces": 5, "max_lists_per_workspace": 50}
ARCHIVED = {"archived": "false"}


def limits_of(ctx: ConnectorContext) -> dict[str, int]:
    """The limits of this session: defaults, the connection's ``ragLimits``, the sync's."""
    stored = ctx.connection.settings.get("ragLimits") or {}
    camel = {
        "maxTasks": "max_tasks",
        "maxWorkspaces": "max_workspaces",
        "maxListsPerWorkspace": "max_lists_per_workspace",
    }
    out = dict(DEFAULT_LIMITS)
    out.update({camel.get(k, k): v for k, v in stored.items() if isinstance(v, int) and v > 0})
    out.update({k: v for k, v in (getattr(ctx, "limits", None) or {}).items() if k in out})
    return out


def _by_id(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda r: (len(str(r["id"])), str(r["id"])))


async def teams(ctx: ConnectorContext, only: str = "", cap: int | None = None) -> list[dict]:
    """The workspaces the token may read (``only``: that one), at most ``cap``."""
    rows = _by_id((await ctx.http.get_json("/team")).get("teams") or [])
    rows = [t for t in rows if not only or str(t["id"]) == only]
    return rows[:cap] if cap else rows


async def spaces(ctx: ConnectorContext, team: str) -> list[dict[str, Any]]:
    """The spaces of a workspace (not archived)."""
    body = await ctx.http.get_json(f"/team/{team}/space", params=ARCHIVED)
    return _by_id(body.get("spaces") or [])


async def folders(ctx: ConnectorContext, space: str) -> list[dict[str, Any]]:
    """The folders of a space (not archived)."""
    body = await ctx.http.get_json(f"/space/{space}/folder", params=ARCHIVED)
    return _by_id(body.get("folders") or [])


async def lists(ctx: ConnectorContext, space: str, folder: str) -> list[dict[str, Any]]:
    """The lists of a folder, or a space's folderless lists (``folder`` is ``-``)."""
    url = f"/space/{space}/list" if folder == NO_FOLDER else f"/folder/{folder}/list"
    return _by_id((await ctx.http.get_json(url, params=ARCHIVED)).get("lists") or [])


async def lists_in_scope(ctx: ConnectorContext, scope: Scope) -> list[ListRef]:
    """Every list below ``scope``, within ``max_workspaces`` and
    ``max_lists_per_workspace``."""
    limits = limits_of(ctx)
    found: list[ListRef] = []
    for team in await teams(ctx, scope.team, limits["max_workspaces"]):
        room = limits["max_lists_per_workspace"]
        found += (await _team_lists(ctx, str(team["id"]), scope, room))[:room]
    return found


async def _team_lists(ctx: ConnectorContext, team: str, scope: Scope, room: int) -> list[ListRef]:
    out: list[ListRef] = []
    for space in await spaces(ctx, team):
        sid = str(space["id"])
        if scope.space and sid != scope.space:
            continue
        containers = [NO_FOLDER] + [str(f["id"]) for f in await folders(ctx, sid)]
        for folder in containers:
            if scope.folder and folder != scope.folder:
                continue
            for row in await lists(ctx, sid, folder):
                if scope.list and str(row["id"]) != scope.list:
                    continue
                out.append(ListRef(team, sid, folder, str(row["id"]), str(row.get("name"))))
                if len(out) >= room:
                    return out
    return out


async def containers(ctx: ConnectorContext, scope: Scope) -> list[Item]:
    """What ``browse`` shows above the lists: workspaces, spaces, or a space's folders and
    folderless lists, or a folder's lists."""
    if not scope.team:
        return [folder_item("team", t, f"/{t['id']}") for t in await teams(ctx)]
    base = f"/{scope.team}"
    if not scope.space:
        return [folder_item("space", s, f"{base}/{s['id']}") for s in await spaces(ctx, scope.team)]
    base += f"/{scope.space}"
    if not scope.folder:
        items = [
            folder_item("folder", f, f"{base}/{f['id']}") for f in await folders(ctx, scope.space)
        ]
        loose = await lists(ctx, scope.space, NO_FOLDER)
        return items + [folder_item("list", r, f"{base}/{NO_FOLDER}/{r['id']}") for r in loose]
    base += f"/{scope.folder}"
    rows = await lists(ctx, scope.space, scope.folder)
    return [folder_item("list", r, f"{base}/{r['id']}") for r in rows]
