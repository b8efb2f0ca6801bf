"""nyla-connector-infomaniak: kDrive over Infomaniak's REST API and calendars over CalDAV,
through the kernel's vendor HTTP layer. See ``README.md`` for paths, endpoints and what was
assumed where the vendor documents little."""

from __future__ import annotations

from typing import Any

from nyla import hookimpl
from nyla_connector_infomaniak.connector import InfomaniakConnector

__all__ = ["InfomaniakConnector", "nyla_connectors"]


@hookimpl
def nyla_connectors() -> list[Any]:
    """The Infomaniak adapter."""
    return [InfomaniakConnector()]
