"""An unfiltered search's kept plan made ready to run: its ranking statement, parameters
and HNSW settings decided once (:class:`ReadyRanking`), so that searching the same scope
again is the statement and its hits (issue 32: the client's Python around a search)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from nyla.knowledge.file_rows import FileRows
from nyla.knowledge.search_driver import ReadConnection, Statement, keys_array, prepared
from nyla.knowledge.search_hits import merged, ranked_hits, result
from nyla.knowledge.search_plan import SearchPlan
from nyla.knowledge.search_sql import ranking_sql, ranking_with_files_sql, scope_where
from nyla.knowledge.settings import KnowledgeSettings
from nyla.knowledge.vectors import CHUNK_ID_BITS, vector_binary
from nyla.models.knowledge import SearchHit, SearchResult


async def held_hits(
    driver: ReadConnection,
    rows: list[Any],
    files: FileRows,
    model: str,
    resort: bool,
    joined_at: int | None = None,
) -> list[SearchHit]:
    """The hits of a lean ranking's ``rows`` with their files' details: all held (the
    common case) without a coroutine, else what is missing read first. ``joined_at``: the
    rows carry their files' details
    (:func:`~nyla.knowledge.search_sql.ranking_with_files_sql`; the value is the
    generation of :class:`FileRows` read before the statement ran)."""
    if joined_at is not None:
        chunks, details = files.joined(rows, joined_at)
        return ranked_hits(chunks, details, model, resort=True) or []
    found = ranked_hits(rows, files.rows(), model, resort=resort, complete=True)
    files.note(found is not None)
    if found is not None:
        return found
    details = await files.details(driver, {r[0] >> CHUNK_ID_BITS for r in rows})
    return ranked_hits(rows, details, model, resort=False) or []


@dataclass(slots=True)
class ReadyRanking:
    """A kept plan's ranking made ready for the driver path once (the general path,
    :func:`~nyla.knowledge.search.vector_ranks`, decides the same per search): the
    prepared ``statement``, its parameters with the owner keys dumped already (``q_at``:
    where the query vector goes; the exact path's keys are in its text), and the HNSW
    ``settings`` it runs under (``None``: the exact path). ``joined``: the same ranking
    with its files' details (the same parameters), run while the files of most searches'
    hits are not held (:meth:`FileRows.worth_holding`)."""

    statement: Statement
    joined: Statement
    params: list[bytes | None]
    q_at: int
    settings: tuple[int, int, bool] | None


def ready_ranking(
    plan: SearchPlan, keys: list[str], dims: int, model: str, settings: KnowledgeSettings
) -> ReadyRanking | None:
    """What :func:`ready_ranks` runs for ``plan`` (an unfiltered search's, held file
    details only: the lean ranking), or ``None`` where it has no lean ranking."""
    if plan.exact and not plan.scoped:
        return None
    file_where, where = scope_where(model)
    shape = (file_where, where, dims, plan.pool, plan.exact, plan.scoped)
    # the exact path's keys in its text: planned once per scope (see vector_ranks)
    in_text = tuple(keys) if plan.exact else None
    statement, names = prepared(ranking_sql(*shape, True), in_text)
    joined, _ = prepared(ranking_with_files_sql(*shape), in_text)
    wanted = None if plan.exact else (plan.ef_search, int(settings.max_scan_tuples), plan.iterative)
    params = [keys_array(tuple(keys)) if name == "keys" else None for name in names]
    return ReadyRanking(statement, joined, params, names.index("q"), wanted)


async def ready_ranks(
    conn: ReadConnection, ready: ReadyRanking, vector: Sequence[float], model: str, files: FileRows
) -> list[SearchHit] | None:
    """The hits of ``ready``'s ranking on ``conn`` (a prepared statement, parameters
    dumped: :meth:`~nyla.read_pool.ReadConnection.run`), or ``None`` (nothing run) where
    the connection is not yet as it needs (not listening for file changes, other HNSW
    settings): the general path makes it so."""
    if (
        ready.settings is not None and conn.info.get("nyla_hnsw_settings") != ready.settings
    ) or not (files.enabled and files.listening(conn)):
        return None
    params = ready.params.copy()
    params[ready.q_at] = vector_binary(vector)
    if files.worth_holding():
        rows = await conn.run(ready.statement, params)
        return await held_hits(conn, rows, files, model, ready.settings is not None)
    generation = files.generation
    rows = await conn.run(ready.joined, params)
    return await held_hits(conn, rows, files, model, True, generation)


async def ready_search(
    conn: ReadConnection,
    plan: SearchPlan,
    vector: Sequence[float],
    model: str,
    k: int,
    hybrid: bool,
    files: FileRows,
) -> SearchResult | bool:
    """The result of an unfiltered search not fused with full text whose kept ``plan`` is
    ready (:attr:`SearchPlan.ready`): its ranking on ``conn`` and the hits, with no other
    step (:meth:`nyla.knowledge.retrieval.Retrieval.search` comes here first; issue 32:
    the layers around the statement cost more than its own Python). ``False``: nothing
    run, the connection is not ready (see :func:`ready_ranks`); ``True``: the ranking found
    too few (:meth:`SearchPlan.enough`), the general path goes on with the iterative scan.
    No HNSW setting changes here, so a failure has none to forget."""
    nearest = await ready_ranks(conn, plan.ready, vector, model, files)
    if nearest is None:
        return False
    if not plan.enough(len(nearest)):
        return True
    # each hit carries its score already (1 - distance)
    return result(
        merged(nearest, k), "exact" if plan.exact else "hnsw", hybrid, plan.counted[0], model
    )
