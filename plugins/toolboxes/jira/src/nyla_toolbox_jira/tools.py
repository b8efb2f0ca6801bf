"""The three Jira tools: ``searchJiraIssues``, ``readJiraIssue``, ``writeJiraIssue``. They
speak the task protocol (``nyla.sdk.connectors.TaskConnector``) of the user's ``jira``
connection, reached through the kernel."""

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

SERVICE = "jira"
WRITE_TOOL = "writeJiraIssue"
HINT = "(task lines are complete: read an issue only for its description and comments)"


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    connection_id: str | None = Field(
        default=None,
        alias="connectionId",
        description="The Jira connection; needed only when the user has several.",
    )


class SearchArgs(_Args):
    """Arguments of ``searchJiraIssues``."""

    query: str = Field(default="", description="Words to find, or `jql:<JQL>`.")
    project: str = Field(default="", description="Project key; empty: every project.")
    mine: bool = Field(default=False, description="Only issues assigned to the user.")
    open_only: bool = Field(default=False, alias="openOnly", description="Leave out done issues.")
    due_from: date | None = Field(
        default=None, alias="dueFrom", description="Due on/after (YYYY-MM-DD)."
    )
    due_to: date | None = Field(
        default=None, alias="dueTo", description="Due on/before (YYYY-MM-DD)."
    )
    cursor: str | None = Field(default=None, description="From a previous result: next page.")


class ReadArgs(_Args):
    """Arguments of ``readJiraIssue``."""

    issue: str = Field(min_length=1, description="Issue key (ED-12) or id from a search.")


class WriteArgs(_Args):
    """Arguments of ``writeJiraIssue``: an ``issue`` updates it, a ``project`` creates one."""

    issue: str | None = Field(default=None, description="Issue key or id to update.")
    project: str | None = Field(default=None, description="Project key to create an issue in.")
    title: str | None = None
    description: str | None = None
    status: str | None = Field(default=None, description="Target status name (by transition).")
    due: date | None = Field(default=None, description="Due date (YYYY-MM-DD).")
    assignee: str | None = Field(default=None, description="`me`, an e-mail address or a name.")
    priority: str | None = None
    comment: str | None = Field(default=None, description="A comment to add.")


Work = Callable[[Any], Awaitable[ToolResult]]


async def with_jira(ctx: ToolContext, connection_id: str | None, work: Work) -> ToolResult:
    """Run ``work(session)`` on the user's Jira connection."""
    try:
        conn = await pick_connection(
            ctx,
            connection_id,
            lambda a: a.service == SERVICE and "search_tasks" in task_capabilities(a),
            "Jira",
        )
        async with ctx.kernel.connections.open(conn.id, user_id=ctx.run.user_id) as session:
            return await work(session)
    except NoConnection as exc:
        return exc.result
    except ConnectorError as exc:
        return connector_failure(exc)


def issue_line(item: Item) -> str:
    """One inline line: key and title, status, assignee, due date, and the id."""
    key = item.extra.get("vendor", {}).get("key", "")
    return inline_line(item.model_copy(update={"title": f"{key} {item.title}".strip()}))


async def search_issues(args: SearchArgs, ctx: ToolContext) -> ToolResult:
    """Issues by words or JQL and the structured filters, due date first."""
    if args.due_from and args.due_to and args.due_from > args.due_to:
        return ToolResult.fail("dueFrom is after dueTo", "INVALID_VALUE", field="dueFrom")

    async def work(s: Any) -> ToolResult:
        structured = args.mine or args.open_only or args.due_from or args.due_to
        if args.query.lower().startswith("jql:") or not structured:
            page = await s.adapter.search(
                s, args.query, f"/{args.project}" if args.project else "", args.cursor
            )
        else:
            query = TaskQuery(
                text=args.query, container=args.project, mine=args.mine,
                open_only=args.open_only, due_from=args.due_from, due_to=args.due_to,
            )  # fmt: skip
            page = await s.adapter.search_tasks(s, query, args.cursor)
        if not page.items:
            return ToolResult.ok("no issues match", data={"items": []})
        lines = [issue_line(i) for i in page.items] + [HINT]
        if page.cursor:
            lines.append(f"more results: pass cursor={page.cursor!r}")
        data = {"items": [i.to_wire() for i in page.items], "cursor": page.cursor}
        return ToolResult.ok("\n".join(lines), data=data)

    return await with_jira(ctx, args.connection_id, work)


async def read_issue(args: ReadArgs, ctx: ToolContext) -> ToolResult:
    """One issue with description, comments and attachments."""

    async def work(s: Any) -> ToolResult:
        detail = await s.adapter.read_task(s, args.issue)
        lines = [issue_line(detail.item)]
        if detail.item.url:
            lines.append(f"link: {detail.item.url}")
        lines += ["", detail.description or "(no description)"]
        for c in detail.comments:
            when = c.created.isoformat(timespec="minutes") if c.created else "?"
            lines.append(f"- {c.author} ({when}): {c.text}")
        lines += [f"attachment: {inline_line(a)}" for a in detail.attachments]
        return ToolResult.ok("\n".join(lines), data=detail.to_wire())

    return await with_jira(ctx, args.connection_id, work)


async def write_issue(args: WriteArgs, ctx: ToolContext) -> ToolResult:
    """Create (``project``) or update (``issue``) an issue."""
    if bool(args.issue) == bool(args.project):
        return ToolResult.fail(
            "pass either issue (to update) or project (to create)",
            "MISSING_FIELD",
            field="issue",
            suggestion="take the issue key from searchJiraIssues",
        )
    change = TaskChange(**args.model_dump(include=set(TaskChange.model_fields), exclude_none=True))
    if args.issue and not change.model_dump(exclude_none=True):
        return ToolResult.fail("nothing to change", "MISSING_FIELD", field="status")

    async def work(s: Any) -> ToolResult:
        if args.project:
            item = await s.adapter.create_task(s, args.project, change)
            verb = "created"
        else:
            item = await s.adapter.update_task(s, args.issue, change)
            verb = "updated"
        return ToolResult.ok(f"{verb}: {issue_line(item)}", data={"item": item.to_wire()})

    return await with_jira(ctx, args.connection_id, work)


def jira_tools() -> list[Tool]:
    """The three tools."""
    return [
        Tool.from_model(
            "searchJiraIssues",
            "Search Jira issues by words or JQL, or by filters (mine, openOnly, dueFrom/dueTo). "
            "One line per issue with status, assignee and due date: enough to answer most "
            "questions without reading issues.",
            SearchArgs,
            search_issues,
            read_only=True,
            timeout_s=60,
        ),
        Tool.from_model(
            "readJiraIssue",
            "Read one Jira issue: description, comments and attachments.",
            ReadArgs,
            read_issue,
            read_only=True,
            timeout_s=60,
        ),
        Tool.from_model(
            WRITE_TOOL,
            "Create a Jira issue (project + title) or update one (issue + what changes: "
            "title, description, status, due, assignee, priority, a comment).",
            WriteArgs,
            write_issue,
            read_only=False,
            timeout_s=60,
        ),
    ]
