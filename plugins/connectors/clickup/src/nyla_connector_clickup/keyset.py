"""Listing a workspace's tasks so that edits during the listing cannot hide one.

ClickUp pages ``GET /team/{team_id}/task`` by offset (``page``). Ordered by ``updated``, a task
edited while the walker reads moves to the end and every task behind its old place moves up
one: the one at the next page's first place is skipped (249 of 250, measured), and since the
cursor moves past its time it is never read again. Ordered by creation time (which no edit
changes) and filtered by ``date_created_gt`` from the last one read (keyset paging: the next
"page" is always page 0 after the last creation time), neither an edit nor a deletion nor a new
task can shift what is still to come. Tasks created in the same millisecond are read again at
the boundary and dropped by id; a whole page of them pages on within that millisecond.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from nyla.sdk.connectors import ConnectorContext
from nyla_connector_clickup.search import team_page


class Keyset(BaseModel):
    """Where a creation-ordered listing of one workspace stands (part of the checkpoint)."""

    #: creation time (ms) of the last task read; ``None`` before the first page
    after: int | None = None
    #: ids read that were created at exactly ``after``
    at_after: list[str] = Field(default_factory=list)
    #: pages into a run of tasks all created at ``after``
    ties: int = 0


def _created(task: dict[str, Any]) -> int:
    value = task.get("date_created")
    return int(value) if isinstance(value, str | int) and str(value).isdigit() else 0


async def keyset_page(
    ctx: ConnectorContext, team: str, params: dict[str, Any], key: Keyset
) -> tuple[list[dict[str, Any]], bool, Keyset]:
    """The next tasks after ``key`` (oldest first), whether they were the last, and where the
    listing stands after them."""
    query = {**params, "order_by": "created", "reverse": "true"}
    if key.after is not None:
        query["date_created_gt"] = key.after - 1  # this millisecond again: ties by id below
    tasks, last = await team_page(ctx, team, query, key.ties)
    known = set(key.at_after)
    fresh = [t for t in tasks if str(t["id"]) not in known]
    if not tasks:
        return [], True, key
    newest = max(_created(t) for t in tasks)
    if key.after is not None and newest <= key.after:
        # every task of the page was created at the boundary: page on within it
        ids = key.at_after + [str(t["id"]) for t in fresh]
        return fresh, last, Keyset(after=key.after, at_after=ids, ties=key.ties + 1)
    at_newest = [str(t["id"]) for t in tasks if _created(t) == newest]
    return fresh, last, Keyset(after=newest, at_after=at_newest)
