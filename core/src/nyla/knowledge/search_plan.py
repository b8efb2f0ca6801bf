"""Planning one knowledge search: exact ranking or HNSW (from the file index's counts),
and the ``ef_search`` a table size and a filter need."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from nyla.knowledge.search_driver import Executor
from nyla.knowledge.search_driver import rows as _rows
from nyla.knowledge.settings import KnowledgeSettings
from nyla.knowledge.vectors import SCOPE_INDEX, hnsw_index_name

#: the key under which ``estimates`` notes whether the scope btree exists
SCOPE_INDEX_KEY = ("scope index",)


def _moved(then: float, now: float) -> bool:
    """``now`` is more than double or less than half of ``then``."""
    return now > 2 * then or now * 2 < then


class EstimateCache:
    """Candidate counts per (filter, keys) for ``ttl`` seconds (bounded size), and the
    plans made from them (:meth:`plan`), which live no longer than the counts they used
    and are all forgotten when any count changes.

    A count asked for as ``watched`` (the search's connection listens for changes to the
    file index, :mod:`nyla.knowledge.file_rows`) stays fresh beyond ``ttl`` while no change
    was notified since it was counted (:meth:`changed`): counting a large scope reads every
    file index row it covers (measured: ~90 ms of server CPU at 100k files, ~650 ms at 1M,
    plus the parallel workers'), which every 30 s was +0.1-0.5 ms a search in the bench at
    100k."""

    def __init__(self, ttl: float = 30.0, size: int = 4096) -> None:
        self.ttl = ttl
        self.size = size
        #: bumped by every notified change of the file index (:meth:`changed`)
        self.generation = 0
        self._items: dict[Any, tuple[float, int, Any]] = {}
        self._plans: dict[Any, tuple[float, Any]] = {}
        #: the ef_search learned per scope (:mod:`nyla.knowledge.search_calibration`), with
        #: the scope's candidates and the table's rows when it was noted
        self._learned: dict[Any, tuple[int, int, int]] = {}
        #: scopes to learn it for, with the rule's ef_search (the most to try)
        self.wanted: dict[Any, int] = {}
        self._noted: dict[Any, tuple[int, int]] = {}

    def get(self, key: Any, watched: bool = False) -> Any:
        """The cached estimate, or ``None`` when missing or expired (``watched``: one
        older than ``ttl`` counts as fresh, and is renewed, while no change was notified
        since it was counted)."""
        item = self._items.get(key)
        if item is None:
            return None
        now = time.monotonic()
        if now - item[0] <= self.ttl:
            return item[2]
        if watched and item[1] == self.generation:
            self._items[key] = (now, item[1], item[2])
            return item[2]
        return None

    def put(self, key: Any, value: Any, generation: int | None = None) -> None:
        """Remember ``value`` (the oldest entry goes when full); ``generation``: the
        :attr:`generation` read before it was counted (a change notified meanwhile leaves
        it fresh for ``ttl`` only)."""
        if len(self._items) >= self.size:
            self._items.pop(next(iter(self._items)))
        generation = self.generation if generation is None else generation
        self._items[key] = (time.monotonic(), generation, value)
        self._plans.clear()

    def changed(self) -> None:
        """A change to the file index was notified: counts made before it are fresh for
        their ``ttl`` only (a notification is at most one search late on a connection, so
        a watched count is never staler than that; counts only choose the path)."""
        self.generation += 1

    def clear(self) -> None:
        """Forget everything (after bulk loads change the row counts)."""
        self._items.clear()
        self._plans.clear()
        self._learned.clear()
        self.wanted.clear()
        self._noted.clear()

    def want(self, key: Any, ceiling: int, candidates: int, total: int) -> None:
        """Ask for the scope ``key``'s ef_search to be learned (at most ``ceiling``, the
        rule's), noting its ``candidates`` among the table's ``total`` rows now."""
        self.wanted[key] = ceiling
        self._noted[key] = (candidates, total)

    def learned(
        self, key: Any, candidates: int | None = None, total: int | None = None
    ) -> int | None:
        """The ef_search learned for the scope ``key`` (:meth:`learn`), or ``None``. Given
        the scope's ``candidates`` and the table's ``total`` now: also ``None`` once the
        scope's share of the rows or the table's size has moved by more than half or
        double since it was noted (the ef a filter needs follows both), and forgotten, to
        be learned again."""
        entry = self._learned.get(key)
        if entry is None:
            return None
        ef_search, then_candidates, then_total = entry
        if candidates is None or total is None:
            return ef_search
        then_share, share = then_candidates / max(then_total, 1), candidates / max(total, 1)
        if _moved(then_share, share) or _moved(then_total, total):
            del self._learned[key]
            return None
        return ef_search

    def learn(self, key: Any, ef_search: int) -> None:
        """Note the ef_search the scope ``key`` needs (kept until :meth:`clear` or its
        counts move, see :meth:`learned`; the plans made without it are forgotten)."""
        if len(self._learned) >= self.size:
            self._learned.pop(next(iter(self._learned)))
        candidates, total = self._noted.pop(key, (0, 0))
        self._learned[key] = (ef_search, candidates, total)
        self.wanted.pop(key, None)
        self._plans.clear()

    def plan(self, key: Any) -> Any:
        """The plan kept under ``key`` (:meth:`keep_plan`), or ``None`` when missing or
        when one of the estimates it was made from has expired."""
        item = self._plans.get(key)
        if item is None or time.monotonic() > item[0]:
            return None
        return item[1]

    def keep_plan(self, key: Any, value: Any, inputs: tuple[Any, ...]) -> None:
        """Keep ``value``, made from the estimates under ``inputs``, until the oldest of
        them expires (or any estimate is put)."""
        born = [self._items[i][0] for i in inputs if i in self._items]
        if len(born) < len(inputs):
            return
        if len(self._plans) >= self.size:
            self._plans.pop(next(iter(self._plans)))
        self._plans[key] = (min(born) + self.ttl, value)


async def table_rows(session: Executor) -> int:
    """The planner's row count of the chunk table (all models)."""
    rows = await _rows(
        session,
        # to_regclass at run time: a prepared statement would keep the table's old oid
        "SELECT greatest(reltuples, 0)::bigint FROM pg_class "
        "WHERE oid = to_regclass('knowledge_chunk')",
        {},
    )
    return int(rows[0][0] or 0) if rows else 0


#: what the exact path's range probe of one file costs, in distance computations of one
#: chunk (measured on 10k one-chunk files, load ~6: a 10 % scope ranks exactly in 10 ms,
#: on HNSW in 4.8 ms; a 1 % scope exactly in 2-3 ms, on HNSW in 23-29 ms)
FILE_PROBE_COST = 5.0

#: An iterative HNSW scan's server CPU in the exact path's unit (one chunk ranked exactly,
#: ~1.3 µs): a fixed part, a part per ``ef_search`` candidate, and a part for going on until
#: k rows pass a filter, growing a little faster than the ``k * total / readable`` rows that
#: takes. Fitted to bench/retrieval_latency.py's server CPU per search (2026-12-02, raw
#: pgvector on nyla's index, 10k and 100k synthetic rows): exact 0.15 ms + 1.3 µs a row;
#: unfiltered HNSW 0.35 ms + 6 µs per ef_search; a 10 % filter at ef 10 1.06 ms, a 1 %
#: filter 9-17 ms at 10k-100k and 22-24 ms at 1M (the iterative scan runs into
#: max_scan_tuples), where ranking the scope's 10k rows exactly takes 13 ms.
HNSW_BASE_COST = 150.0
HNSW_EF_COST = 4.6
HNSW_PASS_COST, HNSW_PASS_POWER = 1.36, 1.3


def prefer_exact(
    candidates: int,
    total: int,
    limit: int,
    settings: KnowledgeSettings,
    files: int = 0,
    ef_search: int | None = None,
) -> bool:
    """Exact ranking when it costs less than an iterative HNSW scan would, both estimated
    from the statistics a search has (the readable chunks and files, the table's rows).

    Exact probes the ``files``' primary-key ranges (:data:`FILE_PROBE_COST` each) and
    computes ``candidates`` distances. HNSW's cost (:data:`HNSW_BASE_COST` and its peers)
    grows with the ``ef_search`` it would run at (``ef_search``, by default the one
    :func:`effective_ef_search` gives this table and filter) and with the rows an iterative
    scan passes over until ``limit`` of them are readable; ``exact_cost_factor`` scales it
    (4: as measured; 0: HNSW whenever there is an index). So a scope ranks exactly where an
    HNSW scan at the ef it needs costs more: 10 % of 10k rows at the default ef (282 under
    that filter), 1 % of 100k or 1M, not 10 % of 100k. ``exact_threshold`` (0 by default)
    ranks every search exactly whose cost is at most that.
    """
    cost = candidates + FILE_PROBE_COST * files
    if cost <= settings.exact_threshold:
        return True
    if ef_search is None:
        ef_search = settings.ef_search
        if settings.adaptive_ef_search:
            ef_search = effective_ef_search(ef_search, total, candidates)
    passed = limit * max(total, candidates) / max(candidates, 1)
    hnsw = HNSW_BASE_COST + HNSW_EF_COST * ef_search + HNSW_PASS_COST * passed**HNSW_PASS_POWER
    return cost <= (settings.exact_cost_factor / 4) ** 2 * hnsw


async def count_candidates(
    session: Executor, file_where: str, params: dict[str, Any]
) -> tuple[int, int, int]:
    """(readable filtered chunks, their files, their tokens), counted from the file index
    (no chunk is read; a content-type filter is not counted, which only errs towards the
    HNSW path). The tokens give full-text ranking its mean chunk length."""
    rows = await _rows(
        session,
        "SELECT coalesce(sum(f.chunk_count), 0), count(*), coalesce(sum(f.token_count), 0) "
        f"FROM knowledge_file_index f WHERE {file_where}",
        params,
    )
    return int(rows[0][0]), int(rows[0][1]), int(rows[0][2])


def wants_calibration(
    candidates: int, total: int, pool: int, files: int, settings: KnowledgeSettings
) -> bool:
    """Whether learning a scope's ef_search (:mod:`nyla.knowledge.search_calibration`)
    could change its plan: it is filtered and larger than the rows a search ranks, and an
    HNSW scan at the lowest ef would cost less than ranking it exactly (else the exact path
    stays whatever the ef)."""
    if candidates >= total or candidates <= pool:
        return False
    return not prefer_exact(candidates, total, pool, settings, files, ef_search=pool)


def needs_iterative_scan(candidates: int, total: int, limit: int, ef_search: int) -> bool:
    """Whether an HNSW search needs pgvector's iterative scan to find ``limit`` readable
    rows, from the statistics a search has (``candidates`` readable of ``total`` rows).

    Without it the index gives the ``ef_search`` rows nearest in the whole graph and the
    owner-key filter (always in the statement) keeps the readable ones. That is enough
    where the readable share of those rows is expected to reach ``limit`` with three
    standard deviations to spare: a scope of (nearly) every row, with ``ef_search`` at
    least ``limit``. The iterative scan would return the same rows then (it goes on only
    when too few pass), but keeps the scan's state for going on: 36 µs of 0.34 ms server
    CPU at 10k rows and ef 10, measured. A search that gets fewer than ``limit`` rows
    without it runs again with it (:func:`nyla.knowledge.search.vector_ranks`), so the
    statistics only decide what a search costs, never what it finds."""
    share = min(1.0, candidates / max(total, 1))
    spread = 3.0 * math.sqrt(ef_search * share * (1.0 - share))
    return share * ef_search - spread < limit


def hnsw_settings_change(
    info: dict[Any, Any], ef_search: int, settings: KnowledgeSettings, iterative: bool = True
) -> tuple[str, dict[str, Any], tuple[int, int, bool]] | None:
    """The statement that sets the HNSW search settings on the pooled connection whose
    ``info`` is given, or ``None`` when they are set already: they only affect HNSW index
    scans, which only the knowledge store runs, so they are set when they change, not in
    every query."""
    wanted = (int(ef_search), int(settings.max_scan_tuples), iterative)
    if info.get("nyla_hnsw_settings") == wanted:
        return None
    return (
        "SELECT set_config('hnsw.ef_search', :ef, false), "
        "set_config('hnsw.iterative_scan', :mode, false), "
        "set_config('hnsw.max_scan_tuples', :mst, false)",
        {
            "ef": str(wanted[0]),
            "mode": "relaxed_order" if iterative else "off",
            "mst": str(wanted[1]),
        },
        wanted,
    )


#: table size up to which ``ef_search`` is used as configured
EF_REFERENCE_ROWS = 100_000
EF_MAX = 1000


def effective_ef_search(base: int, total: int, candidates: int) -> int:
    """The ``hnsw.ef_search`` of one search: ``base`` on tables up to 100k rows, growing as
    ``(total / 100k) ** 0.35`` beyond and as ``(total / candidates) ** 0.45`` under a filter.

    Measured (bench/rag.py and the former bench/rag_sweep.py, see docs/knowledge.md; m=16, ef_construction=64): ef 100 gives
    recall 0.98 at 100k but 0.87 at 1M, where 200 gives 0.949 and 225 0.956. An iterative
    scan under a 10 % filter of 1M reaches 0.86 at ef 200, 0.944 at 400, 0.973 at 600 and
    0.988 at 800: a filter passing a tenth of the rows needs about three times the
    candidates (1M: 224 unfiltered, 631 under a 10 % filter)."""
    size = max(1.0, total / EF_REFERENCE_ROWS) ** 0.35
    narrowing = max(1.0, total / max(candidates, 1)) ** 0.45
    return min(EF_MAX, max(base, math.ceil(base * size * narrowing)))


@dataclass(slots=True)
class SearchPlan:
    """How one vector search runs, decided from the counts: ``counted`` (readable chunks,
    their files and tokens), ``pool`` (rows to rank), whether the scope btree exists
    (``scoped``), the ``ef_search``, the ``exact`` path or HNSW, and whether HNSW starts
    with pgvector's iterative scan. ``ready``: what :mod:`nyla.knowledge.search_ready` made of
    a kept plan to run it again with no further decision (its statement, parameters and
    settings)."""

    counted: tuple[int, int, int]
    pool: int
    scoped: bool
    ef_search: int
    exact: bool
    iterative: bool
    ready: Any = field(default=None, compare=False, repr=False)

    def enough(self, found: int) -> bool:
        """Whether ``found`` rows of this plan's ranking are its answer: always with the
        iterative scan, else when as many as it ranks or as the scope holds (fewer: the
        filter passed fewer of the scan's rows than the counts said, and the iterative scan
        has to go on)."""
        return self.iterative or found >= min(self.pool, self.counted[0])


def plan_key(
    model: str,
    keys: Sequence[str],
    k: int,
    hybrid: bool,
    dims: int,
    settings: KnowledgeSettings,
) -> tuple[Any, ...]:
    """What an unfiltered search's :class:`SearchPlan` depends on besides the estimates."""
    return (
        model,
        tuple(keys),
        k,
        hybrid,
        dims,
        settings.ef_search,
        settings.adaptive_ef_search,
        settings.hybrid_candidates,
        settings.exact_threshold,
        settings.exact_cost_factor,
        settings.max_scan_tuples,
    )


async def plan_search(
    session: Executor,
    *,
    model: str,
    dims: int,
    k: int,
    hybrid: bool,
    file_where: str,
    where: str,
    params: dict[str, Any],
    settings: KnowledgeSettings,
    estimates: EstimateCache,
    built: set[tuple[str, int]],
    memo: tuple[Any, ...] | None = None,
    watched: bool = False,
) -> SearchPlan:
    """The plan of one search from the counts (``estimates`` while fresh, else counted;
    ``built``: the HNSW indexes known to exist), kept under ``memo`` in ``estimates`` as
    long as they are fresh (``watched``: ``session`` listens for file index changes, see
    :class:`EstimateCache`; the table's size and the scope btree, cheap to ask, are not
    notified and asked again after the ``ttl``)."""
    sizes_key = _sizes_key(where, params)
    counted = estimates.get(sizes_key, watched)
    if counted is None:
        generation = estimates.generation
        counted = await count_candidates(session, file_where, params)
        estimates.put(sizes_key, counted, generation)
    total = estimates.get(("total",))
    if total is None:
        total = await table_rows(session)
        estimates.put(("total",), total)
    candidates, files, _ = counted
    pool = max(k, settings.hybrid_candidates) if hybrid else k
    scoped = estimates.get(SCOPE_INDEX_KEY)
    if scoped is None:
        scoped = await _has_scope_index(session, estimates)
    ef_search = (
        effective_ef_search(settings.ef_search, total, candidates)
        if settings.adaptive_ef_search
        else settings.ef_search
    )
    # through the scope btree an exact ranking reads the chunks alone, no file's range
    probed = 0 if scoped else files
    if len(params) == 1 and settings.adaptive_ef_search and candidates < total:
        # a scope's own ef, learned from the index (search_calibration), else noted
        scope = (model, dims, tuple(params["keys"]), pool)
        learned = estimates.learned(scope, candidates, total)
        if learned is not None:
            ef_search = min(ef_search, learned)
        elif wants_calibration(candidates, total, pool, probed, settings):
            estimates.want(scope, ef_search, candidates, total)
    exact = prefer_exact(candidates, total, pool, settings, probed, ef_search)
    if not exact and (model, dims) not in built:
        exact = not await _index_exists(session, model, dims)
        if not exact:
            built.add((model, dims))
    iterative = exact or needs_iterative_scan(candidates, total, pool, ef_search)
    plan = SearchPlan(counted, pool, bool(scoped), ef_search, exact, iterative)
    if memo is not None:
        estimates.keep_plan(memo, plan, (sizes_key, ("total",), SCOPE_INDEX_KEY))
    return plan


def _sizes_key(where: str, params: dict[str, Any]) -> tuple[str, Any]:
    # the keys of an unfiltered search as they are (a tuple hashes in well under a
    # microsecond); a filtered one's parameters by their text
    if len(params) == 1:
        return (where, tuple(params["keys"]))
    return (where, repr(sorted(params.items())))


async def _has_scope_index(session: Executor, estimates: EstimateCache) -> bool:
    """Whether the scope btree exists (asked again when the noted answer is stale: another
    process may build it after a bulk load)."""
    # in the store's own schema: another schema on the search path may have one too
    rows = await _rows(
        session,
        "SELECT to_regclass(format('%I.%I', current_schema(), CAST(:name AS text))) IS NOT NULL",
        {"name": SCOPE_INDEX},
    )
    known = bool(rows[0][0])
    estimates.put(SCOPE_INDEX_KEY, known)
    return known


async def _index_exists(session: Executor, model: str, dims: int) -> bool:
    """True when the model's HNSW index exists in the current schema."""
    rows = await _rows(
        session, "SELECT to_regclass(:name) IS NOT NULL", {"name": hnsw_index_name(model, dims)}
    )
    return bool(rows[0][0])
