"""A bulk load keeps a bounded number of vectors for reuse by its later files: its memory
does not grow with the number of files, content recurring soon is still embedded once."""

from __future__ import annotations

from array import array

from nyla.knowledge import vector_memo
from nyla.knowledge.vector_memo import Memo, remember

from .conftest import ctx, item


def test_the_memo_keeps_the_most_recently_used_vectors_up_to_its_bound(monkeypatch):
    monkeypatch.setattr(vector_memo, "MEMO_VECTORS", 3)
    memo: Memo = {}
    for name in ("a", "b", "c"):
        remember(memo, ("k", "m", name), [1.0])
    remember(memo, ("k", "m", "a"), [1.0])  # used again: now the most recent
    remember(memo, ("k", "m", "d"), [1.0])
    assert list(memo) == [("k", "m", "c"), ("k", "m", "a"), ("k", "m", "d")]
    for i in range(100):
        remember(memo, ("k", "m", str(i)), [1.0])
    assert len(memo) == 3


async def test_a_batch_reuses_recent_content_and_embeds_content_beyond_the_bound_again(
    kernel, embedder, monkeypatch
):
    monkeypatch.setattr(vector_memo, "MEMO_VECTORS", 4)
    shared = b"The quarterly close of the Zurich office moves to the second week of July."
    others = [f"Note {i}: the supplier in Bern {i} ships on day {i}.".encode() for i in range(6)]
    contents = [shared, shared, *others, shared]
    items = [(item(f"f{i}", f"f{i}.txt"), data) for i, data in enumerate(contents)]
    before = len(embedder.texts)
    results = await kernel.knowledge.indexing.index_files(items, context=ctx())
    assert [r.status for r in results] == ["indexed"] * len(contents)
    first, again, *_, later = results
    assert (first.embedded, again.reused, again.embedded) == (1, 1, 0)
    # six other chunks came between: the vector left the memo, the lookup rows come only
    # after the batch, so the content is embedded once more (a cost, never a wrong vector)
    assert (later.embedded, later.reused) == (1, 0)
    assert len(embedder.texts) - before == len(contents) - 1


async def test_embedded_vectors_wait_as_float4_and_are_stored_as_embedded(kernel, embedder):
    memo: Memo = {}
    prepared = await kernel.knowledge.indexer.prepare(
        item("f", "f.txt"), b"A short note about the budget of the Basel office.", context=ctx(),
        memo=memo,
    )  # fmt: skip
    vector = prepared.chunks[0].embedding
    assert isinstance(vector, array) and vector.typecode == "f"
    assert list(vector) == list(array("f", embedder([prepared.chunks[0].data])[0]))


def test_chunk_texts_are_counted_without_entering_the_token_memo():
    from nyla.ai.tokens import _count_short
    from nyla.knowledge.chunking import chunk_objects
    from nyla.models.knowledge import ContentObject

    _count_short.cache_clear()
    chunks = chunk_objects([ContentObject(text="alpha beta gamma", context_ref="text")], 300, 40)
    assert [c.text for c in chunks] == ["alpha beta gamma"] and chunks[0].token_count == 3
    # neither the chunk's text nor its words enter the memo (a bulk load would fill it with
    # its words and texts and hold them); each unit is priced from its class
    assert _count_short.cache_info().currsize == 0
