"""Indexing with vectors the caller already has (``embeddings=PrecomputedEmbeddings``)."""

from __future__ import annotations

import pytest

from nyla import PrecomputedEmbeddings
from nyla.models.knowledge import SearchQuery

from .conftest import ctx, hash_embed, item

MODEL = "caller:minilm"


def _passages() -> dict[str, bytes]:
    return {
        "alpine.txt": b"Alpine huts open in June and close when the first snow falls.",
        "tax.txt": b"The VAT return for the second quarter is due at the end of August.",
        "lake.txt": b"Boats on the lake run every hour from the harbour to the old town.",
    }


async def test_precomputed_vectors_are_stored_and_searchable_without_a_model_call(kernel, embedder):
    files = _passages()
    texts = [body.decode() for body in files.values()]
    vectors = {text: hash_embed([text], 48)[0] for text in texts}
    before = list(embedder.texts)
    results = await kernel.knowledge.indexing.index_files(
        [(item(name, name), body) for name, body in files.items()],
        context=ctx(),
        embeddings=PrecomputedEmbeddings(MODEL, vectors),
    )
    assert [r.status for r in results] == ["indexed"] * 3, [r.error for r in results]
    assert {r.embedding_model for r in results} == {MODEL}
    assert sum(r.embedded for r in results) == 0
    assert embedder.texts == before  # nothing went to the model
    query = vectors[texts[1]]
    found = await kernel.knowledge.search(
        SearchQuery(text="vat", vector=query, model=MODEL, context=ctx(), hybrid=False)
    )
    assert found.hits[0].file_id == "tax.txt"
    assert found.hits[0].distance == pytest.approx(0.0, abs=1e-3)
    assert found.embedding_model == MODEL
    # the scope still holds: another user reads none of it
    other = await kernel.knowledge.search(
        SearchQuery(
            text="vat",
            vector=query,
            model=MODEL,
            context=ctx(user="u2", mandate="m2"),
            hybrid=False,
        )
    )
    assert other.hits == []


async def test_a_chunk_without_a_precomputed_vector_fails_its_file_only(kernel):
    files = _passages()
    first = next(iter(files.values())).decode()
    vectors = {first: hash_embed([first], 48)[0]}
    results = await kernel.knowledge.indexing.index_files(
        [(item(name, name), body) for name, body in files.items()],
        context=ctx(),
        embeddings=PrecomputedEmbeddings(MODEL, vectors),
    )
    by_name = {r.name: r for r in results}
    assert by_name["alpine.txt"].status == "indexed"
    # the scripted provider has no model "caller:minilm": the other files fail, with reason
    for name in ("tax.txt", "lake.txt"):
        assert by_name[name].status == "failed"
        assert "embedding failed" in (by_name[name].error or "")


def test_precomputed_vectors_must_agree_on_their_dimension():
    with pytest.raises(ValueError, match="one dimension"):
        PrecomputedEmbeddings(MODEL, [("a", [1.0, 0.0]), ("b", [1.0, 0.0, 0.0])])
    with pytest.raises(ValueError, match="empty"):
        PrecomputedEmbeddings(MODEL, {"a": []})
    with pytest.raises(ValueError, match="name of the model"):
        PrecomputedEmbeddings("", {"a": [1.0]})
    table = PrecomputedEmbeddings(MODEL, {"  two   words ": [0.5, 0.5]})
    from nyla.knowledge.chunking import content_hash

    assert table.get(content_hash("two words")) == [0.5, 0.5]
    assert len(table) == 1 and table.dims == 2
