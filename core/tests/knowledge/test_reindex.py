"""``knowledge.reindex``: a store embedded with one model is moved to another — every chunk
once, in batches that each commit whole, resumable after a failure, split between two runs
at once — and vector search finds its files with the new model afterwards."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import text

from nyla.knowledge.reindex import reindex
from nyla.models.knowledge import SearchQuery

from .conftest import CountingEmbedder, ctx, item

FILES = {
    "offsite": "The team offsite takes place in Interlaken in June, with hiking.",
    "vat": "Books are taxed at the reduced VAT rate in Switzerland.",
    "revenue": "Quarterly revenue grew by twelve percent over the last year.",
    "holidays": "Employees have twenty five vacation days per year.",
    "invoice": "The consulting invoice for Zurich is two weeks overdue.",
}


class Flaky(CountingEmbedder):
    """Fails every call from ``fail_from_call`` on (retries included) until cleared."""

    calls = 0
    fail_from_call: int | None = None

    def __call__(self, texts: list[str]) -> list[list[float]]:
        self.calls += 1
        self.fail = self.fail_from_call is not None and self.calls >= self.fail_from_call
        return super().__call__(texts)


@pytest.fixture
def models(db, make_kernel, scripted):
    """Two kernels on one store: ``old`` indexes with a 64-dimensional embedder, ``new``
    uses a 32-dimensional one (each kernel offers both models)."""
    old_embed, new_embed = CountingEmbedder(64), Flaky(32)

    def kernel_on(model: str):
        providers = (
            scripted(lambda r, i: "ok", id="old", model="emb", embed_fn=old_embed),
            scripted(lambda r, i: "ok", id="new", model="emb", embed_fn=new_embed),
        )
        settings = {"knowledge": {"embedding_model": model}}
        return make_kernel(*providers, db=db, builtins=False, settings=settings)

    return kernel_on("old:emb"), kernel_on("new:emb"), new_embed


async def _chunks_by_model(kernel) -> dict[str, int]:
    async with kernel.db.session() as s:
        rows = await s.execute(
            text("SELECT embedding_model, count(*) FROM knowledge_chunk GROUP BY 1")
        )
        return {model: count for model, count in rows.all()}


async def _index(kernel) -> int:
    for file_id, body in FILES.items():
        result = await kernel.knowledge.indexing.index_file(
            item(file_id, f"{file_id}.txt"), body.encode(), context=ctx()
        )
        assert result.status == "indexed", result.error
    return (await _chunks_by_model(kernel))["old:emb"]


async def test_reindex_moves_every_chunk_once_and_search_finds_by_the_new_model(models):
    old, new, new_embed = models
    total = await _index(old)
    before = len(new_embed.texts)
    seen: list[tuple[int, int]] = []

    result = await new.knowledge.reindex(on_progress=lambda done, of: seen.append((done, of)))

    assert (result.model, result.rows, result.dimensions) == ("new:emb", total, 32)
    assert result.files == len(FILES)
    assert await _chunks_by_model(new) == {"new:emb": total}
    assert len(new_embed.texts) - before == total  # each chunk embedded exactly once
    assert seen[0] == (0, total) and seen[-1] == (total, total)
    async with new.db.session() as s:
        models_of_files = set(
            await s.scalars(text("SELECT DISTINCT embedding_model FROM knowledge_file_index"))
        )
    assert models_of_files == {"new:emb"}
    found = await new.knowledge.search(
        SearchQuery(text="vacation days employees", context=ctx(), k=1)
    )
    assert found.embedding_model == "new:emb"
    assert found.hits and found.hits[0].file_name == "holidays.txt"
    again = await new.knowledge.reindex()
    assert again.rows == 0  # nothing left on another model


async def test_a_reindex_that_fails_half_way_keeps_rows_whole_and_the_next_run_goes_on(models):
    old, new, new_embed = models
    total = await _index(old)
    new_embed.fail_from_call = new_embed.calls + 2  # the first batch goes through
    with pytest.raises(Exception, match="backend down"):
        await reindex(new.db, new.ai, "new:emb", batch_size=2)
    assert await _chunks_by_model(new) == {"new:emb": 2, "old:emb": total - 2}

    new_embed.fail_from_call = None
    result = await reindex(new.db, new.ai, "new:emb", batch_size=2)
    assert result.rows == total - 2
    assert await _chunks_by_model(new) == {"new:emb": total}


async def test_two_reindex_runs_at_once_split_the_rows(models):
    old, new, new_embed = models
    total = await _index(old)
    before = len(new_embed.texts)
    first, second = await asyncio.gather(
        reindex(new.db, new.ai, "new:emb", batch_size=1),
        reindex(new.db, new.ai, "new:emb", batch_size=1),
    )
    assert first.rows + second.rows == total
    assert len(new_embed.texts) - before == total
    assert await _chunks_by_model(new) == {"new:emb": total}
