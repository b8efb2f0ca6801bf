"""Task services beyond the connector protocol: a structured task search (open, mine, due
between two dates, free text), one task with its description, comments and attachments, and
the writes (create, update, comment).

A task connector (Jira, ClickUp) subclasses :class:`TaskConnector` and overrides what its
service can; :func:`task_capabilities` derives the set from the overrides. The ClickUp and
Jira toolboxes reach these methods through the kernel's connector registry, never by
importing a connector package.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

from pydantic import Field

from nyla.connections.base import BaseConnector
from nyla.connections.errors import NotSupportedError
from nyla.models.base import WireModel
from nyla.models.datasource import ConnectorContext, Item, ItemPage

#: task capability names, derived from the overridden methods of a :class:`TaskConnector`
TASK_CAPABILITIES = ("search_tasks", "read_task", "create_task", "update_task")


class TaskQuery(WireModel):
    """A structured task search. Empty fields do not filter: ``text`` matches title and
    description, ``container`` is a project key or list id, ``mine`` keeps the tasks
    assigned to the connected account, ``open_only`` leaves out done/closed tasks,
    ``due_from``/``due_to`` bound the due date (inclusive)."""

    text: str = ""
    container: str = ""
    mine: bool = False
    open_only: bool = False
    due_from: date | None = None
    due_to: date | None = None


class TaskComment(WireModel):
    """One comment of a task."""

    id: str = ""
    author: str = ""
    created: datetime | None = None
    text: str = ""


class TaskDetail(WireModel):
    """One task in full: its metadata block (``item``), the description as text, the
    comments (oldest first) and the attachments (items whose ids ``download`` takes)."""

    item: Item
    description: str = ""
    comments: list[TaskComment] = Field(default_factory=list)
    attachments: list[Item] = Field(default_factory=list)


class TaskChange(WireModel):
    """What a create or update sets; ``None`` leaves a field as it is. ``status`` is the
    target status by name (services move there by their own transitions), ``comment`` adds
    a comment, ``assignee`` is an account id or e-mail address (``me``: the connected
    account)."""

    title: str | None = None
    description: str | None = None
    status: str | None = None
    due: date | None = None
    assignee: str | None = None
    priority: str | None = None
    comment: str | None = None


class TaskConnector(BaseConnector):
    """Base of a task service's adapter: override the task capabilities it has."""

    async def search_tasks(
        self, ctx: ConnectorContext, query: TaskQuery, cursor: str | None = None
    ) -> ItemPage:
        """Tasks matching ``query`` (due date first, undated last), one page."""
        raise NotSupportedError(f"{self.service} has no task search")

    async def read_task(self, ctx: ConnectorContext, task_id: str) -> TaskDetail:
        """One task with its description, comments and attachments."""
        raise NotSupportedError(f"{self.service} cannot read tasks")

    async def create_task(self, ctx: ConnectorContext, container: str, change: TaskChange) -> Item:
        """A new task in ``container`` (project key, list id); returns it."""
        raise NotSupportedError(f"{self.service} cannot create tasks")

    async def update_task(self, ctx: ConnectorContext, task_id: str, change: TaskChange) -> Item:
        """Change a task (fields, status, a new comment); returns it as it is now."""
        raise NotSupportedError(f"{self.service} cannot update tasks")


def task_capabilities(adapter: Any) -> frozenset[str]:
    """The task capabilities an adapter overrides (empty for a non-task service)."""
    if not isinstance(adapter, TaskConnector):
        return frozenset()
    return frozenset(
        name
        for name in TASK_CAPABILITIES
        if getattr(type(adapter), name) is not getattr(TaskConnector, name)
    )
