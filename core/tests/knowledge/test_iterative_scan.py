"""HNSW searches without pgvector's iterative scan where the counts say (nearly) every row is
readable: the owner-key filter stays in the statement, so a reader never sees another's
chunk however wrong the counts are, and a search whose filter passed too few of the scan's
rows runs again with the iterative scan and still returns k hits."""

from __future__ import annotations

import random

from sqlalchemy import text

from nyla.knowledge.search import _scope_where, needs_iterative_scan
from nyla.knowledge.search_driver import OwnerKeys, QueryVector, adapt, driver_sql
from nyla.knowledge.search_sql import ranking_sql
from nyla.knowledge.vectors import SCOPE_INDEX, ChunkRow, hnsw_index_name
from nyla.models.knowledge import SearchQuery

from .conftest import ctx, seed_chunks, unit_vector

DIMS = 64  # the scripted model's embedding dimension
MODEL = "scripted:model"


def test_the_iterative_scan_is_needed_unless_nearly_every_row_is_readable():
    # every row readable: the scan's ef_search rows all pass, enough once ef >= limit
    assert not needs_iterative_scan(10_000, 10_000, 10, 10)
    assert needs_iterative_scan(10_000, 10_000, 10, 9)
    # stale counts that say more than every row change nothing
    assert not needs_iterative_scan(12_000, 10_000, 10, 40)
    # 90 % readable: 40 rows give 36 readable ones on average, enough for 10
    assert not needs_iterative_scan(9_000, 10_000, 10, 40)
    # ... but 10 rows would give 9: short
    assert needs_iterative_scan(9_000, 10_000, 10, 10)
    # 99 % of 10 rows: one search in ten would be short; the iterative scan goes on instead
    assert needs_iterative_scan(9_900, 10_000, 10, 10)
    # a filter passing a tenth of the rows needs it even at a large ef
    assert needs_iterative_scan(1_000, 10_000, 10, 60)
    assert needs_iterative_scan(0, 10_000, 10, 1000)


def _near(rng: random.Random, base: list[float], spread: float) -> list[float]:
    v = [x + rng.gauss(0, spread) for x in base]
    n = sum(x * x for x in v) ** 0.5
    return [x / n for x in v]


async def _seed(kernel, owners: dict[str, list[list[float]]]) -> dict[str, list[tuple]]:
    """One one-chunk file per vector, ``owners[user]`` the user's vectors; returns
    {user: [(text, vector)]}."""
    rng = random.Random(3)
    rows, files, mine = [], {}, {}
    for user, vectors in owners.items():
        for i, vec in enumerate(vectors):
            file_id, body = f"{user}-f{i}", f"{user} chunk {i}"
            files[file_id] = user
            mine.setdefault(user, []).append((body, vec))
            rows.append(
                ChunkRow(
                    file_id, 0, body, "", "text", 2, f"{rng.getrandbits(128):032x}",
                    f"personal:{user}", MODEL, vec,
                )
            )  # fmt: skip
    await seed_chunks(kernel, rows, files, MODEL, DIMS)
    return mine


def _exact(mine: list[tuple], query: list[float], k: int) -> list[str]:
    """The texts of the ``k`` rows nearest ``query`` (cosine; the vectors are unit)."""
    by_distance = sorted(
        mine, key=lambda tv: -sum(a * b for a, b in zip(tv[1], query, strict=True))
    )
    return [body for body, _ in by_distance[:k]]


async def _search(kernel, user: str, vector: list[float], k: int):
    return await kernel.knowledge.search(
        SearchQuery(
            text="", vector=vector, model=MODEL, context=ctx(user, mandate=None), k=k, hybrid=False
        )
    )


async def _mode(kernel) -> str:
    async def shown(conn):
        return (await conn.rows("SELECT current_setting('hnsw.iterative_scan')"))[0][0]

    return str(await kernel.db.read_driver(shown))


async def _hnsw(kernel, ef: int) -> None:
    """Searches on the HNSW index at ``ef``: the path chosen whatever the counts, and the
    index scan planned even on a table this small (the scope btree dropped, sequential
    scans off on the pooled connection before any search prepares its statement there);
    the plan is checked."""
    settings = kernel.knowledge.settings
    settings.exact_threshold, settings.exact_cost_factor = 0, 0.0
    settings.adaptive_ef_search, settings.ef_search = False, ef
    async with kernel.db.session() as s:
        await s.execute(text(f"DROP INDEX {SCOPE_INDEX}"))
    kernel.knowledge.indexes.estimates.clear()
    file_where, where = _scope_where(MODEL)
    ranking = driver_sql(ranking_sql(file_where, where, DIMS, 5, False, False, True))

    async def plan(conn):
        await conn.rows("SELECT set_config('enable_seqscan', 'off', false)")
        adapt(conn)
        params = {"q": QueryVector([1.0] + [0.0] * (DIMS - 1)), "keys": OwnerKeys(["x"])}
        return "\n".join(r[0] for r in await conn.rows(f"EXPLAIN {ranking}", params))

    assert hnsw_index_name(MODEL, DIMS) in await kernel.db.read_driver(plan)


async def test_a_scope_of_every_row_is_ranked_without_the_iterative_scan(kernel):
    rng = random.Random(7)
    mine = await _seed(kernel, {"ann": [unit_vector(rng, DIMS) for _ in range(200)]})
    await _hnsw(kernel, 40)
    for n in range(5):
        query = _near(rng, mine["ann"][n * 31][1], 0.05)
        found = await _search(kernel, "ann", query, k=10)
        assert found.path == "hnsw" and await _mode(kernel) == "off"
        exact = _exact(mine["ann"], query, 10)
        # the same ranking as the exact one, within the index's recall
        assert found.hits[0].text == exact[0]
        assert len({h.text for h in found.hits} & set(exact)) >= 9
        assert [h.score for h in found.hits] == sorted((h.score for h in found.hits), reverse=True)


async def test_stale_counts_never_show_another_readers_rows_and_still_give_k_hits(kernel):
    rng = random.Random(8)
    target = unit_vector(rng, DIMS)
    ann = [unit_vector(rng, DIMS) for _ in range(200)] + [_near(rng, target, 0.5) for _ in range(8)]
    # bob's chunks are the nearest of all to the query: a scan of the 10 nearest rows finds
    # only his, which ann's filter drops
    bob = [_near(rng, target, 0.01) for _ in range(30)]
    mine = await _seed(kernel, {"ann": ann, "bob": bob})
    await _hnsw(kernel, 10)
    # counts from before bob's files came (they are cached for seconds): every row ann's
    indexes = kernel.knowledge.indexes
    await _search(kernel, "ann", target, k=5)
    indexes.estimates.put(("total",), len(ann))
    found = await _search(kernel, "ann", target, k=5)
    assert found.path == "hnsw" and found.candidates == len(ann)
    assert all(h.text.startswith("ann ") for h in found.hits)
    # the filter passed none of the first scan's rows: it ran again with the iterative scan
    assert await _mode(kernel) == "relaxed_order"
    exact = _exact(mine["ann"], target, 5)
    assert len(found.hits) == 5 and found.hits[0].text == exact[0]
    assert len({h.text for h in found.hits} & set(exact)) >= 4
    # bob reads only his own, whatever the counts say
    indexes.estimates.put(("total",), len(bob))
    for_bob = await _search(kernel, "bob", target, k=5)
    assert len(for_bob.hits) == 5 and all(h.text.startswith("bob ") for h in for_bob.hits)


async def test_counts_of_a_part_of_the_rows_keep_the_iterative_scan(kernel):
    rng = random.Random(9)
    await _seed(
        kernel,
        {"ann": [unit_vector(rng, DIMS) for _ in range(50)],
         "bob": [unit_vector(rng, DIMS) for _ in range(150)]},
    )  # fmt: skip
    await _hnsw(kernel, 10)
    found = await _search(kernel, "ann", unit_vector(rng, DIMS), k=5)
    assert found.path == "hnsw" and len(found.hits) == 5
    assert all(h.text.startswith("ann ") for h in found.hits)
    assert await _mode(kernel) == "relaxed_order"


class _Counted:
    """``nyla.knowledge.search.vector_ranks`` counted: the general path's runs."""

    def __init__(self, monkeypatch) -> None:
        import nyla.knowledge.search as search

        self.calls = 0
        ranks = search.vector_ranks

        async def counted(*args, **kwargs):
            self.calls += 1
            return await ranks(*args, **kwargs)

        monkeypatch.setattr(search, "vector_ranks", counted)


async def test_a_kept_plan_runs_its_ready_ranking_and_gives_the_same_hits(kernel, monkeypatch):
    rng = random.Random(10)
    mine = await _seed(kernel, {"ann": [unit_vector(rng, DIMS) for _ in range(200)]})
    await _hnsw(kernel, 40)
    query = _near(rng, mine["ann"][17][1], 0.05)
    first = await _search(kernel, "ann", query, k=10)
    general = _Counted(monkeypatch)
    again = await _search(kernel, "ann", query, k=10)
    # planned and made ready once: the statement ran with no decision taken again
    assert general.calls == 0
    assert again.path == "hnsw" and again.candidates == first.candidates
    assert [(h.chunk_id, h.score, h.file_name) for h in again.hits] == [
        (h.chunk_id, h.score, h.file_name) for h in first.hits
    ]
    assert again.hits == first.hits

    # a connection whose settings are not known (a rolled-back transaction forgets them)
    # takes the general path, which sets them, and the next search is ready again
    async def forget(conn):
        conn.info.pop("nyla_hnsw_settings", None)

    await kernel.db.read_driver(forget)
    assert (await _search(kernel, "ann", query, k=10)).hits == first.hits
    assert general.calls == 1 and await _mode(kernel) == "off"
    assert (await _search(kernel, "ann", query, k=10)).hits == first.hits
    assert general.calls == 1


async def test_a_ready_plan_takes_the_fast_path_and_keeps_each_readers_scope(kernel, monkeypatch):
    import nyla.knowledge.retrieval as retrieval

    rng = random.Random(12)
    mine = await _seed(
        kernel,
        {"ann": [unit_vector(rng, DIMS) for _ in range(120)],
         "bob": [unit_vector(rng, DIMS) for _ in range(120)]},
    )  # fmt: skip
    await _hnsw(kernel, 40)
    query = _near(rng, mine["bob"][5][1], 0.05)
    first = await _search(kernel, "ann", query, k=5)
    calls = []
    general = retrieval.search

    async def counted(*args, **kwargs):
        calls.append(args[1].keys)
        return await general(*args, **kwargs)

    monkeypatch.setattr(retrieval, "search", counted)
    again = await _search(kernel, "ann", query, k=5)
    # ready: from Retrieval.search to the statement with no general search at all
    assert calls == []
    assert again.hits == first.hits and again.path == first.path
    assert again.candidates == first.candidates
    assert all(h.text.startswith("ann ") for h in again.hits)
    # another reader's plan is its own (the plan is kept under the reader's keys): bob's
    # first search is planned, his second is ready, and neither sees ann's chunks
    for_bob = await _search(kernel, "bob", query, k=5)
    assert len(calls) == 1 and "personal:bob" in calls[0]
    assert (await _search(kernel, "bob", query, k=5)).hits == for_bob.hits
    assert len(calls) == 1
    assert for_bob.hits[0].text == mine["bob"][5][0]
    assert all(h.text.startswith("bob ") for h in for_bob.hits)


async def test_a_ready_ranking_that_finds_too_few_goes_on_with_the_iterative_scan(
    kernel, monkeypatch
):
    rng = random.Random(11)
    target = unit_vector(rng, DIMS)
    ann = [unit_vector(rng, DIMS) for _ in range(200)] + [_near(rng, target, 0.5) for _ in range(8)]
    bob = [_near(rng, target, 0.01) for _ in range(30)]
    mine = await _seed(kernel, {"ann": ann, "bob": bob})
    await _hnsw(kernel, 10)
    # a first search far from bob's chunks: planned without the iterative scan, kept, ready
    found = await _search(kernel, "ann", _near(rng, ann[3], 0.05), k=5)
    assert found.path == "hnsw" and len(found.hits) == 5
    assert await _mode(kernel) == "off"
    general = _Counted(monkeypatch)
    # next to bob's chunks the ready ranking's filter passes too few of the 10 rows: the
    # general path runs once, with the iterative scan at once (not the same scan again)
    found = await _search(kernel, "ann", target, k=5)
    assert general.calls == 1 and await _mode(kernel) == "relaxed_order"
    assert len(found.hits) == 5 and all(h.text.startswith("ann ") for h in found.hits)
    assert found.hits[0].text == _exact(mine["ann"], target, 5)[0]
