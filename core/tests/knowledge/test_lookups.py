"""Lookup rows (full-text terms, dedupe hashes) and the chunk-id layout: single files get
their lookup rows in their own transaction, bulk loads in one pass after the load; re-index
and purge keep chunks and lookup rows in step; dedupe finds what earlier loads indexed."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select, text

from nyla.knowledge.search import text_ranks
from nyla.knowledge.vectors import MAX_CHUNKS_PER_FILE, chunk_id, chunk_id_range
from nyla.tables.knowledge import ChunkLookup, ContentChunk, FileContentIndex

from .conftest import ctx, item

WHERE = "c.owner_key = ANY(:keys) AND c.embedding_model = 'scripted:embed'"


async def _counts(kernel) -> tuple[int, int]:
    async with kernel.db.session() as s:
        chunks = (await s.execute(select(func.count()).select_from(ContentChunk))).scalar_one()
        texts = (await s.execute(select(func.count()).select_from(ChunkLookup))).scalar_one()
    return chunks, texts


async def _keyword(kernel, word: str, user: str = "u1") -> list[int]:
    await kernel.knowledge.retrieval.ensure_text_search()
    async with kernel.db.session() as s:
        model = (await s.execute(text("SELECT min(embedding_model) FROM knowledge_chunk"))).scalar()
        where = WHERE.replace("scripted:embed", model or "none")
        return await text_ranks(
            s, where=where, params={"keys": [f"personal:{user}"]}, query=word, limit=10
        )


def test_chunk_ids_pack_the_file_number_and_position():
    low, high = chunk_id_range(7)
    assert low == chunk_id(7, 0) and high == chunk_id(8, 0)
    assert low < chunk_id(7, MAX_CHUNKS_PER_FILE - 1) < high
    with pytest.raises(ValueError, match="out of range"):
        chunk_id(7, MAX_CHUNKS_PER_FILE)


async def test_a_single_file_is_full_text_searchable_on_commit(kernel):
    result = await kernel.knowledge.indexing.index_file(
        item("f", "f.txt"), b"The zebracorn invoice is overdue.", context=ctx()
    )
    assert result.status == "indexed"
    assert len(await _keyword(kernel, "zebracorn")) == 1
    assert await _keyword(kernel, "zebracorn", user="u2") == []  # same scope filter as vectors
    chunks, texts = await _counts(kernel)
    assert chunks == texts == 1


async def test_bulk_writes_defer_full_text_to_one_pass(kernel):
    service = kernel.knowledge
    prepared = [
        await service.indexer.prepare(item(f"b{i}", f"b{i}.txt"), body, context=ctx())
        for i, body in enumerate([b"quarterly zebracorn report", b"payroll for march"])
    ]
    written = await service.indexer.write(prepared, lookups=False)
    assert [r.status for r in written] == ["indexed", "indexed"]
    async with kernel.db.session() as s:
        ready = set(
            (
                await s.execute(select(FileContentIndex.file_id, FileContentIndex.lookups_ready))
            ).all()
        )
    assert ready == {("b0", False), ("b1", False)}
    assert await _counts(kernel) == (2, 0)
    assert await _keyword(kernel, "zebracorn") == []  # vector search finds them meanwhile

    assert await service.indexing.build_lookups() == 2
    assert await _counts(kernel) == (2, 2)
    assert len(await _keyword(kernel, "zebracorn")) == 1
    assert await service.indexing.build_lookups() == 0  # nothing left waiting


async def test_index_files_returns_with_every_full_text_row_written(kernel):
    items = [(item(f"m{i}", f"m{i}.txt"), f"note {i} about zebracorn".encode()) for i in range(5)]
    results = await kernel.knowledge.indexing.index_files(items, context=ctx())
    assert all(r.status == "indexed" for r in results)
    assert await _counts(kernel) == (5, 5)
    async with kernel.db.session() as s:
        waiting = (
            await s.execute(select(func.count()).where(FileContentIndex.lookups_ready.is_(False)))
        ).scalar_one()
    assert waiting == 0
    assert len(await _keyword(kernel, "zebracorn")) == 5


async def test_reindex_and_purge_keep_chunks_and_full_text_in_step(kernel):
    service = kernel.knowledge
    long = b"Alpha zebracorn paragraph.\n\n" + b"Beta paragraph about payroll. " * 80
    await service.indexing.index_file(item("f", "f.txt"), long, context=ctx())
    await service.indexing.index_file(item("g", "g.txt"), b"keep me zebracorn", context=ctx())
    first = await _counts(kernel)
    await service.indexing.index_file(item("f", "f.txt"), b"short now, no rare word", context=ctx())
    chunks, texts = await _counts(kernel)
    assert chunks == texts == 2 and first[0] > 2
    assert len(await _keyword(kernel, "zebracorn")) == 1  # only g's chunk is left

    purged = await service.governance.purge(actor="u1", file_ids=["f"])
    assert (purged.files, purged.chunks) == (1, 1)
    assert await _counts(kernel) == (1, 1)
    assert len(await _keyword(kernel, "zebracorn")) == 1


async def test_dedupe_reuses_what_an_earlier_bulk_load_indexed(kernel, embedder):
    texts = [f"paragraph {i} on zebracorn accounting rules".encode() for i in range(4)]
    first = await kernel.knowledge.indexing.index_files(
        [(item(f"a{i}", f"a{i}.txt"), t) for i, t in enumerate(texts)], context=ctx()
    )
    assert sum(r.embedded for r in first) == 4
    embedded_before = len(embedder.texts)
    again = await kernel.knowledge.indexing.index_files(
        [(item(f"b{i}", f"b{i}.txt"), t) for i, t in enumerate(texts)], context=ctx()
    )
    assert [r.reused for r in again] == [1, 1, 1, 1] and sum(r.embedded for r in again) == 0
    assert len(embedder.texts) == embedded_before
    other = await kernel.knowledge.indexing.index_files(
        [(item("c0", "c0.txt", user="u2"), texts[0])], context=ctx("u2")
    )
    assert other[0].embedded == 1  # another scope never shares vectors
