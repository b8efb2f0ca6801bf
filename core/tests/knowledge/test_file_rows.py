"""The hits' file details held between searches (``nyla.knowledge.file_rows``): a search
ranks the chunk table alone and takes its hits' file id, name and provenance from what the
process holds, read again once any file index row changed. Never a stale name, never a
hit whose file row is gone, the same hits as the joined statement."""

from __future__ import annotations

import asyncio
import random
from dataclasses import replace

import pytest
from sqlalchemy import text

from nyla.knowledge.file_rows import TRIGGER
from nyla.knowledge.vectors import CHUNK_ID_BITS
from nyla.models.knowledge import SearchQuery
from nyla.read_pool import ReadConnection

from .conftest import DIMS, ctx, unit_vector
from .test_search_hits import MODEL, READERS, _seed, _use_path

READER = ctx("nobody", mandate="m1")


def _query(vector) -> SearchQuery:
    return SearchQuery(text="", vector=vector, model=MODEL, context=READER, k=6, hybrid=False)


@pytest.fixture
def details_reads(monkeypatch):
    """The file-detail statements the read connections run (counted, then run)."""
    seen: list[str] = []
    rows = ReadConnection.rows

    async def counting(self, sql, params=None):
        if "FROM knowledge_file_index WHERE file_no = ANY" in sql:
            seen.append(sql)
        return await rows(self, sql, params)

    monkeypatch.setattr(ReadConnection, "rows", counting)
    return seen


@pytest.mark.parametrize("path", ["exact", "hnsw"])
async def test_held_details_are_read_once_and_again_after_a_rename(kernel, details_reads, path):
    seeded = await _seed(kernel, READERS, per_reader=12)
    _use_path(kernel, path)
    query = _query(seeded["m1 passage 4"][1])
    first = await kernel.knowledge.search(query)
    assert first.path == path and kernel.knowledge.indexes.files.enabled
    assert len(details_reads) == 1
    again = await kernel.knowledge.search(query)
    assert len(details_reads) == 1  # every file held: no second statement
    assert [h.model_dump() for h in again.hits] == [h.model_dump() for h in first.hits]
    renamed = first.hits[0].file_id
    async with kernel.db.session() as s:  # another connection, as a sync's rename is
        await s.execute(
            text(
                "UPDATE knowledge_file_index SET name = 'renamed.txt', source_path = '/new', "
                "web_url = 'https://example.org/new' WHERE file_id = :id"
            ),
            {"id": renamed},
        )
    after = await kernel.knowledge.search(query)
    assert len(details_reads) == 2
    moved = [h for h in after.hits if h.file_id == renamed]
    assert moved and all(
        (h.file_name, h.source_path, h.web_url)
        == ("renamed.txt", "/new", "https://example.org/new")
        for h in moved
    )
    assert all(h.file_name == f"{h.file_id}.txt" for h in after.hits if h.file_id != renamed)


@pytest.mark.parametrize("path", ["exact", "hnsw"])
async def test_a_search_reads_only_the_files_not_held(kernel, monkeypatch, path):
    seeded = await _seed(kernel, READERS, per_reader=12)
    _use_path(kernel, path)
    asked: list[set[int]] = []
    rows = ReadConnection.rows

    async def recording(self, sql, params=None):
        if "FROM knowledge_file_index WHERE file_no = ANY" in sql:
            asked.append(set(params["nos"]))
        return await rows(self, sql, params)

    monkeypatch.setattr(ReadConnection, "rows", recording)
    vector = seeded["m1 passage 4"][1]
    narrow = await kernel.knowledge.search(replace(_query(vector), k=2))
    wide = await kernel.knowledge.search(replace(_query(vector), k=12))
    held = {h.chunk_id >> CHUNK_ID_BITS for h in narrow.hits}
    every = {h.chunk_id >> CHUNK_ID_BITS for h in wide.hits}
    assert len(wide.hits) == 12 and held < every
    # the second search asks only for the files the first did not show
    assert asked == [held, every - held]
    assert [h.file_name for h in wide.hits] == [f"{h.file_id}.txt" for h in wide.hits]


@pytest.mark.parametrize("path", ["exact", "hnsw"])
async def test_a_hit_whose_file_row_is_gone_is_left_out(kernel, path):
    seeded = await _seed(kernel, READERS, per_reader=12)
    _use_path(kernel, path)
    query = _query(seeded["m1 passage 4"][1])
    first = await kernel.knowledge.search(query)
    gone = first.hits[0].file_id
    async with kernel.db.session() as s:
        # the file row alone (every delete path removes its chunks too)
        await s.execute(text("DELETE FROM knowledge_file_index WHERE file_id = :id"), {"id": gone})
    after = await kernel.knowledge.search(query)
    assert after.hits and all(h.file_id != gone for h in after.hits)


async def test_every_pooled_connection_sees_the_change(kernel):
    seeded = await _seed(kernel, READERS, per_reader=12)
    _use_path(kernel, "hnsw")
    query = _query(seeded["m1 passage 4"][1])
    # concurrent searches open several read connections, each listening
    await asyncio.gather(*(kernel.knowledge.search(query) for _ in range(4)))
    renamed = seeded["m1 passage 4"][2]
    async with kernel.db.session() as s:
        await s.execute(
            text("UPDATE knowledge_file_index SET name = 'renamed.txt' WHERE file_id = :id"),
            {"id": renamed},
        )
    for _ in range(3):
        results = await asyncio.gather(*(kernel.knowledge.search(query) for _ in range(4)))
        for result in results:
            names = {h.file_name for h in result.hits if h.file_id == renamed}
            assert names == {"renamed.txt"}


async def test_the_joined_statement_returns_the_same_hits(kernel):
    seeded = await _seed(kernel, READERS, per_reader=12)
    rng = random.Random(5)
    queries = [_query(seeded["m1 passage 4"][1])] + [
        _query(unit_vector(rng, DIMS)) for _ in range(3)
    ]
    for path in ("exact", "hnsw"):
        _use_path(kernel, path)
        lean = [await kernel.knowledge.search(q) for q in queries]
        kernel.knowledge.settings.file_rows_cache = False
        joined = [await kernel.knowledge.search(q) for q in queries]
        kernel.knowledge.settings.file_rows_cache = True
        for a, b in zip(lean, joined, strict=True):
            assert [h.model_dump() for h in a.hits] == [h.model_dump() for h in b.hits]
            assert len(a.hits) == 6


async def test_the_change_trigger_is_made_once(kernel):
    seeded = await _seed(kernel, READERS, per_reader=3)
    await kernel.knowledge.search(_query(seeded["m1 passage 1"][1]))
    await kernel.knowledge.indexes.files.ensure_trigger(kernel.db)
    async with kernel.db.session() as s:
        count = (
            await s.execute(
                text(
                    "SELECT count(*) FROM pg_trigger WHERE tgname = :name AND tgrelid = "
                    "to_regclass(format('%I.%I', current_schema(), 'knowledge_file_index'))"
                ),
                {"name": TRIGGER},
            )
        ).scalar_one()
    assert count == 1


async def test_a_connection_that_cannot_listen_joins_the_file_rows(kernel, monkeypatch):
    from nyla.knowledge import file_rows

    seeded = await _seed(kernel, READERS, per_reader=6)
    _use_path(kernel, "hnsw")
    query = _query(seeded["m1 passage 4"][1])
    monkeypatch.setattr(file_rows, "CHANNEL", "no such-channel")  # LISTEN fails on it
    result = await kernel.knowledge.search(query)
    assert not kernel.knowledge.indexes.files.enabled
    assert result.hits[0].text == "m1 passage 4"
    assert all(h.file_name == f"{h.file_id}.txt" for h in result.hits)
