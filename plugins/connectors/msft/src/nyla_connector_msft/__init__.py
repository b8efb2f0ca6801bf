"""nyla-connector-msft: Microsoft 365 over Microsoft Graph (plain httpx through the kernel's
vendor HTTP layer): Outlook mail, calendar and contacts, OneDrive and SharePoint, with
delta-query sync. See ``README.md`` for the path grammar and the endpoints used."""

from __future__ import annotations

from typing import Any

from nyla import hookimpl
from nyla_connector_msft.connector import MsftConnector

__all__ = ["MsftConnector", "nyla_connectors"]


@hookimpl
def nyla_connectors() -> list[Any]:
    """The Microsoft 365 adapter."""
    return [MsftConnector()]
