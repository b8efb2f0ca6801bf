"""nyla-connector-clickup: ClickUp API v2 (plain httpx through the kernel's vendor HTTP
layer): workspaces → spaces → folders → lists → tasks, search on the workspace's task
endpoint, one task with its comments and attachments, writes, and the RAG walker syncing on
``date_updated_gt``. See ``README.md`` for the endpoints used."""

from __future__ import annotations

from typing import Any, ClassVar

from nyla.sdk import hookimpl
from nyla.sdk.connectors import BaseWalker, Item
from nyla_connector_clickup.connector import ClickUpConnector

__all__ = ["ClickUpConnector", "ClickUpWalker", "nyla_connectors", "nyla_walkers"]


class ClickUpWalker(BaseWalker):
    """Syncs ClickUp tasks into the knowledge store within the seeds' ClickUp limits
    (``max_tasks``, ``max_workspaces``, ``max_lists_per_workspace``): each task's name,
    status, tags and description, re-read when its ``date_updated`` changes."""

    id: ClassVar[str] = "clickup"
    services: ClassVar[list[str]] = ["clickup"]
    limit_kind: ClassVar[str] = "clickup"

    def accepts(self, item: Item) -> bool:
        """Tasks only (workspaces, spaces, folders and lists are walked through)."""
        return item.kind == "task"


@hookimpl
def nyla_connectors() -> list[Any]:
    """The ClickUp adapter."""
    return [ClickUpConnector()]


@hookimpl
def nyla_walkers() -> list[Any]:
    """The ClickUp walker."""
    return [ClickUpWalker()]
