"""A scope's ef_search learned from the index (``search_calibration``): a filtered search
that could run on HNSW notes its scope, the retrieval measures it in the background (the
scope's own chunks as queries, their exact top k the truth) and later searches of the
scope plan with the smallest ef that reached the target recall."""

from __future__ import annotations

import asyncio
import random

import pytest
from sqlalchemy import text

from nyla.knowledge import retrieval as retrieval_module
from nyla.knowledge import search_calibration
from nyla.knowledge.recent_queries import RecentQueries
from nyla.knowledge.search_calibration import (
    TARGET_RECALL,
    calibrated_ef,
    chosen_ef,
    ladder,
    plateau,
)
from nyla.knowledge.search_plan import EstimateCache, wants_calibration
from nyla.knowledge.settings import KnowledgeSettings
from nyla.knowledge.vectors import ChunkRow
from nyla.models.knowledge import SearchQuery

from .conftest import ctx, seed_chunks, unit_vector
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
    assert scope == (MODEL, DIMS, ("personal:ann", "global"), 10, "ann") and ceiling > 100
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


def _counted(curve: dict[int, list[int]]):
    """A measurement of counted samples (ef -> each sample's found) for ``chosen_ef``;
    an ef between two counted ones finds what the lower one found."""
    asked: list[int] = []

    async def found_at(ef: int) -> list[int]:
        asked.append(ef)
        return curve[max(e for e in curve if e <= ef)]

    return found_at, asked


async def test_on_a_plateau_of_real_queries_the_smallest_ef_they_cannot_tell_from_the_best():
    # 20 queries, k 10, no ef reaches 0.95: recall rises to 320, one query finds one hit
    # more at 600 (within the noise), two queries one more each beyond 400 (told apart)
    base = [9, 8, 9, 9, 8, 9, 9, 9, 8, 9, 9, 9, 9, 8, 9, 9, 9, 9, 8, 9]
    best = [*base]
    best[3] += 1
    two_short = [n - (i in (0, 1)) for i, n in enumerate(base)]
    curve = {10: [n - 3 for n in base], 160: [n - 2 for n in base], 320: two_short,
             400: base, 600: best}  # fmt: skip
    found_at, asked = _counted(curve)
    # ladder 10, 20, 40, 80, 160, 320, 600: 320 is told apart from the best, 600 not; the
    # step 320-600 is then halved three times: 438 is within the noise (400's count), 374
    # not (320's), 405 is (400's)
    ef = await chosen_ef(found_at, 10, 600, on_plateau=True)
    assert ef == 405 and asked[-3:] == [438, 374, 405]
    # the same counts from the scope's own chunks (easy queries): the rule's ef stands
    found_at, _ = _counted(curve)
    assert await chosen_ef(found_at, 10, 600, on_plateau=False) == 600
    # one query short of the best is within the noise, two are not
    assert plateau(best, base) and not plateau(best, two_short) and plateau(base, best)


async def test_where_the_target_is_reached_the_step_before_it_is_narrowed():
    hit, miss = [10] * 19 + [9], [9] * 12 + [10] * 8  # 0.995 and 0.94
    found_at, asked = _counted({10: miss, 30: hit})
    # 10 and 20 miss 0.95, 40 reaches it; the step 20-40 halved three times: 28 misses,
    # 33 and 30 reach it
    assert await chosen_ef(found_at, 10, 100, on_plateau=False) == 30
    assert asked == [10, 20, 40, 28, 33, 30]


def test_recent_queries_are_copied_bounded_and_kept_per_reader_key():
    recent = RecentQueries(queries=3, readers=2)
    vector = [0.5, 0.25]
    assert recent.note("ann", vector) == 1
    vector[0] = 9.0  # the caller's list changed afterwards: the noted query is as it was
    assert recent.full("ann") is None  # too few to measure with
    for n in range(4):
        recent.note("ann", [float(n), 1.0])
    assert recent.full("ann") == [(1.0, 1.0), (2.0, 1.0), (3.0, 1.0)]  # the newest three
    recent.note("bob", [1.0, 1.0])
    assert recent.count("bob") == 1 and recent.count("ann") == 3
    recent.note("cid", [1.0, 1.0])  # a third reader key: the least recently noted goes
    assert recent.count("ann") == 0 and recent.count("bob") == 1


async def _seed_owned(kernel, owners: dict[str, list[list[float]]]) -> None:
    """One one-chunk file per vector under each owner key."""
    rng = random.Random(3)
    rows, files = [], {}
    for owner, vectors in owners.items():
        for i, vec in enumerate(vectors):
            file_id = f"{owner}-f{i}"
            files[file_id] = owner
            rows.append(ChunkRow(file_id, 0, f"{owner} chunk {i}", "", "text", 2,
                                 f"{rng.getrandbits(128):032x}", owner, MODEL, vec))  # fmt: skip
    await seed_chunks(kernel, rows, files, MODEL, DIMS)
    async with kernel.db.session() as s:  # seed_chunks writes personal file index rows
        await s.execute(
            text(
                "UPDATE knowledge_file_index SET owner_key = substr(owner_key, 10), "
                "scope = 'mandate'"
            )
        )
    kernel.knowledge.indexes.estimates.clear()


async def test_a_readers_own_queries_learn_the_plateau_and_no_other_readers_do(kernel, monkeypatch):
    rng = random.Random(16)
    centres = [unit_vector(rng, DIMS) for _ in range(6)]
    # ann and bob read the same mandate's files: the same owner keys, two readers
    await _seed_owned(kernel, {
        "mandate:m": [_near(rng, rng.choice(centres), 0.4) for _ in range(150)],
        "mandate:other": [_near(rng, rng.choice(centres), 0.4) for _ in range(450)]})  # fmt: skip
    await _hnsw(kernel, 100)
    kernel.knowledge.settings.adaptive_ef_search = True
    # no ef can find more than all: the target is out of reach, every ef on the plateau
    monkeypatch.setattr(search_calibration, "TARGET_RECALL", 1.01)
    retrieval, estimates = kernel.knowledge.retrieval, kernel.knowledge.indexes.estimates
    retrieval.recent = RecentQueries(queries=20)
    measured: list[tuple[str, object]] = []
    real = search_calibration.calibrated_ef

    async def spy(conn, **kw):
        measured.append((kw["keys"], kw["queries"]))
        return await real(conn, **kw)

    monkeypatch.setattr(retrieval_module, "calibrated_ef", spy)

    async def search(user: str, vector: list[float]):
        return await kernel.knowledge.search(SearchQuery(
            text="", vector=vector, model=MODEL, context=ctx(user, mandate="m"),
            scopes=["mandate"], k=10, hybrid=False))  # fmt: skip

    # (no search while a measurement runs: it would take a second pooled connection,
    # where _hnsw's planner settings are not made)
    anns = [_near(rng, rng.choice(centres), 0.4) for _ in range(20)]
    await search("ann", anns[0])
    [(ann_scope, ceiling)] = estimates.wanted.items()
    await retrieval.calibrated()
    # the scope's chunks alone never learn a plateau: the rule's ef
    assert estimates.learned(ann_scope) == ceiling and measured[-1][1] is None
    for vector in anns[1:]:
        await search("ann", vector)
    await retrieval.calibrated()
    # once ann had searched 20 times, measured again on those 20 queries
    keys, queries = measured[-1]
    assert keys == ("mandate:m",) and queries is not None and len(queries) == 20
    for noted, vector in zip(queries, anns, strict=True):
        assert list(noted) == pytest.approx(vector, abs=1e-6)  # single precision
    learned = estimates.learned(ann_scope)
    assert learned is not None and learned < ceiling
    # bob reads the same keys: his scope is his own, measured on the chunks until he
    # has searched enough himself; none of ann's queries is used for him
    await search("bob", anns[0])
    [bob_scope] = estimates.wanted
    assert bob_scope != ann_scope and bob_scope[:4] == ann_scope[:4]
    await retrieval.calibrated()
    assert measured[-1][1] is None and estimates.learned(bob_scope) == ceiling
    assert retrieval.recent.count(bob_scope) == 1
    assert estimates.learned(ann_scope) == learned
