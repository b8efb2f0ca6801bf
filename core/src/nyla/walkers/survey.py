"""What a data source holds now, from a short listing through its connector: sizes the cost
estimate of a source no sync has read in full yet (nothing is downloaded or stored)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING, cast

from nyla.connections.base import sync_pages
from nyla.connections.errors import ConnectorError
from nyla.errors import NylaError
from nyla.knowledge.cost import Held
from nyla.knowledge.limits import get_rag_limits
from nyla.models.datasource import SyncPage
from nyla.tables.knowledge import DataSource, UserConnection
from nyla.walkers.items import item_depth

if TYPE_CHECKING:
    from nyla.db import Database
    from nyla.walkers.ports import SourceConnections, WalkerLookup

#: how long the listing may take before the estimate falls back to the limits
SURVEY_S = 3.0


async def survey(
    db: Database,
    connections: SourceConnections,
    walkers: WalkerLookup,
    ds_id: str,
    *,
    seconds: float = SURVEY_S,
) -> Held | None:
    """The items the source's walker (from ``walkers``) would take (within ``max_depth`` and
    ``max_file_size``) and their listed bytes, up to ``max_items``; ``complete`` when the
    listing ended (or reached that limit) within ``seconds``. ``None`` when the source
    cannot be listed at all (no walker for its service, the connector refused)."""
    async with db.session() as s:
        ds = await s.get(DataSource, ds_id)
        conn = await s.get(UserConnection, ds.connection_id) if ds is not None else None
    if ds is None or conn is None:
        return None
    try:
        walker = walkers.walker_for(conn.service)
    except NylaError:
        return None
    limits = get_rag_limits(ds, walker.limit_kind)
    cap = limits.get("max_items", limits.get("max_tasks", 1 << 62))
    largest = limits.get("max_file_size", 1 << 62)
    held = Held(items=0, bytes=0, tokens=0, complete=False)
    try:
        async with (
            asyncio.timeout(seconds),
            connections.open(ds.connection_id, user_id=None) as session,
        ):
            session.limits = limits
            pages = cast(
                "AsyncGenerator[SyncPage, None]",
                sync_pages(session.adapter, session, ds.path, None),
            )
            async with contextlib.aclosing(pages):
                async for page in pages:
                    for item in page.items:
                        if item.is_folder or not walker.accepts(item):
                            continue
                        size = item.size if item.size is not None else len(item.content or "")
                        if item_depth(item, ds.path) > limits.get("max_depth", 1 << 30):
                            continue
                        if size > largest or held.items >= cap:
                            continue
                        held.items += 1
                        held.bytes += size
                    if page.done or held.items >= cap:
                        held.complete = True
                        break
    except TimeoutError:
        return held
    except (ConnectorError, NylaError):
        return None if not held.items else held
    return held
