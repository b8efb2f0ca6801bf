"""``neutralize`` and ``scope`` of a data-source tree element: set, or cleared to inherit.

The index keeps, per file, whether its chunks were neutralized and which scope they were
written under. When a change makes the effective value below an element differ from what a
file was indexed with, that file is purged in the same transaction (its chunks carry personal
data that must now be neutralized, or sit in a scope that no longer applies); the next sync
indexes it again under the new policy. Files whose effective value did not change — a deeper
element that sets the field itself, say — are kept."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from nyla.errors import PermissionDeniedError
from nyla.knowledge.consent import _owned, purge_files
from nyla.knowledge.policy import covers, effective_policy, normalize_path
from nyla.models.knowledge import PurgeResult
from nyla.tables.knowledge import DataSource, FileContentIndex, audit

#: the scopes a data source may set (a tree element is personal or shared with its mandate)
SOURCE_SCOPES = ("personal", "mandate")


def _check(ds: DataSource, field: str, value: Any) -> None:
    if field == "neutralize":
        if value is not None and not isinstance(value, bool):
            raise ValueError("neutralize is true, false or null (inherit)")
        return
    if field != "scope":
        raise ValueError(f"unknown policy field {field!r}: neutralize or scope")
    if value is not None and value not in SOURCE_SCOPES:
        raise ValueError(f"scope is one of {', '.join(SOURCE_SCOPES)} or null (inherit)")
    if value == "mandate" and not ds.mandate_id:
        raise PermissionDeniedError("the data source belongs to no mandate to share it with")


def _indexed_as(row: Any, field: str) -> Any:
    return bool(row.is_neutralized) if field == "neutralize" else row.scope


async def set_source_policy(
    session: AsyncSession, data_source_id: str, field: str, value: Any, *, actor: str
) -> PurgeResult:
    """Set ``field`` (``neutralize`` or ``scope``) of a tree element, ``None`` to inherit;
    purges the files below it whose effective value changed. Owner-only; audited."""
    ds = _owned(
        await session.get(DataSource, data_source_id, with_for_update=True),
        f"data source {data_source_id}",
        actor,
    )
    _check(ds, field, value)
    before = getattr(ds, field)
    setattr(ds, field, value)
    await session.flush()
    siblings = list(
        (
            await session.execute(
                select(DataSource).where(DataSource.connection_id == ds.connection_id)
            )
        ).scalars()
    )
    prefix = normalize_path(ds.path)
    files = (
        await session.execute(
            select(
                FileContentIndex.file_id,
                FileContentIndex.source_path,
                FileContentIndex.is_neutralized,
                FileContentIndex.scope,
            ).where(FileContentIndex.connection_id == ds.connection_id)
        )
    ).all()
    stale = [
        row.file_id
        for row in files
        if row.source_path is not None
        and covers(prefix, row.source_path)
        and effective_policy(siblings, row.source_path, field).value != _indexed_as(row, field)
    ]
    result = await purge_files(session, stale, f"{field}={value} on {ds.path}")
    audit(
        session,
        f"datasource_{field}_changed",
        actor,
        data_source_id,
        {"before": before, "after": value, "purgedFiles": result.files},
    )
    return result
