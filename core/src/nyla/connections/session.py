"""A connection opened for work, as connector adapters receive it (their ``ctx``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from nyla.connections.http import VendorHttp
from nyla.models.datasource import ConnectionInfo


@dataclass
class ConnectorSession:
    """One connection opened for work: adapter methods take it as their ``ctx``."""

    connection: ConnectionInfo
    adapter: Any
    http: VendorHttp
    #: the RAG limits of the sync this session serves (set by the walker runner; adapters
    #: that enforce limits while listing read them, e.g. ClickUp's ``max_workspaces``)
    limits: dict[str, int] = field(default_factory=dict)
