"""nyla-connector-msft: Microsoft 365 over Microsoft Graph (plain httpx through the kernel's
vendor HTTP layer): Outlook mail, calendar and contacts, OneDrive and SharePoint, with
delta-query sync. See ``README.md`` for the path grammar and the endpoints used."""

from __future__ import annotations

from typing import Any

from nyla.sdk import hookimpl
from nyla.sdk.connectors import BaseWalker, Item
from nyla_connector_msft.connector import MsftConnector

__all__ = ["MsftConnector", "MsftWalker", "nyla_connectors", "nyla_walkers"]


class MsftWalker(BaseWalker):
    """Syncs a mail folder (``messages/delta``) or a OneDrive / SharePoint folder
    (``root/delta``) into the knowledge store: messages and files, never folders."""

    id = "msft"
    services = ["msft"]

    def accepts(self, item: Item) -> bool:
        """Messages and files."""
        return item.kind in ("mail", "file")


@hookimpl
def nyla_connectors() -> list[Any]:
    """The Microsoft 365 adapter."""
    return [MsftConnector()]


@hookimpl
def nyla_walkers() -> list[Any]:
    """The Microsoft 365 walker."""
    return [MsftWalker()]
