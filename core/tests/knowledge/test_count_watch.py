"""The candidate counts a search plans from (``nyla.knowledge.search_plan.EstimateCache``)
stay fresh beyond their ttl while the search's connection listens for file index changes
and none was notified: a static store is not counted again every 30 s (at 100k files one
count read every file index row). A new or changed file is counted after its change's
notification, and without listening the ttl alone applies, as before."""

from __future__ import annotations

import pytest

from nyla.knowledge import search_plan
from nyla.knowledge.search_plan import EstimateCache
from nyla.models.knowledge import SearchQuery

from .conftest import ctx, item

READER = ctx("u1")


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    now = [1000.0]
    monkeypatch.setattr(search_plan.time, "monotonic", lambda: now[0])
    return now


def test_a_watched_count_outlives_its_ttl_until_a_change_is_notified(clock):
    cache = EstimateCache(ttl=30.0)
    cache.put("scope", (100, 10, 500))
    clock[0] += 31
    assert cache.get("scope") is None  # not watched: the ttl, as before
    assert cache.get("scope", watched=True) == (100, 10, 500)  # and renewed
    assert cache.get("scope") == (100, 10, 500)
    cache.changed()
    assert cache.get("scope", watched=True) == (100, 10, 500)  # within its (renewed) ttl
    clock[0] += 31
    assert cache.get("scope", watched=True) is None


def test_a_count_made_across_a_change_keeps_only_its_ttl(clock):
    cache = EstimateCache(ttl=30.0)
    before = cache.generation
    cache.changed()  # notified while the count ran: it may not have seen that change
    cache.put("scope", (100, 10, 500), before)
    clock[0] += 31
    assert cache.get("scope", watched=True) is None


@pytest.fixture
def counts(monkeypatch):
    """The candidate counts searches run (recorded, then run)."""
    seen: list[tuple[int, int, int]] = []
    count = search_plan.count_candidates

    async def counting(session, file_where, params):
        seen.append(await count(session, file_where, params))
        return seen[-1]

    monkeypatch.setattr(search_plan, "count_candidates", counting)
    return seen


async def _index(kernel, n: int, start: int = 0) -> None:
    for i in range(start, start + n):
        await kernel.knowledge.indexing.index_file(
            item(f"f{i}", f"f{i}.txt"), f"payroll salary note {i}".encode(), context=ctx()
        )


async def _search(kernel):
    return await kernel.knowledge.search(
        SearchQuery(text="payroll", context=READER, k=3, hybrid=False)
    )


async def test_a_listening_search_counts_again_only_after_a_notified_change(kernel, counts):
    await _index(kernel, 4)
    # every count (and plan) older than its ttl at once
    kernel.knowledge.indexes.estimates.ttl = 0.0
    first = await _search(kernel)
    assert first.candidates == 4 and len(counts) == 1
    assert kernel.knowledge.indexes.files.enabled
    for _ in range(3):
        assert (await _search(kernel)).candidates == 4
    assert len(counts) == 1  # nothing changed: never counted again
    await _index(kernel, 1, start=4)  # a new file, written through the index's upsert
    await _search(kernel)  # its connection takes the notification with this statement
    assert (await _search(kernel)).candidates == 5
    assert len(counts) >= 2 and counts[-1][0] == 5


async def test_without_listening_the_counts_live_for_their_ttl(kernel, counts):
    kernel.knowledge.settings.file_rows_cache = False
    await _index(kernel, 2)
    kernel.knowledge.indexes.estimates.ttl = 0.0
    for _ in range(3):
        assert (await _search(kernel)).candidates == 2
    assert len(counts) == 3


async def test_an_earlier_trigger_without_inserts_is_replaced(kernel, counts):
    from sqlalchemy import text

    from nyla.knowledge.file_rows import TRIGGER

    async with kernel.db.session() as s:  # what the previous version made
        await s.execute(
            text(
                f"CREATE FUNCTION {TRIGGER}() RETURNS trigger LANGUAGE plpgsql AS "
                "$$BEGIN PERFORM pg_notify('nyla_knowledge_files', ''); RETURN NULL; END$$"
            )
        )
        await s.execute(
            text(
                f"CREATE TRIGGER {TRIGGER} AFTER UPDATE OR DELETE OR TRUNCATE "
                f"ON knowledge_file_index FOR EACH STATEMENT EXECUTE FUNCTION {TRIGGER}()"
            )
        )
    await _index(kernel, 1)
    kernel.knowledge.indexes.estimates.ttl = 0.0
    await _search(kernel)
    estimates = kernel.knowledge.indexes.estimates
    seen = estimates.generation
    async with kernel.db.session() as s:  # a plain insert, no upsert
        await s.execute(
            text(
                "INSERT INTO knowledge_file_index (file_id, name, scope, owner_key, user_id, "
                "status, structure, size, chunk_count, lookups_ready, mime_type, content_hash, "
                "object_summary, is_neutralized, neutralization_status, token_count) VALUES "
                "('x', 'x.txt', 'personal', 'personal:u1', 'u1', 'indexed', '{}', 0, 2, true, "
                "'text/plain', '', '', false, 'none', 0)"
            )
        )
    await _search(kernel)
    assert estimates.generation > seen
    assert (await _search(kernel)).candidates == 3
