"""RAG limits, data-source settings and cost estimates (``kernel.knowledge.sources``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import func, select

from nyla.db import Database
from nyla.errors import NotFoundError, NylaError, PermissionDeniedError
from nyla.knowledge.cost import Held, estimate_cost
from nyla.knowledge.limits import (
    LimitKind,
    get_rag_limits,
    get_stored_overrides,
    kind_for_service,
    limit_ranges,
    merge_settings_patch,
)
from nyla.models.agent import RunContext
from nyla.models.ai import ModelSpec
from nyla.models.files import Scope
from nyla.models.knowledge import CostEstimate, LimitRange, RagLimits, SettingsUpdate
from nyla.tables.knowledge import DataSource, FileContentIndex, UserConnection, audit
from nyla.tables.sync import SyncState


class SourceSettings:
    """A data source's RAG limits (defaults merged with its stored overrides), the partial
    update of its settings, and the indicative cost of a full sync."""

    def __init__(
        self, db: Database, embedding_spec: Callable[[RunContext | None], ModelSpec]
    ) -> None:
        self.db = db
        self.embedding_spec = embedding_spec

    async def _data_source(self, s: Any, data_source_id: str) -> tuple[DataSource, LimitKind]:
        ds = await s.get(DataSource, data_source_id)
        if ds is None:
            raise NotFoundError(f"no data source {data_source_id}")
        conn = await s.get(UserConnection, ds.connection_id)
        return ds, kind_for_service(conn.service if conn else None)

    async def limits(self, data_source_id: str) -> RagLimits:
        """The data source's limits: the defaults merged with its stored overrides (what a
        sync, the API and the cost estimate read), the overrides alone, and their ranges."""
        async with self.db.session() as s:
            ds, kind = await self._data_source(s, data_source_id)
            return _rag_limits(ds, kind)

    async def update_settings(
        self,
        data_source_id: str,
        patch: dict[str, Any],
        *,
        actor: str,
        is_mandate_admin: bool = False,
    ) -> SettingsUpdate:
        """Partial update of a data source's settings: only ``ragLimits`` is accepted
        (anything else raises ``SettingsValidationError``). Owner-only; a mandate admin may
        also change a mandate-scoped source. Writes an audit record; returns the settings
        and the limits they give."""
        async with self.db.session() as s:
            ds, kind = await self._data_source(s, data_source_id)
            mandate_scoped = ds.scope == Scope.MANDATE.value
            if ds.user_id != actor and not (mandate_scoped and is_mandate_admin):
                raise PermissionDeniedError(
                    f"{actor} may not change the settings of data source {data_source_id}"
                )
            before = dict(ds.settings or {})
            ds.settings = merge_settings_patch(before, patch, kind)
            audit(
                s,
                "datasource_settings_changed",
                actor,
                data_source_id,
                {"before": before, "after": ds.settings},
            )
            return SettingsUpdate(settings=dict(ds.settings), limits=_rag_limits(ds, kind))

    async def estimate_cost(
        self, data_source_id: str, *, listed: Held | None = None
    ) -> CostEstimate:
        """Indicative CHF for a full sync: sized by what the source holds when its last
        sync read all of it, else by ``listed`` (a listing of it now, when that ended), else
        by its limits; priced by the embedding model the store will use
        (:meth:`embedding_spec`; a free local model costs 0)."""
        async with self.db.session() as s:
            ds, kind = await self._data_source(s, data_source_id)
            held = await _held(s, data_source_id)
        price = model = None
        try:
            spec = self.embedding_spec(None)
            price, model = spec.price_input_chf_per_mtok, spec.id
        except NylaError:  # no embedding model available now: the default price stands in
            price = None
        return estimate_cost(
            ds, kind, source_id=data_source_id, price_chf_per_mtok=price, price_model=model,
            held=held, listed=listed,
        )  # fmt: skip


def _rag_limits(ds: DataSource, kind: LimitKind) -> RagLimits:
    return RagLimits(
        kind=kind,
        values=get_rag_limits(ds, kind),
        overrides=get_stored_overrides(ds, kind),
        ranges={name: LimitRange(**bounds) for name, bounds in limit_ranges(kind).items()},
    )


async def _held(session: Any, data_source_id: str) -> Held:
    """What the data source's syncs indexed, and whether the last one read all of it."""
    items, size, tokens = (
        await session.execute(
            select(
                func.count(),
                func.coalesce(func.sum(FileContentIndex.size), 0),
                func.coalesce(func.sum(FileContentIndex.token_count), 0),
            ).where(
                FileContentIndex.data_source_id == data_source_id,
                FileContentIndex.status == "indexed",
            )
        )
    ).one()
    state = await session.get(SyncState, data_source_id)
    last = (state.last_result if state else None) or {}
    complete = bool(last) and not last.get("stoppedAtLimit") and not last.get("cancelled")
    return Held(items=int(items), bytes=int(size), tokens=int(tokens), complete=complete)
