"""nyla-connector-infomaniak: kDrive over Infomaniak's REST API and calendars over CalDAV,
through the kernel's vendor HTTP layer. See ``README.md`` for paths, endpoints and what was
assumed where the vendor documents little."""

from __future__ import annotations

from typing import Any

from nyla.sdk import hookimpl
from nyla.sdk.connectors import BaseWalker, Item
from nyla_connector_infomaniak.connector import InfomaniakConnector

__all__ = ["InfomaniakConnector", "InfomaniakWalker", "nyla_connectors", "nyla_walkers"]


class InfomaniakWalker(BaseWalker):
    """Syncs a kDrive directory (``listing/continue``) or a calendar (``sync-collection``)
    into the knowledge store: files and events."""

    id = "infomaniak"
    services = ["infomaniak"]

    def accepts(self, item: Item) -> bool:
        """Files and events."""
        return item.kind in ("file", "event")


@hookimpl
def nyla_connectors() -> list[Any]:
    """The Infomaniak adapter."""
    return [InfomaniakConnector()]


@hookimpl
def nyla_walkers() -> list[Any]:
    """The Infomaniak walker."""
    return [InfomaniakWalker()]
