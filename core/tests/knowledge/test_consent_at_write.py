"""Consent is checked again when the chunks are written, in the same transaction (issue 12):
a revoke between embedding and writing, or an ingest that names only a connection, leaves
nothing searchable."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from nyla.models.knowledge import IndexStatus, SearchQuery
from nyla.tables.knowledge import ContentChunk, FileContentIndex

from .conftest import ctx, item

pytestmark = pytest.mark.db


async def _counts(kernel) -> tuple[int, int]:
    async with kernel.db.session() as s:
        files = await s.scalar(select(func.count()).select_from(FileContentIndex))
        chunks = await s.scalar(select(func.count()).select_from(ContentChunk))
    return int(files), int(chunks)


async def _search(kernel, text: str) -> list[str]:
    result = await kernel.knowledge.search(SearchQuery(text=text, context=ctx(), k=5))
    return [hit.text for hit in result.hits]


async def _source(kernel):
    k = kernel.knowledge
    await k.governance.add_connection("c1", "msft", user_id="u1", mandate_id="m1")
    await k.governance.add_data_source(
        "root", "c1", "/", user_id="u1", mandate_id="m1", rag_index_enabled=True
    )


async def test_consent_revoked_after_embedding_is_honoured_at_write(kernel):
    await _source(kernel)
    indexer = kernel.knowledge.indexer
    file = item("f1", "plan.txt", data_source_id="root")
    prepared = await indexer.prepare(file, b"secret merger plan with acme", context=ctx())
    assert not isinstance(prepared, type(None)) and prepared.chunks  # embedded, ready to write
    await kernel.knowledge.governance.set_knowledge_consent("c1", False, actor="u1")
    [result] = await indexer.write([prepared])
    assert result.status == IndexStatus.FAILED
    assert "switched off" in result.error
    assert await _counts(kernel) == (0, 0)
    assert await _search(kernel, "secret merger plan") == []


async def test_rag_switched_off_after_embedding_is_honoured_at_write(kernel):
    await _source(kernel)
    indexer = kernel.knowledge.indexer
    prepared = await indexer.prepare(
        item("f2", "notes.txt", data_source_id="root"), b"quarterly notes", context=ctx()
    )
    await kernel.knowledge.governance.set_rag_index_enabled("root", False, actor="u1")
    [result] = await indexer.write([prepared])
    assert result.status == IndexStatus.FAILED and "RAG indexing" in result.error
    assert await _counts(kernel) == (0, 0)


async def test_index_file_with_only_a_connection_respects_its_consent(kernel):
    await kernel.knowledge.governance.add_connection("c9", "google", user_id="u1", mandate_id="m1")
    await kernel.knowledge.governance.set_knowledge_consent("c9", False, actor="u1")
    result = await kernel.knowledge.indexing.index_file(
        item("f3", "mail.txt"), b"private mail body", context=ctx(), connection_id="c9"
    )
    assert result.status == IndexStatus.FAILED
    assert await _counts(kernel) == (0, 0)
    # with consent the same call indexes, and the write-time check lets it through
    await kernel.knowledge.governance.set_knowledge_consent("c9", True, actor="u1")
    ok = await kernel.knowledge.indexing.index_file(
        item("f3", "mail.txt"), b"private mail body", context=ctx(), connection_id="c9"
    )
    assert ok.status == IndexStatus.INDEXED, ok.error
    # an unknown connection cannot vouch for consent
    unknown = await kernel.knowledge.indexing.index_file(
        item("f4", "x.txt"), b"anything", context=ctx(), connection_id="nope"
    )
    assert unknown.status == IndexStatus.FAILED


async def test_batch_write_keeps_allowed_files_and_drops_refused_ones(kernel):
    await _source(kernel)
    await kernel.knowledge.governance.add_connection("c2", "google", user_id="u1", mandate_id="m1")
    indexer = kernel.knowledge.indexer
    keep = await indexer.prepare(item("k", "keep.txt"), b"keep this text", context=ctx())
    drop = await indexer.prepare(
        item("d", "drop.txt", data_source_id="root"), b"drop this text", context=ctx()
    )
    await kernel.knowledge.governance.set_knowledge_consent("c1", False, actor="u1")
    results = await indexer.write([keep, drop])
    assert [r.status for r in results] == [IndexStatus.INDEXED, IndexStatus.FAILED]
    files, _ = await _counts(kernel)
    assert files == 1
