"""The ``ef_search`` a scope's iterative HNSW scan needs, learned from the index itself.

:func:`~nyla.knowledge.search_plan.effective_ef_search` grows ``ef_search`` under a filter
by a rule fitted on one corpus (a 10 % filter of 1M rows needs about three times the
candidates). How many a filter really needs depends on the data: on the clustered
vectors of bench/retrieval_latency.py an iterative scan at ef 10 already finds 0.97-1.0 of
the exact top 10 in a 10 % scope, where the rule gives ef 282 (and so ranked a 10 % scope
of 10k rows exactly: 1.3-1.9x the cost of the best plan at the same recall).

So for a scope whose search could run on HNSW the first search notes it
(:func:`~nyla.knowledge.search_plan.wants_calibration`) and
:meth:`~nyla.knowledge.retrieval.Retrieval.search` measures it in the background
(:func:`calibrated_ef`): the exact top k of sample queries is the truth, and the iterative
scan runs at rising ``ef_search`` from k up to the rule's (:func:`ladder`, then
:func:`chosen_ef` narrows the step it stopped at); the smallest that reaches
:data:`TARGET_RECALL` on average is kept (:meth:`EstimateCache.learn
<nyla.knowledge.search_plan.EstimateCache.learn>`) until the statistics change.

The first samples are :data:`SAMPLES` of the scope's own chunks, each left out of its own
answer: there is no other query yet. Once the reader has searched the scope
:data:`~nyla.knowledge.recent_queries.QUERIES` times, the scope is measured again on those
queries (:mod:`nyla.knowledge.recent_queries`: kept in process memory per reader key
only). Only real queries may learn an ef where none reaches the target (the plateau: the
smallest ef whose recall on them cannot be told from the best one's, :func:`plateau`). A
chunk of the index is an easy query, the graph holds it: at 10 % of the bench's 1M rows
its own chunks found 0.90-0.93 from ef 40-80 on, flat up to the rule's 631, where the
bench's queries find 0.75 at ef 40, 0.87 at 320 and 0.89 from 400 on; learning ef 40
from the chunks cut recall to 0.75 (tried, taken back). So on chunks alone the rule's ef
stands where the target is out of reach. A learned ef only chooses a cost: the iterative
scan still goes on until k readable rows are found.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from nyla.knowledge.search_driver import ReadConnection
from nyla.knowledge.search_sql import with_keys
from nyla.knowledge.vectors import hnsw_index_name, index_expr, sql_literal, vector_expr

#: the recall a learned ef_search must reach on the samples (mean over them)
TARGET_RECALL = 0.95
#: the scope's chunks used as queries
SAMPLES = 16
#: halvings of the ladder's last step (between the last ef that did not do and the first
#: that did): the doubling ladder alone jumps from 320 to the rule's 631 at 10 % of 1M
#: rows, where the bench's queries find 0.87 and 0.89, and 0.89 from 400 on
REFINE = 3

#: the number of each sample's exact top k an ef found, one per sample
Found = list[int]


def ladder(k: int, ceiling: int) -> list[int]:
    """The ef values tried: k, doubling, up to ``ceiling`` (the rule's), which is last."""
    efs, ef = [], max(k, 10)
    while ef < ceiling:
        efs.append(ef)
        ef *= 2
    return [*efs, ceiling]


def plateau(best: Found, found: Found) -> bool:
    """Whether the samples cannot tell ``found`` from ``best`` (the same samples, so
    per-sample differences): their mean is no larger than its standard error (no fixed
    margin; one sample short of the best is within it, two samples one hit short each are
    not). For integer differences ``d`` that is ``sum(d) ** 2 <= sum(d * d)``, exact."""
    diffs = [b - f for b, f in zip(best, found, strict=True)]
    total = sum(diffs)
    return total <= 0 or total * total <= sum(d * d for d in diffs)


async def chosen_ef(
    found_at: Callable[[int], Awaitable[Found]], k: int, ceiling: int, *, on_plateau: bool
) -> int:
    """The ef to keep, measured through ``found_at`` (ef -> each sample's found): the
    smallest in :func:`ladder` whose mean recall reaches :data:`TARGET_RECALL`; where none
    does, with ``on_plateau`` (real queries) the smallest whose recall :func:`plateau`
    cannot tell from the best one's, else ``ceiling``. Either is then narrowed between it
    and the ef before it by :data:`REFINE` geometric halvings."""
    tried: dict[int, Found] = {}

    async def at(ef: int) -> Found:
        if ef not in tried:
            tried[ef] = await found_at(ef)
        return tried[ef]

    def reaches(found: Found) -> bool:
        return sum(found) >= math.ceil(TARGET_RECALL * len(found) * k)

    efs = ladder(k, ceiling)
    for i, ef in enumerate(efs):
        if reaches(await at(ef)):
            return await _narrowed(at, efs[i - 1] if i else None, ef, reaches)
    if not on_plateau:
        return ceiling
    best = max((tried[ef] for ef in efs), key=sum)  # the first of equals: the smallest ef
    i = next(i for i, ef in enumerate(efs) if plateau(best, tried[ef]))
    return await _narrowed(
        at, efs[i - 1] if i else None, efs[i], lambda found: plateau(best, found)
    )


async def _narrowed(
    at: Callable[[int], Awaitable[Found]], low: int | None, high: int, good: Callable[[Found], bool]
) -> int:
    """The smallest ef found ``good`` between ``low`` (not) and ``high`` (good), halving
    the step geometrically :data:`REFINE` times."""
    for _ in range(REFINE):
        if low is None:
            break
        mid = round(math.sqrt(low * high))
        if not low < mid < high:
            break
        if good(await at(mid)):
            high = mid
        else:
            low = mid
    return high


async def calibrated_ef(
    conn: ReadConnection,
    *,
    model: str,
    dims: int,
    keys: tuple[str, ...],
    k: int,
    ceiling: int,
    max_scan_tuples: int,
    queries: Sequence[Sequence[float]] | None = None,
) -> int | None:
    """The :func:`chosen_ef` of the scope's iterative scan, measured on ``queries`` (the
    reader's recent ones) or else :data:`SAMPLES` of the scope's chunks (``None``: too few
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
    driver = conn.driver
    async with driver.transaction(force_rollback=True):
        cursor = driver.cursor()
        samples: list[Any]
        if queries is None:
            await cursor.execute(
                with_keys(
                    f"SELECT c.id, c.embedding::text FROM knowledge_chunk c WHERE {scope} "
                    f"ORDER BY random() LIMIT {SAMPLES}",
                    keys,
                ),
                {},
            )
            samples = await cursor.fetchall()
            if len(samples) < SAMPLES:
                return None
        else:  # no chunk of the index is left out of a real query's answer
            samples = [(None, "[" + ",".join(map(repr, q)) + "]") for q in queries]
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

        async def found_at(ef: int) -> Found:
            await cursor.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(ef),))
            found = []
            for (chunk, vector), best in zip(samples, truth, strict=True):
                await cursor.execute(hnsw, {"q": vector})
                ids = [r[0] for r in await cursor.fetchall() if r[0] != chunk][:k]
                found.append(len(best.intersection(ids)))
            return found

        return await chosen_ef(found_at, k, ceiling, on_plateau=queries is not None)
