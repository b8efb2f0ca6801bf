"""Planning one knowledge search: exact ranking or HNSW (from the file index's counts),
and the ``ef_search`` a table size and a filter need."""

from __future__ import annotations

import math
import time
from typing import Any

from nyla.knowledge.search_driver import Executor
from nyla.knowledge.search_driver import rows as _rows
from nyla.knowledge.settings import KnowledgeSettings


class EstimateCache:
    """Candidate counts per (filter, keys) for ``ttl`` seconds (bounded size)."""

    def __init__(self, ttl: float = 30.0, size: int = 4096) -> None:
        self.ttl = ttl
        self.size = size
        self._items: dict[Any, tuple[float, Any]] = {}

    def get(self, key: Any) -> Any:
        """The cached estimate, or ``None`` when missing or expired."""
        item = self._items.get(key)
        if item is None or time.monotonic() - item[0] > self.ttl:
            return None
        return item[1]

    def put(self, key: Any, value: Any) -> None:
        """Remember ``value`` (the oldest entry goes when full)."""
        if len(self._items) >= self.size:
            self._items.pop(next(iter(self._items)))
        self._items[key] = (time.monotonic(), value)

    def clear(self) -> None:
        """Forget everything (after bulk loads change the row counts)."""
        self._items.clear()


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


def prefer_exact(
    candidates: int,
    total: int,
    limit: int,
    settings: KnowledgeSettings,
    files: int = 0,
) -> bool:
    """Exact ranking when it costs less than an iterative HNSW scan would.

    Exact probes the ``files``' primary-key ranges (:data:`FILE_PROBE_COST` each) and
    computes ``candidates`` distances; HNSW with iterative scans visits about
    ``limit * total / candidates`` graph nodes, each costing several distance computations
    (``exact_cost_factor`` squared). Exact wins while its cost is at most ``factor**2 *
    limit * total / candidates``, and always at or below ``exact_threshold``. Measured (2
    cores): 10k readable rows of 100k rank faster on HNSW, 10k of 1M faster exactly; a 10 %
    scope of 10k one-chunk files faster on HNSW (1,000 probes), a 1 % one exactly.
    """
    cost = candidates + FILE_PROBE_COST * files
    if cost <= settings.exact_threshold:
        return True
    hnsw = settings.exact_cost_factor**2 * limit * max(total, candidates) / max(candidates, 1)
    return cost <= hnsw


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
