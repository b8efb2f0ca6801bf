"""The searches' driver path (``Database.read_driver``): psycopg connections with prepared
statements and a binary query vector. A dropped connection is retried once, other errors
are raised at once, a cancelled search never hands its connection on, and a statement
prepared for one reader never answers with another reader's chunks. Also the exact/HNSW
path choice, which counts the files the exact path has to probe until the scope btree
exists."""

from __future__ import annotations

import asyncio
import random

import psycopg
import pytest
from sqlalchemy import text

from nyla.knowledge.search import FILE_PROBE_COST, prefer_exact
from nyla.knowledge.settings import KnowledgeSettings
from nyla.knowledge.vectors import SCOPE_INDEX, ChunkRow
from nyla.models.knowledge import SearchQuery

from .conftest import ctx, seed_chunks, unit_vector

DIMS = 64  # the scripted model's embedding dimension
MODEL = "scripted:model"


def _unit(rng: random.Random) -> list[float]:
    return unit_vector(rng, DIMS)


async def _pid(kernel) -> int:
    async def pid(conn):
        return (await conn.rows("SELECT pg_backend_pid()"))[0][0]

    return int(await kernel.db.read_driver(pid))


async def _load(kernel, owners: dict[str, int], chunks_per_file: int) -> dict[str, list]:
    """``owners[user]`` chunks for each user, ``chunks_per_file`` to a file; returns
    {user: [(chunk text, vector)]}."""
    rng = random.Random(11)
    rows, files, mine = [], {}, {}
    for user, count in owners.items():
        for i in range(count):
            file_id = f"{user}-f{i // chunks_per_file}"
            files[file_id] = user
            vec = _unit(rng)
            body = f"{user} chunk {i}"
            mine.setdefault(user, []).append((body, vec))
            rows.append(
                ChunkRow(
                    file_id,
                    i % chunks_per_file,
                    body,
                    "",
                    "text",
                    2,
                    f"{rng.getrandbits(128):032x}",
                    f"personal:{user}",
                    MODEL,
                    vec,
                )
            )
    await seed_chunks(kernel, rows, files, MODEL, DIMS)
    return mine


async def _search(kernel, user: str, vector: list[float], k: int = 5):
    return await kernel.knowledge.search(
        SearchQuery(
            text="", vector=vector, model=MODEL, context=ctx(user, mandate=None), k=k, hybrid=False
        )
    )


async def test_an_error_that_is_not_a_disconnect_is_raised_once_and_keeps_the_connection(
    kernel,
):
    pid = await _pid(kernel)
    calls = 0

    async def broken(conn):
        nonlocal calls
        calls += 1
        await conn.rows("SELECT no_such_column FROM knowledge_chunk")

    with pytest.raises(psycopg.errors.UndefinedColumn):
        await kernel.db.read_driver(broken)
    assert calls == 1
    assert await _pid(kernel) == pid  # autocommit: nothing was left open on it


async def test_a_cancelled_read_never_hands_its_connection_to_the_next(kernel):
    pid = await _pid(kernel)

    async def slow(conn):
        await conn.rows("SELECT pg_sleep(30)")

    with pytest.raises(TimeoutError):
        await asyncio.wait_for(kernel.db.read_driver(slow), timeout=0.2)
    assert await _pid(kernel) != pid


async def test_prepared_statements_never_answer_for_another_reader(kernel):
    mine = await _load(kernel, {"ann": 40, "bob": 40, "cyd": 40}, chunks_per_file=4)
    service = kernel.knowledge
    rng = random.Random(5)
    for path, threshold, factor in (("exact", 10**9, 4.0), ("hnsw", 0, 0.0)):
        service.settings.exact_threshold = threshold
        service.settings.exact_cost_factor = factor
        # more rounds than PostgreSQL's five custom plans: the generic plan serves the last
        for _ in range(4):
            for user in ("ann", "bob", "cyd"):
                result = await _search(kernel, user, _unit(rng))
                assert result.path == path
                assert len(result.hits) == 5
                assert {h.text for h in result.hits} <= {t for t, _ in mine[user]}
        nobody = await _search(kernel, "dan", _unit(rng))
        assert nobody.hits == []

    async def prepared(conn):
        return (await conn.rows("SELECT count(*) FROM pg_prepared_statements"))[0][0]

    assert await kernel.db.read_driver(prepared) > 0


async def test_the_binary_query_vector_gives_exact_distances(kernel):
    mine = await _load(kernel, {"ann": 30}, chunks_per_file=10)
    body, vector = mine["ann"][7]
    for threshold, factor in ((10**9, 4.0), (0, 0.0)):
        kernel.knowledge.settings.exact_threshold = threshold
        kernel.knowledge.settings.exact_cost_factor = factor
        result = await _search(kernel, "ann", vector)
        assert result.hits[0].text == body
        assert abs(result.hits[0].distance) < 1e-6
        for hit in result.hits:
            stored = dict(mine["ann"])[hit.text]
            expected = 1.0 - sum(a * b for a, b in zip(stored, vector, strict=True))
            assert abs(hit.distance - expected) < 1e-5


def test_the_exact_path_counts_the_files_it_probes():
    settings = KnowledgeSettings()
    # 10 % of 10k chunks: in 1,000 one-chunk files the probes make HNSW cheaper; in 10
    # files of 100 chunks exact stays cheaper
    assert not prefer_exact(1_000, 10_000, 10, settings, files=1_000)
    assert prefer_exact(1_000, 10_000, 10, settings, files=10)
    # 1 % of 10k in one-chunk files: exact
    assert prefer_exact(100, 10_000, 10, settings, files=100)
    # the threshold applies to the whole cost, probes included
    small = KnowledgeSettings(exact_threshold=1_000, exact_cost_factor=0)
    assert prefer_exact(500, 10_000, 10, small, files=int(500 / FILE_PROBE_COST))
    assert not prefer_exact(500, 10_000, 10, small, files=500)


async def _drop_scope_index(kernel) -> None:
    async with kernel.db.session() as s:
        await s.execute(text(f"DROP INDEX {SCOPE_INDEX}"))
    kernel.knowledge.indexes.estimates.clear()


async def test_file_probes_count_only_until_the_scope_btree_exists(kernel):
    # same number of readable chunks (60 of 1,200): ann's are 60 one-chunk files, bob's
    # 3 files of 20
    owners = {"ann": 60, "bob": 60, **{f"x{i}": 60 for i in range(18)}}
    many = await _load(kernel, {u: n for u, n in owners.items() if u != "bob"}, 1)
    few = await _load(kernel, {"bob": 60}, chunks_per_file=20)
    settings = kernel.knowledge.settings
    settings.exact_threshold = 300
    # HNSW's cost: (1.2 / 4)**2 * (150 + 4.6 * ef 385 + 1.36 * (k 10 * 1,200 rows / 60
    # readable)**1.3) = 293 (search_plan.prefer_exact). Through the scope btree exact costs
    # 60 for both (exact). Without it, ann's 60 + 5 * 60 probes = 360 (HNSW wins), bob's
    # 60 + 5 * 3 = 75 (under the threshold: exact)
    settings.exact_cost_factor = 1.2
    rng = random.Random(3)
    ann_vector, bob_vector = _unit(rng), _unit(rng)
    ann = await _search(kernel, "ann", ann_vector, k=10)
    bob = await _search(kernel, "bob", bob_vector, k=10)
    assert (ann.path, ann.candidates) == ("exact", 60)
    assert (bob.path, bob.candidates) == ("exact", 60)
    await _drop_scope_index(kernel)
    ann_probed = await _search(kernel, "ann", ann_vector, k=10)
    bob_probed = await _search(kernel, "bob", bob_vector, k=10)
    assert (ann_probed.path, ann_probed.candidates) == ("hnsw", 60)
    assert (bob_probed.path, bob_probed.candidates) == ("exact", 60)
    assert {h.text for h in ann.hits} <= {t for t, _ in many["ann"]}
    assert [h.text for h in bob.hits] and {h.text for h in bob.hits} <= {t for t, _ in few["bob"]}
    # both exact paths rank the same chunks the same way
    assert [(h.chunk_id, round(h.score, 6)) for h in bob.hits] == [
        (h.chunk_id, round(h.score, 6)) for h in bob_probed.hits
    ]


async def test_a_bulk_load_builds_the_scope_btree_again(kernel):
    await _load(kernel, {"ann": 5}, chunks_per_file=5)
    await _drop_scope_index(kernel)
    kernel.knowledge.indexes.built.clear()
    await kernel.knowledge.indexes.ensure_vector_index(MODEL, DIMS)
    found = await _search(kernel, "ann", _unit(random.Random(4)), k=3)
    async with kernel.db.session() as s:
        exists = (await s.execute(text(f"SELECT to_regclass('{SCOPE_INDEX}')"))).scalar()
    assert exists is not None and found.path == "exact" and len(found.hits) == 3


async def test_changed_hnsw_settings_reach_the_connection_with_the_search(kernel):
    # a quarter of the rows ann's: the scan needs the iterative mode (test_iterative_scan.py)
    mine = await _load(kernel, {"ann": 50, "bob": 150}, chunks_per_file=5)
    settings = kernel.knowledge.settings
    settings.exact_threshold, settings.exact_cost_factor = 0, 0.0
    settings.adaptive_ef_search = False

    async def shown(conn):
        rows = await conn.rows(
            "SELECT current_setting('hnsw.ef_search'), current_setting('hnsw.iterative_scan')"
        )
        return tuple(rows[0])

    for ef in (17, 23, 23, 41):
        settings.ef_search = ef
        result = await _search(kernel, "ann", mine["ann"][ef][1])
        assert result.path == "hnsw" and result.hits[0].text == mine["ann"][ef][0]
        assert await kernel.db.read_driver(shown) == (str(ef), "relaxed_order")


async def test_a_connection_that_ran_other_statements_first_still_sends_the_query_vector(kernel):
    # the connection's one cursor is made by the first statement, before the search
    # registers the query vector's adapter: the search must still get a cursor that has it
    pid = await _pid(kernel)
    mine = await _load(kernel, {"ann": 12}, chunks_per_file=4)
    body, vector = mine["ann"][3]
    for threshold, factor in ((10**9, 4.0), (0, 0.0)):
        kernel.knowledge.settings.exact_threshold = threshold
        kernel.knowledge.settings.exact_cost_factor = factor
        result = await _search(kernel, "ann", vector)
        assert result.hits[0].text == body
        assert await _pid(kernel) == pid  # one connection throughout, its cursor reused


async def test_owner_keys_with_quotes_backslashes_and_commas_reach_the_server_intact(kernel):
    # the owner keys go to the server as one text[] literal (the exact path writes it into
    # the statement's text): every character a user id may hold must survive it, none may
    # be read as a parameter or end the string, and a near miss of a key must not match
    tricky = 'a"b\\c,d{e}'
    quoting = "o'k %(q)s :keys %s"
    escape = "b\\'); --"  # a backslash before a quote: ends nothing in an E'' literal
    users = (tricky, 'a"b\\c', "a", quoting, "o'k", escape)
    mine = await _load(kernel, dict.fromkeys(users, 3), chunks_per_file=1)
    for user in users:
        found = await _search(kernel, user, mine[user][0][1], k=10)
        assert found.path == "exact"
        assert {h.text for h in found.hits} == {body for body, _ in mine[user]}


async def test_the_pool_runs_at_most_size_works_and_a_cancelled_waiter_keeps_no_turn(kernel):
    await _pid(kernel)  # the pool exists
    pool = kernel.db._read_pool
    pool.size = 2
    running, most = 0, 0
    gate = asyncio.Event()

    async def held(conn):
        nonlocal running, most
        running += 1
        most = max(most, running)
        await gate.wait()
        running -= 1
        return (await conn.rows("SELECT 1"))[0][0]

    async def until_two_run() -> None:
        # the second work opens a new connection first (no fixed wait: a loaded machine)
        for _ in range(500):
            if running == 2:
                return
            await asyncio.sleep(0.01)

    works = [asyncio.create_task(kernel.db.read_driver(held)) for _ in range(5)]
    await until_two_run()
    await asyncio.sleep(0.05)
    assert running == 2  # three wait their turn
    waiter = asyncio.create_task(kernel.db.read_driver(held))
    await asyncio.sleep(0)
    waiter.cancel()
    gate.set()
    assert await asyncio.gather(*works) == [1] * 5
    assert most == 2
    with pytest.raises(asyncio.CancelledError):
        await waiter
    # every turn came back: two more run side by side again
    gate.clear()
    again = [asyncio.create_task(kernel.db.read_driver(held)) for _ in range(2)]
    await until_two_run()
    assert running == 2
    gate.set()
    assert await asyncio.gather(*again) == [1, 1]
