"""The ``ef_search`` a scope's iterative HNSW scan needs, learned from the index itself.

:func:`~nyla.knowledge.search_plan.effective_ef_search` grows ``ef_search`` under a filter
by a rule fitted on one corpus (a 10 % filter of 1M rows needs about three times the
candidates). How many a filter really needs depends on the data: on the clustered
vectors of bench/retrieval_latency.py an iterative scan at ef 10 already finds 0.97-1.0 of
the exact top 10 in a 10 % scope, where the rule gives ef 282 (and so ranked a 10 % scope
of 10k rows exactly: 1.3-1.9x the cost of the best plan at the same recall).

So for a scope whose search could run on HNSW the first search notes it (:func:`~nyla.knowledge.search_plan.wants_calibration`) and :meth:`~nyla.knowledge.retrieval.Retrieval.search` measures it in the
background (:func:`calibrated_ef`): :data:`SAMPLES` of the scope's own chunks are the
queries (each left out of its own answer), their exact top k the truth, and the iterative
scan runs at rising ``ef_search`` from k up to the rule's; the smallest that reaches
:data:`TARGET_RECALL` on average is kept (:meth:`EstimateCache.learn
<nyla.knowledge.search_plan.EstimateCache.learn>`) until the statistics change. Until
then, where the measurement is not possible, and where no ef reaches the target, the rule
stands. (Not the smallest ef whose recall the samples cannot tell from the best one's:
a chunk of the index is an easy query, the graph holds it. At 10 % of the bench's 1M rows
its own chunks found 0.90-0.93 from ef 40-80 on, flat up to 631, where the bench's queries
find 0.75 at ef 40 and 0.89 at 400; learning ef 40 there cut recall to 0.75. Queries
between two chunks found 0.33-0.44 at ef 40 and 0.83-0.85 at 631, harder than the bench's.) A learned ef only
chooses a cost: the iterative scan still goes on until k readable rows are found.
"""

from __future__ import annotations

import math
from typing import Any

from nyla.knowledge.search_driver import ReadConnection
from nyla.knowledge.search_sql import with_keys
from nyla.knowledge.vectors import hnsw_index_name, index_expr, sql_literal, vector_expr

#: the recall a learned ef_search must reach on the samples (mean over them)
TARGET_RECALL = 0.95
#: the scope's chunks used as queries
SAMPLES = 16


def ladder(k: int, ceiling: int) -> list[int]:
    """The ef values tried: k, doubling, up to ``ceiling`` (the rule's), which is last."""
    efs, ef = [], max(k, 10)
    while ef < ceiling:
        efs.append(ef)
        ef *= 2
    return [*efs, ceiling]


async def calibrated_ef(
    conn: ReadConnection,
    *,
    model: str,
    dims: int,
    keys: tuple[str, ...],
    k: int,
    ceiling: int,
    max_scan_tuples: int,
) -> int | None:
    """The smallest ef in :func:`ladder` whose iterative scan finds :data:`TARGET_RECALL`
    of the exact top ``k`` of :data:`SAMPLES` of the scope's chunks (``None``: too few
    chunks, or the planner would not scan the HNSW index here: nothing to learn). Runs in
    one transaction whose settings (``SET LOCAL``) end with it."""
    scope = f"c.owner_key = ANY(:keys) AND c.embedding_model = {sql_literal(model)}"
    # for the driver, the keys written in (a key's own ":" or "%" is never a parameter)
    hnsw = with_keys(
        f"SELECT c.id FROM knowledge_chunk c WHERE {scope} "
        f"ORDER BY {index_expr(dims, 'c.embedding')} <=> CAST(:q AS halfvec({dims})) "
        f"LIMIT {k + 1}",
        keys,
    )
    exact = with_keys(
        f"SELECT c.id FROM knowledge_chunk c WHERE {scope} "
        f"ORDER BY {vector_expr(dims, 'c.embedding')} <=> CAST(:q AS vector({dims})) "
        f"LIMIT {k + 1}",
        keys,
    )
    sample = with_keys(
        f"SELECT c.id, c.embedding::text FROM knowledge_chunk c WHERE {scope} "
        f"ORDER BY random() LIMIT {SAMPLES}",
        keys,
    )
    driver = conn.driver
    async with driver.transaction(force_rollback=True):
        cursor = driver.cursor()
        await cursor.execute(sample, {})
        samples: list[Any] = await cursor.fetchall()
        if len(samples) < SAMPLES:
            return None
        await cursor.execute("SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true)")
        await cursor.execute(
            "SELECT set_config('hnsw.max_scan_tuples', %s, true)", (str(max_scan_tuples),)
        )
        await cursor.execute(f"EXPLAIN {hnsw}", {"q": samples[0][1]})
        plan = "\n".join(r[0] for r in await cursor.fetchall())
        if hnsw_index_name(model, dims) not in plan:
            return None
        truth: list[set[int]] = []
        for chunk, vector in samples:
            await cursor.execute(exact, {"q": vector})
            nearest = [r[0] for r in await cursor.fetchall() if r[0] != chunk]
            truth.append(set(nearest[:k]))
        for ef in ladder(k, ceiling):
            await cursor.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(ef),))
            found = 0
            for (chunk, vector), best in zip(samples, truth, strict=True):
                await cursor.execute(hnsw, {"q": vector})
                ids = [r[0] for r in await cursor.fetchall() if r[0] != chunk][:k]
                found += len(best.intersection(ids))
            if found >= math.ceil(TARGET_RECALL * SAMPLES * k):
                return ef
    return ceiling
