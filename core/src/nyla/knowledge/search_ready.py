"""An unfiltered search's kept plan made ready to run: its ranking statement, parameters
and HNSW settings decided once (:class:`ReadyRanking`), so that searching the same scope
again is the statement and its hits (issue 32: the client's Python around a search)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from nyla.knowledge.file_rows import FileRows
from nyla.knowledge.search_driver import OwnerKeys, QueryVector, ReadConnection, driver_sql
from nyla.knowledge.search_hits import ranked_hits
from nyla.knowledge.search_plan import SearchPlan
from nyla.knowledge.search_sql import ranking_sql, scope_where, with_keys
from nyla.knowledge.settings import KnowledgeSettings
from nyla.knowledge.vectors import CHUNK_ID_BITS
from nyla.models.knowledge import SearchHit


async def held_hits(
    driver: ReadConnection, rows: list[Any], files: FileRows, model: str, resort: bool
) -> list[SearchHit]:
    """The hits of a lean ranking's ``rows`` with their files' details: all held (the
    common case) without a coroutine, else what is missing read first."""
    found = ranked_hits(rows, files.rows(), model, resort=resort, complete=True)
    if found is not None:
        return found
    details = await files.details(driver, {r[0] >> CHUNK_ID_BITS for r in rows})
    return ranked_hits(rows, details, model, resort=False) or []


@dataclass(slots=True)
class ReadyRanking:
    """A kept plan's ranking made ready for the driver path once (the general path,
    :func:`~nyla.knowledge.search.vector_ranks`, decides the same per search): the
    statement in the driver's form, the owner keys as its parameter (``None``: written in
    its text), and the HNSW settings it runs under (``None``: the exact path)."""

    sql: str
    keys: OwnerKeys | None
    settings: tuple[int, int, bool] | None


def ready_ranking(
    plan: SearchPlan, keys: list[str], dims: int, model: str, settings: KnowledgeSettings
) -> ReadyRanking | None:
    """What :func:`ready_ranks` runs for ``plan`` (an unfiltered search's, held file
    details only: the lean ranking), or ``None`` where it has no lean ranking."""
    if plan.exact and not plan.scoped:
        return None
    file_where, where = scope_where(model)
    sql = ranking_sql(file_where, where, dims, plan.pool, plan.exact, plan.scoped, True)
    if plan.exact:
        return ReadyRanking(with_keys(sql, tuple(keys)), None, None)
    wanted = (plan.ef_search, int(settings.max_scan_tuples), plan.iterative)
    return ReadyRanking(driver_sql(sql), OwnerKeys(keys), wanted)


async def ready_ranks(
    conn: ReadConnection, ready: ReadyRanking, vector: Sequence[float], model: str, files: FileRows
) -> list[SearchHit] | None:
    """The hits of ``ready``'s ranking on ``conn``, or ``None`` (nothing run) where the
    connection is not yet as it needs (not listening for file changes, other HNSW settings,
    parameter types not registered): the general path makes it so."""
    info = conn.info
    if (
        (ready.settings is not None and info.get("nyla_hnsw_settings") != ready.settings)
        or not files.enabled
        or not files.listening(conn)
        or "vector_dumper" not in info
    ):
        return None
    q = QueryVector(vector)
    rows = await conn.rows(
        ready.sql, {"q": q} if ready.keys is None else {"q": q, "keys": ready.keys}
    )
    return await held_hits(conn, rows, files, model, ready.settings is not None)
