"""nyla-connector-google: Google Workspace over plain httpx through the kernel's vendor HTTP
layer: Gmail, Drive (shared drives too), Calendar and Contacts, with ``history.list``,
``changes.list`` and ``syncToken`` sync. See ``README.md`` for the path grammar and the
endpoints used."""

from __future__ import annotations

from typing import Any

from nyla.sdk import hookimpl
from nyla.sdk.connectors import BaseWalker, Item
from nyla_connector_google.connector import GoogleConnector

__all__ = ["GoogleConnector", "GoogleWalker", "nyla_connectors", "nyla_walkers"]


class GoogleWalker(BaseWalker):
    """Syncs a Gmail label, a Drive folder tree, a calendar or the contacts into the
    knowledge store: messages, files, events and contacts, never folders."""

    id = "google"
    services = ["google"]

    def accepts(self, item: Item) -> bool:
        """Messages, files, events and contacts."""
        return item.kind in ("mail", "file", "event", "contact")


@hookimpl
def nyla_connectors() -> list[Any]:
    """The Google adapter."""
    return [GoogleConnector()]


@hookimpl
def nyla_walkers() -> list[Any]:
    """The Google walker."""
    return [GoogleWalker()]
