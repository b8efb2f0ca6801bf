"""The three ClickUp tools: ``searchClickUpTasks``, ``readClickUpTask``,
``writeClickUpTask``. They speak the task protocol (``nyla.sdk.connectors.TaskConnector``)
of the user's ``clickup`` connection, reached through the kernel."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import date
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from nyla import Tool, ToolContext, ToolResult
from nyla.sdk.connectors import (
    ConnectorError,
    Item,
    NoConnection,
    TaskChange,
    TaskQuery,
    connector_failure,
    inline_line,
    pick_connection,
    task_capabilities,
)

SERVICE = "clickup"
WRITE_TOOL = "writeClickUpTask"
HINT = "(task lines are complete: read a task only for its description and comments)"


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    connection_id: str | None = Field(
        default=None,
        alias="connectionId",
        description="The ClickUp connection; needed only when the user has several.",
    )


class SearchArgs(_Args):
    """Arguments of ``searchClickUpTasks``."""

    query: str = Field(default="", description="Words in the task name or description.")
    scope: str = Field(
        default="",
        description="A path from a result or listing: /<workspace>[/<space>[/<folder>[/<list>]]] "
        "(`-` for the folder of a folderless list), or a list id; empty: every workspace.",
    )
    mine: bool = Field(default=False, description="Only tasks assigned to the user.")
    open_only: bool = Field(default=False, alias="openOnly", description="Leave out closed tasks.")
    due_from: date | None = Field(
        default=None, alias="dueFrom", description="Due on/after (YYYY-MM-DD)."
    )
    due_to: date | None = Field(
        default=None, alias="dueTo", description="Due on/before (YYYY-MM-DD)."
    )
    cursor: str | None = Field(default=None, description="From a previous result: next page.")


class ReadArgs(_Args):
    """Arguments of ``readClickUpTask``."""

    task: str = Field(min_length=1, description="Task id from a search (e.g. 86c0abc1).")


class WriteArgs(_Args):
    """Arguments of ``writeClickUpTask``: a ``task`` updates it, a ``list`` creates one."""

    task: str | None = Field(default=None, description="Task id to update.")
    list: str | None = Field(default=None, description="List id or list path to create in.")
    title: str | None = None
    description: str | None = None
    status: str | None = Field(default=None, description="Target status name of the list.")
    due: date | None = Field(default=None, description="Due date (YYYY-MM-DD).")
    assignee: str | None = Field(default=None, description="`me`, an e-mail address or a name.")
    priority: str | None = Field(default=None, description="urgent, high, normal or low.")
    comment: str | None = Field(default=None, description="A comment to add.")


Work = Callable[[Any], Awaitable[ToolResult]]


async def with_clickup(ctx: ToolContext, connection_id: str | None, work: Work) -> ToolResult:
    """Run ``work(session)`` on the user's ClickUp connection."""
    try:
        conn = await pick_connection(
            ctx,
            connection_id,
            lambda a: a.service == SERVICE and "search_tasks" in task_capabilities(a),
            "ClickUp",
        )
        async with ctx.kernel.connections.open(conn.id, user_id=ctx.run.user_id) as session:
            return await work(session)
    except NoConnection as exc:
        return exc.result
    except ConnectorError as exc:
        return connector_failure(exc)


def task_line(item: Item) -> str:
    """One inline line: title (with the custom id when the workspace uses them), status,
    assignee, due date, and the id."""
    custom = item.extra.get("vendor", {}).get("customId") or ""
    return inline_line(item.model_copy(update={"title": f"{custom} {item.title}".strip()}))


async def search_tasks(args: SearchArgs, ctx: ToolContext) -> ToolResult:
    """Tasks by words and the structured filters, due date first."""
    if args.due_from and args.due_to and args.due_from > args.due_to:
        return ToolResult.fail("dueFrom is after dueTo", "INVALID_VALUE", field="dueFrom")

    async def work(s: Any) -> ToolResult:
        bare_list = bool(args.scope) and "/" not in args.scope
        if args.mine or args.open_only or args.due_from or args.due_to or bare_list:
            query = TaskQuery(
                text=args.query,
                container=args.scope,
                mine=args.mine,
                open_only=args.open_only,
                due_from=args.due_from,
                due_to=args.due_to,
            )
            page = await s.adapter.search_tasks(s, query, args.cursor)
        else:
            page = await s.adapter.search(s, args.query, args.scope, args.cursor)
        if not page.items:
            more = f"; more pages: pass cursor={page.cursor!r}" if page.cursor else ""
            return ToolResult.ok(f"no tasks match{more}", data={"items": [], "cursor": page.cursor})
        lines = [task_line(i) for i in page.items] + [HINT]
        if page.cursor:
            lines.append(f"more results: pass cursor={page.cursor!r}")
        data = {"items": [i.to_wire() for i in page.items], "cursor": page.cursor}
        return ToolResult.ok("\n".join(lines), data=data)

    return await with_clickup(ctx, args.connection_id, work)


async def read_task(args: ReadArgs, ctx: ToolContext) -> ToolResult:
    """One task with description, comments and attachments."""

    async def work(s: Any) -> ToolResult:
        detail = await s.adapter.read_task(s, args.task)
        lines = [task_line(detail.item)]
        if detail.item.url:
            lines.append(f"link: {detail.item.url}")
        lines += ["", detail.description or "(no description)"]
        for c in detail.comments:
            when = c.created.isoformat(timespec="minutes") if c.created else "?"
            lines.append(f"- {c.author} ({when}): {c.text}")
        lines += [f"attachment: {inline_line(a)}" for a in detail.attachments]
        return ToolResult.ok("\n".join(lines), data=detail.to_wire())

    return await with_clickup(ctx, args.connection_id, work)


async def write_task(args: WriteArgs, ctx: ToolContext) -> ToolResult:
    """Create (``list``) or update (``task``) a task."""
    if bool(args.task) == bool(args.list):
        return ToolResult.fail(
            "pass either task (to update) or list (to create)",
            "MISSING_FIELD",
            field="task",
            suggestion="take the task id from searchClickUpTasks",
        )
    change = TaskChange(**args.model_dump(include=set(TaskChange.model_fields), exclude_none=True))
    if args.task and not change.model_dump(exclude_none=True):
        return ToolResult.fail("nothing to change", "MISSING_FIELD", field="status")

    async def work(s: Any) -> ToolResult:
        if args.list:
            item = await s.adapter.create_task(s, args.list, change)
            verb = "created"
        else:
            item = await s.adapter.update_task(s, args.task, change)
            verb = "updated"
        return ToolResult.ok(f"{verb}: {task_line(item)}", data={"item": item.to_wire()})

    return await with_clickup(ctx, args.connection_id, work)


def clickup_tools() -> list[Tool]:
    """The three tools."""
    return [
        Tool.from_model(
            "searchClickUpTasks",
            "Search ClickUp tasks by words and/or filters (mine, openOnly, dueFrom/dueTo), "
            "scoped to a workspace, space, folder or list. One line per task with status, "
            "assignee and due date: enough to answer most questions without reading tasks.",
            SearchArgs,
            search_tasks,
            read_only=True,
            timeout_s=90,
        ),
        Tool.from_model(
            "readClickUpTask",
            "Read one ClickUp task: description, comments and attachments.",
            ReadArgs,
            read_task,
            read_only=True,
            timeout_s=60,
        ),
        Tool.from_model(
            WRITE_TOOL,
            "Create a ClickUp task (list + title) or update one (task + what changes: title, "
            "description, status, due, assignee, priority, a comment).",
            WriteArgs,
            write_task,
            read_only=False,
            timeout_s=60,
        ),
    ]
