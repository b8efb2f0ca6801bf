"""nyla-connector-jira: Jira Cloud over REST v3 (plain httpx through the kernel's vendor HTTP
layer): issue search on ``/search/jql`` with ``nextPageToken``, projects, one issue with its
comments, writes, and the RAG walker syncing on ``updated``. See ``README.md`` for the
endpoints used."""

from __future__ import annotations

from typing import Any, ClassVar

from nyla.sdk import hookimpl
from nyla.sdk.connectors import BaseWalker, Item
from nyla_connector_jira.connector import JiraConnector

__all__ = ["JiraConnector", "JiraWalker", "nyla_connectors", "nyla_walkers"]


class JiraWalker(BaseWalker):
    """Syncs a Jira project (or every project) into the knowledge store: each issue's
    description and comments, re-read when its ``updated`` changes."""

    id: ClassVar[str] = "jira"
    services: ClassVar[list[str]] = ["jira"]
    limit_kind: ClassVar[str] = "files"

    def accepts(self, item: Item) -> bool:
        """Issues only (project folders are walked through)."""
        return item.kind == "task"


@hookimpl
def nyla_connectors() -> list[Any]:
    """The Jira adapter."""
    return [JiraConnector()]


@hookimpl
def nyla_walkers() -> list[Any]:
    """The Jira walker."""
    return [JiraWalker()]
