"""Search hits built from our own rows without validation (``nyla.knowledge.search_hits``)
are the same objects validation makes, and both vector paths return the same details for
a chunk: file, name, position, text, reference, content type, scope, model, distance. The
HNSW path's statement, prepared once per connection, never answers for another reader of
any scope."""

from __future__ import annotations

import json
import random
from collections import Counter

import pytest
from pydantic import ValidationError

from nyla.knowledge.search_hits import hit, rescored
from nyla.knowledge.vectors import CHUNK_ID_BITS, ChunkRow, copy_chunks
from nyla.models.files import Scope
from nyla.models.knowledge import HitSource, SearchHit, SearchQuery, SearchResult
from nyla.tables.knowledge import FileContentIndex

from .conftest import ctx, unit_vector

DIMS = 64
MODEL = "scripted:model"
ROW = (1048577, "f-1", "notes.md", 1, "some text", "p. 2", "table", "mandate", 0.25)


def _validated(row, score):
    return SearchHit(
        chunk_id=row[0],
        file_id=row[1],
        file_name=row[2],
        seq=row[3],
        text=row[4],
        context_ref=row[5],
        content_type=row[6],
        scope=Scope(row[7]),
        embedding_model=MODEL,
        distance=row[8],
        score=score,
    )


def test_a_built_hit_is_the_hit_validation_makes():
    built = hit(ROW, MODEL)
    same = _validated(ROW, 0.75)
    assert built == same
    assert built.scope is Scope.MANDATE
    assert built.model_dump() == same.model_dump()
    assert built.to_wire() == same.to_wire()
    assert SearchHit.model_validate(built.to_wire()) == built
    assert built.model_copy(update={"score": 0.5}).score == 0.5
    assert SearchResult(hits=[built]).hits[0] is built
    # each hit is its own object (setting a field on one never touches another)
    other = hit(ROW, MODEL)
    other.text = "changed"
    other.also_in.append(HitSource(file_id="f-2", file_name="copy.md"))
    assert built.text == "some text" and built.also_in == []
    assert other != built and hit(ROW, MODEL) == built
    assert built.model_copy().text == "some text" and built.model_copy() is not built


def test_a_hit_is_validated_and_written_out_like_the_pydantic_model_it_was():
    built = hit((*ROW[:8], "abc", "/docs/notes.md", "conn-1", None, 0.25), MODEL)
    wire = built.to_wire()
    assert wire["chunkId"] == 1048577 and wire["scope"] == "mandate"
    assert wire["sourcePath"] == "/docs/notes.md" and wire["alsoIn"] == []
    assert built.model_dump()["scope"] is Scope.MANDATE
    assert json.loads(built.model_dump_json(by_alias=True)) == wire
    # inside a result: the same wire form, and read back to equal hits
    result = SearchResult(hits=[built], path="hnsw")
    assert result.to_wire()["hits"] == [wire]
    assert SearchResult.model_validate(result.to_wire()) == result
    assert SearchResult.model_validate_json(result.model_dump_json()) == result
    assert SearchHit.model_validate(wire) == built
    assert SearchHit.model_validate(built) is built
    # what comes from outside the search is still validated, here and inside a result
    with pytest.raises(ValidationError):
        SearchHit(**{**built.model_dump(), "scope": "tenant"})
    with pytest.raises(ValidationError):
        SearchHit.model_validate({**wire, "chunkId": "not a number"})
    with pytest.raises(ValidationError):
        SearchResult.model_validate({"hits": [{**wire, "seq": None}]})
    with pytest.raises(ValidationError):
        SearchResult(hits=[{"text": "no chunk id"}])
    assert repr(built).startswith("SearchHit(chunk_id=1048577, file_id='f-1'")


def test_a_built_hit_takes_a_score_and_an_integer_distance():
    assert hit(ROW, MODEL, score=0.031).score == 0.031
    whole = hit((*ROW[:8], 0), MODEL)
    assert whole.distance == 0.0 and isinstance(whole.distance, float) and whole.score == 1.0
    assert rescored(whole, 0.2).score == 0.2 and whole.score == 0.2


def test_an_owner_key_of_an_unknown_scope_is_an_error():
    with pytest.raises(ValueError):
        hit((*ROW[:7], "tenant", *ROW[8:]), MODEL)


async def _seed(kernel, readers: dict[str, tuple[str, str]], per_reader: int):
    """``per_reader`` chunks for each reader, in files of the reader's scope
    (``readers[name] = (scope, owner key)``), 3 chunks to a file with distinct names,
    references and content types. Returns {chunk text: (reader, vector, file id, seq)}."""
    rng = random.Random(17)
    rows, files, seeded = [], {}, {}
    for name, (scope, key) in readers.items():
        for i in range(per_reader):
            file_id, seq = f"{name}-file-{i // 3}", i % 3
            files[file_id] = (scope, key)
            vec = unit_vector(rng, DIMS)
            body = f"{name} passage {i}"
            seeded[body] = (name, vec, file_id, seq)
            rows.append(
                ChunkRow(
                    file_id, seq, body, f"ref {i}", ("text", "table")[i % 2], 2,
                    f"{rng.getrandbits(128):032x}", key, MODEL, vec,
                )
            )  # fmt: skip
    counts = Counter(r.file_id for r in rows)
    async with kernel.db.session() as s:
        for file_id, (scope, key) in files.items():
            s.add(
                FileContentIndex(
                    file_id=file_id, name=f"{file_id}.txt", scope=scope, owner_key=key,
                    user_id="owner", status="indexed", structure={}, size=0,
                    chunk_count=counts[file_id],
                )
            )  # fmt: skip
        await s.flush()
        await copy_chunks(s, rows)
    await kernel.knowledge.indexes.ensure_vector_index(MODEL, DIMS)
    await kernel.knowledge.indexes.analyze()
    return seeded


READERS = {
    "ann": ("personal", "personal:ann"),
    "m1": ("mandate", "mandate:m1"),
    "m2": ("mandate", "mandate:m2"),
    "fi": ("featureInstance", "featureInstance:fi1"),
}
CONTEXTS = {
    "ann": ctx("ann", mandate=None),
    "m1": ctx("nobody", mandate="m1"),
    "m2": ctx("nobody", mandate="m2"),
    "fi": ctx("nobody", mandate=None, instance="fi1"),
}


def _use_path(kernel, path: str) -> None:
    settings = kernel.knowledge.settings
    settings.exact_threshold, settings.exact_cost_factor = (
        (10**9, 4.0) if path == "exact" else (0, 0.0)
    )


async def test_both_paths_return_the_same_details_for_a_chunk(kernel):
    seeded = await _seed(kernel, READERS, per_reader=12)
    query = seeded["m1 passage 4"][1]
    found = {}
    for path in ("exact", "hnsw"):
        _use_path(kernel, path)
        result = await kernel.knowledge.search(
            SearchQuery(
                text="", vector=query, model=MODEL, context=CONTEXTS["m1"], k=12, hybrid=False
            )
        )
        assert result.path == path
        found[path] = result.hits
    assert [h.model_dump() for h in found["exact"]] == [h.model_dump() for h in found["hnsw"]]
    hits = found["hnsw"]
    assert hits[0].text == "m1 passage 4" and abs(hits[0].distance) < 1e-6
    assert [h.distance for h in hits] == sorted(h.distance for h in hits)
    for h in hits:
        reader, vec, file_id, seq = seeded[h.text]
        number = int(h.text.rsplit(" ", 1)[1])
        assert reader == "m1"
        assert (h.file_id, h.file_name, h.seq) == (file_id, f"{file_id}.txt", seq)
        assert (h.context_ref, h.content_type) == (f"ref {number}", ("text", "table")[number % 2])
        assert (h.scope, h.embedding_model) == (Scope.MANDATE, MODEL)
        assert h.chunk_id >> 20 and h.score == pytest.approx(1.0 - h.distance)
        expected = 1.0 - sum(a * b for a, b in zip(vec, query, strict=True))
        assert h.distance == pytest.approx(expected, abs=1e-5)


@pytest.mark.parametrize("path", ["exact", "hnsw"])
async def test_a_statement_reused_across_readers_of_every_scope_stays_in_scope(kernel, path):
    seeded = await _seed(kernel, READERS, per_reader=15)
    _use_path(kernel, path)
    rng = random.Random(23)
    # more rounds than PostgreSQL's five custom plans: the generic plan serves the last
    for _ in range(7):
        for reader, context in CONTEXTS.items():
            result = await kernel.knowledge.search(SearchQuery(text="", vector=unit_vector(rng, DIMS), model=MODEL, context=context, k=5, hybrid=False))  # fmt: skip
            assert result.path == path and len(result.hits) == 5
            assert {seeded[h.text][0] for h in result.hits} == {reader}
            assert {h.scope for h in result.hits} == {Scope(READERS[reader][0])}
    outsider = await kernel.knowledge.search(SearchQuery(text="", vector=unit_vector(rng, DIMS), model=MODEL, context=ctx("eve", mandate="m3"), k=5, hybrid=False))  # fmt: skip
    assert outsider.hits == []


def test_hits_of_one_content_in_two_places_are_merged_and_others_pass_as_they_are():
    from nyla.knowledge.search_hits import DistinctHits, merged, ranked_hits

    files = {
        1: ("f-1", "a.md", "same", "/a.md", None, None),
        2: ("f-2", "b.md", "other", "/b.md", None, None),
        3: ("f-3", "copy-of-a.md", "same", "/copy/a.md", "conn", None),
    }
    rows = [
        ((n << CHUNK_ID_BITS) + seq, f"text {n}", "", "text", "mandate:m1", distance)
        for n, seq, distance in ((3, 0, 0.3), (1, 0, 0.1), (2, 0, 0.2))
    ]
    hits = ranked_hits(list(rows), files, MODEL, resort=True)
    assert not isinstance(hits, DistinctHits)
    assert [h.file_id for h in hits] == ["f-1", "f-2", "f-3"]
    kept = merged(hits, 10)
    assert [h.file_id for h in kept] == ["f-1", "f-2"]
    assert [(s.file_id, s.source_path) for s in kept[0].also_in] == [("f-3", "/copy/a.md")]
    distinct = ranked_hits(list(rows[1:]), files, MODEL, resort=True)
    assert isinstance(distinct, DistinctHits)
    assert merged(distinct, 1) == distinct[:1] and distinct[0].also_in == []
    assert ranked_hits(list(rows), {1: files[1]}, MODEL, resort=True, complete=True) is None
