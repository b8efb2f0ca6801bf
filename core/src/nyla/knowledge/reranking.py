"""Optional reranking of search hits through the AI service (operation ``rerank``, see
:mod:`nyla.ai.rerank`): the best ``rerank_candidates`` hits of a search are read by a
reranking model against the query and ordered by its scores; the others follow in their
order. Off by default (``KnowledgeSettings.rerank``, ``SearchQuery.rerank``,
``nyla knowledge search --rerank``): it is a model call per search, with its price,
budget and the neutralization gate like any other (the query and the passages go out
neutralized)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from nyla.knowledge.search_hits import rescored
from nyla.models.knowledge import SearchQuery, SearchResult

if TYPE_CHECKING:
    from nyla.ai.rerank import RerankOperations


async def reranked(
    operations: RerankOperations,
    query: SearchQuery,
    result: SearchResult,
    *,
    candidates: int,
    model: str | None,
) -> SearchResult:
    """``result`` with its first ``candidates`` hits ordered by a reranking model (each
    hit's ``score`` then the model's), cut to ``query.k``."""
    head, tail = result.hits[:candidates], result.hits[candidates:]
    if not head:
        return result
    answer = await operations.rerank(
        query.text, [hit.text for hit in head], context=query.context, model=model
    )
    order = [rescored(head[r.index], r.score) for r in answer.results]
    seen = {r.index for r in answer.results}
    # a passage the model left out (a top_n of its own) keeps its place after the scored
    rest = [hit for i, hit in enumerate(head) if i not in seen] + tail
    return result.model_copy(
        update={"hits": (order + rest)[: query.k], "reranked_by": answer.model}
    )
