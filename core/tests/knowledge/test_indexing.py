"""Indexing on the real PostgreSQL: extraction of every sample, failures, dedupe, atomic
re-index, neutralize at rest."""

from __future__ import annotations

from sqlalchemy import func, literal_column, select

from nyla.models.files import Scope
from nyla.tables.knowledge import ContentChunk, FileContentIndex

from .conftest import DATA, ctx, item


async def _chunks(kernel, file_id: str) -> list[ContentChunk]:
    """The file's chunks in order (its chunk ids are its file number's range)."""
    async with kernel.db.session() as s:
        rows = await s.execute(
            select(ContentChunk)
            .join(
                FileContentIndex,
                FileContentIndex.file_no == ContentChunk.id.op(">>")(literal_column("20")),
            )
            .where(FileContentIndex.file_id == file_id)
            .order_by(ContentChunk.id)
        )
        return list(rows.scalars())


async def test_every_sample_is_indexed_and_broken_files_fail_with_reason(kernel):
    names = [
        "sample.txt",
        "sample.md",
        "sample.html",
        "sample.pdf",
        "sample.docx",
        "sample.csv",
        "sample.json",
        "encrypted.pdf",
        "broken.pdf",
    ]
    items = [(item(n, n), (DATA / n).read_bytes()) for n in names]
    results = await kernel.knowledge.indexing.index_files(items, context=ctx())
    by_name = {r.name: r for r in results}
    for name in names[:7]:
        assert by_name[name].status == "indexed", by_name[name].error
        assert by_name[name].chunks >= 1
    assert by_name["encrypted.pdf"].status == "failed"
    assert "password" in by_name["encrypted.pdf"].error
    assert by_name["broken.pdf"].status == "failed"
    async with kernel.db.session() as s:
        failed = await s.get(FileContentIndex, "encrypted.pdf")
        pdf = await s.get(FileContentIndex, "sample.pdf")
    assert failed.status == "failed" and "password" in failed.error
    assert [p["page"] for p in pdf.structure["pages"]] == [1, 2]
    assert pdf.embedding_model == "scripted:model"
    assert {c.context_ref for c in await _chunks(kernel, "sample.pdf")} == {"page 1", "page 2"}
    assert not await _chunks(kernel, "encrypted.pdf")


async def test_same_content_in_same_scope_is_not_embedded_twice(kernel, embedder):
    text = (DATA / "sample.txt").read_bytes()
    first = await kernel.knowledge.indexing.index_file(item("a", "a.txt"), text, context=ctx())
    count = len(embedder.texts)
    second = await kernel.knowledge.indexing.index_file(item("b", "b.txt"), text, context=ctx())
    assert first.embedded == first.chunks and first.reused == 0
    assert second.reused == second.chunks and second.embedded == 0
    assert len(embedder.texts) == count
    # another scope owner does not share embeddings (nothing crosses scopes)
    third = await kernel.knowledge.indexing.index_file(
        item("c", "c.txt", user="u2"), text, context=ctx("u2")
    )
    assert third.embedded == third.chunks


async def test_reindex_replaces_chunks_and_embeds_only_changed_text(kernel, embedder):
    v1 = b"Alpha paragraph about invoices.\n\n" + b"Beta paragraph about payroll. " * 80
    await kernel.knowledge.indexing.index_file(item("f", "f.txt"), v1, context=ctx())
    old = await _chunks(kernel, "f")
    v2 = v1 + b"\n\nGamma paragraph about holidays."
    result = await kernel.knowledge.indexing.index_file(item("f", "f.txt"), v2, context=ctx())
    new = await _chunks(kernel, "f")
    assert result.status == "indexed"
    assert not any("Gamma" in c.data for c in old) and any("Gamma" in c.data for c in new)
    assert [c.id & 0xFFFFF for c in new] == list(range(len(new)))
    # a chunk keeps its id (file number + position) across re-indexes
    assert [c.id for c in new[: len(old)]] == [c.id for c in old]
    assert len({c.id >> 20 for c in new}) == 1
    assert 0 < result.embedded < result.chunks and result.reused > 0
    async with kernel.db.session() as s:
        total = (await s.execute(select(func.count()).select_from(ContentChunk))).scalar_one()
    assert total == len(new)


async def test_failed_embedding_leaves_previous_index_untouched(kernel, embedder):
    await kernel.knowledge.indexing.index_file(
        item("f", "f.txt"), b"first version of the text", context=ctx()
    )
    before = await _chunks(kernel, "f")
    embedder.fail = True
    result = await kernel.knowledge.indexing.index_file(
        item("f", "f.txt"), b"second version, entirely new words", context=ctx()
    )
    assert result.status == "failed" and "embedding failed" in result.error
    after = await _chunks(kernel, "f")
    assert [(c.id, c.data) for c in after] == [(c.id, c.data) for c in before]


async def test_neutralize_at_rest_stores_no_email_or_iban(kernel, embedder):
    raw = (DATA / "personal.txt").read_bytes()
    result = await kernel.knowledge.indexing.index_file(
        item("p", "personal.txt", neutralize=True), raw, context=ctx()
    )
    assert result.status == "indexed" and result.is_neutralized
    stored = " ".join(c.data for c in await _chunks(kernel, "p"))
    assert "peter.beispiel@example.ch" not in stored
    assert "CH93" not in stored and "5295" not in stored
    assert "[EMAIL_1]" in stored and "[IBAN_1]" in stored
    assert "Steuererklärung" in stored
    assert not any("@example.ch" in t for t in embedder.texts)
    async with kernel.db.session() as s:
        row = await s.get(FileContentIndex, "p")
    assert row.is_neutralized and row.neutralization_status == "neutralized"
    # the same file without the flag keeps its content verbatim
    plain = await kernel.knowledge.indexing.index_file(
        item("q", "personal.txt"), raw, context=ctx()
    )
    assert plain.status == "indexed"
    assert "peter.beispiel@example.ch" in " ".join(c.data for c in await _chunks(kernel, "q"))


async def test_neutralize_without_any_neutralizer_stores_nothing(
    db, make_kernel, scripted, embedder
):
    kernel = make_kernel(scripted(lambda r, i: "ok", embed_fn=embedder), db=db, builtins=False)
    raw = (DATA / "personal.txt").read_bytes()
    result = await kernel.knowledge.indexing.index_file(
        item("p", "personal.txt", neutralize=True), raw, context=ctx()
    )
    assert result.status == "failed" and "neutraliz" in result.error
    assert not await _chunks(kernel, "p")


async def test_missing_scope_owner_is_a_failed_result(kernel):
    result = await kernel.knowledge.indexing.index_file(
        item("x", "x.txt", scope=Scope.FEATURE_INSTANCE), b"text", context=ctx()
    )
    assert result.status == "failed" and "feature_instance_id" in result.error


async def test_a_file_failing_in_a_batch_write_fails_alone_and_leaves_nothing(kernel):
    # a mime type longer than its column (a vendor's pathological one): its write must fail
    too_long = "bad"
    items = [
        (item("good", "good.txt"), b"a good file about invoices"),
        (item(too_long, "bad.txt", mime="application/" + "x" * 300), b"cannot be stored"),
        (item("good2", "good2.txt"), b"another good file about payroll"),
    ]
    results = await kernel.knowledge.indexing.index_files(items, context=ctx())
    assert [r.status for r in results] == ["indexed", "failed", "indexed"]
    assert "write failed" in results[1].error
    assert await _chunks(kernel, "good") and await _chunks(kernel, "good2")
    assert not await _chunks(kernel, too_long)
    async with kernel.db.session() as s:
        ids = set((await s.execute(select(FileContentIndex.file_id))).scalars())
    assert ids == {"good", "good2"}


async def test_a_local_file_name_that_is_not_utf8_is_indexed_under_a_readable_name(
    kernel, tmp_path
):
    import os

    (tmp_path / "good.txt").write_text("a good file about invoices")
    # POSIX file systems allow any bytes in a name; Python hands such a name over with
    # surrogate escapes, which no database or JSON can take
    with open(os.path.join(os.fsencode(tmp_path), b"bad\xffname.txt"), "wb") as f:
        f.write(b"a file about payroll")
    first = await kernel.knowledge.indexing.index_paths([tmp_path], context=ctx())
    assert [(r.name, r.status) for r in first] == [
        ("bad\ufffdname.txt", "indexed"),
        ("good.txt", "indexed"),
    ]
    again = await kernel.knowledge.indexing.index_paths([tmp_path], context=ctx())
    assert [r.file_id for r in again] == [r.file_id for r in first]  # the same files
    assert len({r.file_id for r in first}) == 2


async def test_a_local_file_that_cannot_be_read_fails_alone(kernel, tmp_path):
    from nyla.knowledge.ingest import file_item_for_path

    good, gone = tmp_path / "good.txt", tmp_path / "gone.txt"
    good.write_text("a good file about invoices")
    gone.write_text("deleted before it was read")
    items = [(file_item_for_path(p, context=ctx()), p) for p in (gone, good)]
    gone.unlink()
    results = await kernel.knowledge.indexing.index_files(items, context=ctx())
    assert [r.status for r in results] == ["failed", "indexed"]
    assert "cannot read the file" in results[0].error
    assert not await _chunks(kernel, results[0].file_id)
    assert await _chunks(kernel, results[1].file_id)
