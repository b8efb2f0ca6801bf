"""Reranking through the AI service: a model of operation ``rerank`` (a cross-encoder behind
a provider's rerank endpoint) orders passages by their relevance to a query.

It goes the way every operation goes (:mod:`nyla.ai.route`): the model chain of operation
``rerank`` (the models whose specs list it, within the caller's model restriction and
access rule), the query and every passage through the neutralization gate in one
placeholder session (a name in the query and in a passage becomes the same placeholder, so
they still match), the budget preflight on the tokens sent, billing's preflight, timeouts,
retries and fallback to the next reranking model, the cost settled in the totals and the
ledger. A provider reranks with ``async rerank(model, query, documents, *, top_n) ->
RerankResponse``; one without it is passed over.

The tokens are estimated as a cross-encoder reads them: the query once per passage, plus
the passages (a provider's own count replaces the estimate when it reports one).

    from nyla.ai.rerank import RerankOperations

    ranked = await RerankOperations(kernel.ai).rerank("vacation days", passages, context=me)
    best_first = [passages[r.index] for r in ranked.results]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from nyla.ai.neutralize import NeutralizationSession
from nyla.ai.pipeline_steps import PipelineSteps
from nyla.ai.tokens import count_text_tokens
from nyla.cpu import off_loop
from nyla.errors import ProviderError
from nyla.models.ai import OperationType, RerankResponse, Usage


def rerank_tokens(query: str, documents: Sequence[str]) -> int:
    """Tokens a cross-encoder reads for ``documents`` against ``query`` (the query with
    each passage)."""
    return count_text_tokens(query) * len(documents) + sum(count_text_tokens(d) for d in documents)


class RerankOperations:
    """``rerank``: passages ordered by a reranking model, over the AI service's pipeline."""

    def __init__(self, pipeline: PipelineSteps) -> None:
        self._ai = pipeline

    async def rerank(
        self,
        query: str,
        documents: Sequence[str],
        *,
        context: Any = None,
        model: str | None = None,
        top_n: int | None = None,
        max_cost_chf: float | None = None,
    ) -> RerankResponse:
        """``documents`` scored against ``query`` by a ``rerank`` model, most relevant first
        (``results[i].index`` is the passage's position in ``documents``; ``top_n``: only
        the best so many). Raises :class:`~nyla.errors.ModelNotAvailableError` when no
        reranking model is available, :class:`~nyla.errors.BudgetExceeded` when none fits
        ``max_cost_chf``, :class:`~nyla.errors.NeutralizationError` when the run requires
        neutralization and no neutralizer runs."""
        if top_n is not None and top_n < 1:
            raise ValueError(f"top_n must be at least 1, got {top_n}")
        await self._ai._govern(context)
        session = NeutralizationSession()
        gate = self._ai._gate(context)
        size = len(query) + sum(len(d) for d in documents)
        clean_query, clean = await off_loop(
            size, lambda: (gate.apply(query, session), [gate.apply(d, session) for d in documents])
        )
        if not clean:
            return RerankResponse(results=[], model=model or "")
        estimate = rerank_tokens(clean_query, clean)
        route = self._ai._route(
            OperationType.RERANK,
            context,
            input_tokens=estimate,
            session=session,
            gate=gate,
            model=model,
            max_output=0,
            budget=max_cost_chf,
            sized=False,
            what="reranking model",
        )
        await self._ai._admit(context, route)
        spec, _estimate, answer = await self._ai._answer(
            route,
            lambda s, p: p.rerank(s.id, clean_query, clean, top_n=top_n),
            expect=RerankResponse,
            capability=("rerank", "rerank"),
        )
        results = sorted(answer.results, key=lambda r: -r.score)
        wrong = [r.index for r in results if not 0 <= r.index < len(clean)]
        if wrong or len({r.index for r in results}) != len(results):
            raise ProviderError(
                f"{spec.id} answered a rerank of {len(clean)} passages with positions "
                f"{[r.index for r in results]}",
                provider=spec.provider,
            )
        usage = answer.usage if answer.usage != Usage() else Usage(input_tokens=estimate)
        cost, _unknown = self._ai._settle(context, spec, usage, route)
        return RerankResponse(
            results=results[:top_n] if top_n else results,
            model=spec.id,
            usage=usage,
            cost_chf=cost,
        )
