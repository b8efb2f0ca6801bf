"""Reranking through the AI service (issue 30): operation ``rerank`` goes the way every model
call goes — the passages and the query neutralized in one session, the budget checked
before anything is sent, the cost settled — against the private-LLM provider's ``/rerank``
endpoint, faked at the wire in the shape vLLM's server (the Jina / Cohere API) answers."""

from __future__ import annotations

import json
import re
from typing import Any

import httpx
import pytest

import nyla
from nyla.ai.rerank import RerankOperations
from nyla.errors import BudgetExceeded, ModelNotAvailableError, ProviderError
from nyla.models.agent import RunContext
from nyla.models.ai import OperationType
from nyla.models.neutralize import Finding
from nyla.testing import ai_service
from nyla.testing.scripted import ScriptedPlugin
from nyla_provider_private_llm import PrivateLlmProvider

RERANKER = "bge-reranker-v2-m3"


class Vllm:
    """A vLLM server's ``POST /v1/rerank``: each document scored by ``score``, the results
    most relevant first, cut to ``top_n``; every request kept."""

    def __init__(self, score: Any = None, answer: Any = None) -> None:
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.score = score or (lambda query, doc: len(set(query.split()) & set(doc.split())))
        self.answer = answer

    def __call__(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        self.requests.append((request.url.path, body))
        if self.answer is not None:
            return httpx.Response(200, json=self.answer)
        results = [
            {"index": i, "document": {"text": d}, "relevance_score": self.score(body["query"], d)}
            for i, d in enumerate(body["documents"])
        ]
        results.sort(key=lambda r: -r["relevance_score"])
        if body.get("top_n"):
            results = results[: body["top_n"]]
        return httpx.Response(
            200,
            json={
                "id": "rerank-7c1e",
                "model": body["model"],
                "usage": {"total_tokens": 37},
                "results": results,
            },
        )


class PricedLlm(PrivateLlmProvider):
    """The same server with its reranker priced (a hosted one would be)."""

    def catalog(self):
        return [
            s.model_copy(update={"price_input_chf_per_mtok": 2.0})
            if OperationType.RERANK in s.operation_types
            else s
            for s in super().catalog()
        ]


def provider(vendor: Vllm, *, rerank: list[str] | None = None, cls: type = PrivateLlmProvider):
    return cls(
        base_url="http://gpu-box:8000/v1",
        models=[],
        rerank_models=[RERANKER] if rerank is None else rerank,
        transport=httpx.MockTransport(vendor),
    )


async def test_passages_come_back_ordered_by_the_model(db) -> None:
    vendor = Vllm()
    ops = RerankOperations(ai_service(provider(vendor)))
    docs = ["the cafeteria menu", "team offsite in Lucerne in June", "the offsite budget"]
    ranked = await ops.rerank("team offsite June", docs, context=RunContext(user_id="u"))
    assert [r.index for r in ranked.results] == [1, 2, 0]
    assert ranked.results[0].score > ranked.results[1].score > ranked.results[2].score
    assert ranked.model == f"private-llm:{RERANKER}"
    assert ranked.usage.input_tokens == 37  # the server's count, not the estimate
    assert ranked.cost_chf == 0.0
    path, body = vendor.requests[0]
    assert path == "/v1/rerank"
    assert body == {"model": RERANKER, "query": "team offsite June", "documents": docs}
    top = await ops.rerank("team offsite June", docs, top_n=1)
    assert [r.index for r in top.results] == [1]
    assert vendor.requests[1][1]["top_n"] == 1


class EmailFinder:
    id = "email"

    def find(self, text: str) -> list[Finding]:
        return [
            Finding(start=m.start(), end=m.end(), category="EMAIL", value=m.group(0))
            for m in re.finditer(r"\S+@\S+\.\w+", text)
        ]


class NeutralizerPlugin:
    @nyla.hookimpl
    def nyla_neutralizers(self) -> list[Any]:
        return [EmailFinder()]


async def test_what_goes_out_is_neutralized_alike(make_kernel) -> None:
    vendor = Vllm()
    kernel = make_kernel(ScriptedPlugin(provider(vendor)), NeutralizerPlugin(), builtins=False)
    ops = RerankOperations(kernel.ai)
    ranked = await ops.rerank(
        "what did anna@example.com plan",
        ["anna@example.com planned the offsite", "bob@example.org booked rooms"],
        context=RunContext(user_id="u", require_neutralization=True),
    )
    sent = json.dumps(vendor.requests[0][1])
    assert "@example" not in sent
    query_token = vendor.requests[0][1]["query"].split()[2]
    assert vendor.requests[0][1]["documents"][0].startswith(query_token)  # same placeholder
    assert ranked.results[0].index == 0


async def test_the_budget_is_checked_before_anything_is_sent(db) -> None:
    vendor = Vllm()
    ops = RerankOperations(ai_service(provider(vendor, cls=PricedLlm)))
    with pytest.raises(BudgetExceeded):
        await ops.rerank("offsite", ["a passage"] * 20, max_cost_chf=1e-9)
    assert vendor.requests == []
    ranked = await ops.rerank("offsite", ["a passage", "another"], max_cost_chf=1.0)
    assert ranked.cost_chf == pytest.approx(37 * 2.0 / 1e6)


async def test_without_a_reranking_model_the_error_says_so(db) -> None:
    ops = RerankOperations(ai_service(provider(Vllm(), rerank=[])))
    with pytest.raises(ModelNotAvailableError):
        await ops.rerank("offsite", ["a passage"])


async def test_an_answer_naming_passages_that_were_not_sent_is_refused(db) -> None:
    vendor = Vllm(answer={"results": [{"index": 5, "relevance_score": 0.9}]})
    ops = RerankOperations(ai_service(provider(vendor)))
    with pytest.raises(ProviderError, match="positions"):
        await ops.rerank("offsite", ["one", "two"])
