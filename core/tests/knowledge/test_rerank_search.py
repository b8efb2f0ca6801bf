"""Optional reranking of search hits (issue 30): off by default; asked for (the query, the
store's setting), the best hits are read by a reranking model through the AI service (here
the private-LLM provider's ``/rerank``, faked at the wire) and ordered by its scores."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from nyla.errors import ModelNotAvailableError
from nyla.models.knowledge import SearchQuery
from nyla.testing.scripted import ScriptedPlugin
from nyla_provider_private_llm import PrivateLlmProvider

from .conftest import NeutralizerPlugin, ctx, item

FILES = {
    "agenda": "Offsite agenda: roadmap, hiring, the offsite dinner and the offsite budget.",
    "place": "The team meets in Lucerne on 12 June for the offsite.",
    "kitchen": "The kitchen is cleaned on Fridays; the offsite does not change that.",
}


class Reranker:
    """``POST /v1/rerank`` scoring a passage by whether it names a place (Lucerne)."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        self.bodies.append(body)
        results = [
            {"index": i, "relevance_score": 0.97 if "Lucerne" in d else 0.01 * (i + 1)}
            for i, d in enumerate(body["documents"])
        ]
        results.sort(key=lambda r: -r["relevance_score"])
        return httpx.Response(200, json={"results": results, "usage": {"total_tokens": 40}})


@pytest.fixture
def reranker() -> Reranker:
    return Reranker()


@pytest.fixture
def rerank_kernel(db, make_kernel, scripted, embedder, reranker):
    server = PrivateLlmProvider(
        base_url="http://gpu-box:8000/v1",
        models=[],
        rerank_models=["bge-reranker-v2-m3"],
        transport=httpx.MockTransport(reranker),
    )
    embedding = scripted(lambda request, index: "ok", embed_fn=embedder)
    return make_kernel(
        ScriptedPlugin(embedding, server), NeutralizerPlugin(), db=db, builtins=False
    )


async def _index(kernel) -> None:
    for file_id, body in FILES.items():
        result = await kernel.knowledge.indexing.index_file(
            item(file_id, f"{file_id}.txt"), body.encode(), context=ctx()
        )
        assert result.status == "indexed", result.error


async def test_search_is_not_reranked_unless_asked(rerank_kernel, reranker):
    await _index(rerank_kernel)
    result = await rerank_kernel.knowledge.search(
        SearchQuery(text="where is the offsite", context=ctx(), k=3)
    )
    assert result.reranked_by is None
    assert result.hits[0].file_id != "place"  # the full text favours the agenda
    assert reranker.bodies == []


async def test_asked_for_the_reranker_orders_the_hits(rerank_kernel, reranker):
    await _index(rerank_kernel)
    query = SearchQuery(text="where is the offsite", context=ctx(), k=2, rerank=True)
    result = await rerank_kernel.knowledge.search(query)
    assert result.reranked_by == "private-llm:bge-reranker-v2-m3"
    assert result.hits[0].file_id == "place"
    assert result.hits[0].score == pytest.approx(0.97)
    assert len(result.hits) == 2  # k, though the reranker read more candidates
    body = reranker.bodies[0]
    assert body["query"] == "where is the offsite"
    assert sorted(body["documents"]) == sorted(FILES.values())


async def test_the_setting_turns_it_on_and_bounds_what_is_read(rerank_kernel, reranker):
    await _index(rerank_kernel)
    settings = rerank_kernel.knowledge.settings
    settings.rerank, settings.rerank_candidates = True, 2
    result = await rerank_kernel.knowledge.search(SearchQuery(text="offsite", context=ctx(), k=3))
    assert len(reranker.bodies[0]["documents"]) == 2
    assert result.reranked_by is not None and len(result.hits) == 3
    off = await rerank_kernel.knowledge.search(
        SearchQuery(text="offsite", context=ctx(), k=3, rerank=False)
    )
    assert off.reranked_by is None and len(reranker.bodies) == 1


async def test_asking_without_a_reranking_model_is_a_clear_error(kernel):
    await _index(kernel)
    with pytest.raises(ModelNotAvailableError, match="rerank"):
        await kernel.knowledge.search(SearchQuery(text="offsite", context=ctx(), k=2, rerank=True))


async def test_with_only_the_setting_a_failing_reranker_leaves_the_order(rerank_kernel, reranker):
    """The setting reranks every search, the agent's context too: when the reranker cannot
    answer (here the configured model does not exist), the search goes on in its own order,
    cut to k, and says it was not reranked; asked for on the search itself, it fails."""
    await _index(rerank_kernel)
    settings = rerank_kernel.knowledge.settings
    settings.rerank, settings.rerank_model = True, "private-llm:no-such-reranker"
    result = await rerank_kernel.knowledge.search(SearchQuery(text="offsite", context=ctx(), k=2))
    assert result.reranked_by is None and len(result.hits) == 2
    assert reranker.bodies == []
    with pytest.raises(ModelNotAvailableError):
        await rerank_kernel.knowledge.search(
            SearchQuery(text="offsite", context=ctx(), k=2, rerank=True)
        )
