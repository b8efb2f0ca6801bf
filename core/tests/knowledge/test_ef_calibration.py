"""A scope's ef_search learned from the index (``search_calibration``): a filtered search
that could run on HNSW notes its scope, the retrieval measures it in the background (the
scope's own chunks as queries, their exact top k the truth) and later searches of the
scope plan with the smallest ef that reached the target recall."""

from __future__ import annotations

import asyncio
import random

from nyla.knowledge.search_calibration import TARGET_RECALL, calibrated_ef, ladder
from nyla.knowledge.search_plan import EstimateCache, wants_calibration
from nyla.knowledge.settings import KnowledgeSettings

from .conftest import unit_vector
from .test_iterative_scan import DIMS, MODEL, _exact, _hnsw, _near, _search, _seed


def test_a_scope_is_measured_only_where_its_ef_could_change_its_plan():
    settings = KnowledgeSettings()
    # every row readable: nothing filters, the rule's ef is the unfiltered one
    assert not wants_calibration(10_000, 10_000, 10, 0, settings)
    # a scope no larger than the rows a search ranks, or one an HNSW scan at the lowest
    # ef could not beat the exact ranking of (1 % of 100k): exact whatever the ef
    assert not wants_calibration(10, 100_000, 10, 0, settings)
    assert not wants_calibration(1_000, 100_000, 10, 0, settings)
    # 10 % of 100k: HNSW at a low ef is cheaper than ranking 10k rows exactly
    assert wants_calibration(10_000, 100_000, 10, 0, settings)


def test_the_efs_tried_double_from_k_up_to_the_rules():
    assert ladder(10, 282) == [10, 20, 40, 80, 160, 282]
    assert ladder(10, 10) == [10]
    assert ladder(4, 30) == [10, 20, 30]


def test_a_learned_ef_forgets_the_plans_made_without_it_and_goes_with_the_counts():
    cache = EstimateCache()
    cache.put(("total",), 100)
    cache.keep_plan("plan", "hnsw at the rule's ef", (("total",),))
    cache.want("scope", 282, 10_000, 100_000)
    cache.learn("scope", 20)
    assert cache.learned("scope", 10_000, 100_000) == 20 and "scope" not in cache.wanted
    assert cache.plan("plan") is None
    cache.clear()  # a bulk load changed the rows: measured again
    assert cache.learned("scope", 10_000, 100_000) is None


def test_a_learned_ef_is_learned_again_once_the_scope_or_the_table_has_moved():
    cache = EstimateCache()
    cache.want("scope", 282, 10_000, 100_000)  # a 10 % scope of 100k rows
    cache.learn("scope", 20)
    # grown together, or by less than double: the same filter, the same ef
    assert cache.learned("scope", 19_000, 190_000) == 20
    assert cache.learned("scope", 6_000, 100_000) == 20
    # the scope's share fell below half (4 %): a filter that needs another ef
    assert cache.learned("scope", 4_000, 100_000) is None
    assert cache.learned("scope", 10_000, 100_000) is None  # forgotten, not kept aside
    cache.want("scope", 282, 10_000, 100_000)
    cache.learn("scope", 20)
    # the share held but the table grew past double: a larger graph to walk
    assert cache.learned("scope", 25_000, 250_000) is None


async def test_a_scopes_searches_run_at_the_ef_learned_from_its_own_chunks(kernel):
    rng = random.Random(12)
    centres = [unit_vector(rng, DIMS) for _ in range(6)]
    owners = {
        "ann": [_near(rng, rng.choice(centres), 0.4) for _ in range(150)],
        "bob": [_near(rng, rng.choice(centres), 0.4) for _ in range(450)],
    }
    mine = await _seed(kernel, owners)
    await _hnsw(kernel, 100)
    settings = kernel.knowledge.settings
    settings.adaptive_ef_search = True  # the rule grows ef under ann's quarter of the rows
    retrieval, estimates = kernel.knowledge.retrieval, kernel.knowledge.indexes.estimates
    queries = [_near(rng, rng.choice(centres), 0.4) for _ in range(12)]
    first = await _search(kernel, "ann", queries[0], k=10)
    assert first.path == "hnsw"
    [(scope, ceiling)] = estimates.wanted.items()
    assert scope == (MODEL, DIMS, ("personal:ann", "global"), 10) and ceiling > 100
    await retrieval.calibrated()
    learned = estimates.learned(scope)
    assert learned in ladder(10, ceiling) and learned < ceiling and not estimates.wanted

    async def ef(conn):
        return int((await conn.rows("SELECT current_setting('hnsw.ef_search')"))[0][0])

    # held-out queries at the learned ef: the recall the measurement promised (a margin
    # for 12 queries against 16 samples)
    found = 0
    for query in queries:
        result = await _search(kernel, "ann", query, k=10)
        assert result.path == "hnsw" and await kernel.db.read_driver(ef) == learned
        assert all(h.text.startswith("ann ") for h in result.hits)
        found += len({h.text for h in result.hits} & set(_exact(mine["ann"], query, 10)))
    assert found >= (TARGET_RECALL - 0.1) * 10 * len(queries)


async def test_nothing_is_learned_where_the_planner_would_not_scan_the_index(kernel):
    rng = random.Random(13)
    await _seed(kernel, {"ann": [unit_vector(rng, DIMS) for _ in range(40)],
                         "bob": [unit_vector(rng, DIMS) for _ in range(40)]})  # fmt: skip

    # a sequential scan is cheapest on 80 rows, and nothing forces the index here
    async def measure(conn):
        return await calibrated_ef(
            conn, model=MODEL, dims=DIMS, keys=("personal:ann",), k=10, ceiling=200,
            max_scan_tuples=20_000,
        )  # fmt: skip

    assert await kernel.db.read_driver(measure) is None


async def test_a_measurement_left_on_an_ended_loop_does_not_stop_the_next(kernel):
    # a command or test that searched on its own loop, which ended before the background
    # measurement did: that task never finishes, and a search on this loop measures anew
    rng = random.Random(14)
    centres = [unit_vector(rng, DIMS) for _ in range(6)]
    await _seed(kernel, {"ann": [_near(rng, rng.choice(centres), 0.4) for _ in range(150)],
                         "bob": [_near(rng, rng.choice(centres), 0.4) for _ in range(450)]})  # fmt: skip
    await _hnsw(kernel, 100)
    kernel.knowledge.settings.adaptive_ef_search = True
    retrieval, estimates = kernel.knowledge.retrieval, kernel.knowledge.indexes.estimates
    ended = asyncio.new_event_loop()
    retrieval._calibrating = ended.create_future()  # pending for ever, as such a task is
    try:
        await _search(kernel, "ann", _near(rng, centres[0], 0.4), k=10)
        [scope] = estimates.wanted
        await asyncio.wait_for(retrieval.calibrated(), 60)
        assert estimates.learned(scope) is not None and not estimates.wanted
    finally:
        ended.close()
