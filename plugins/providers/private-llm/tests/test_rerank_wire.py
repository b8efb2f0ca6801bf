"""The private-LLM provider's reranking models: configured by name, served at ``/rerank`` in
the shape vLLM's server answers (the Jina / Cohere API), faked here at the wire."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from nyla.sdk import (
    ModelNotAvailableError,
    OperationType,
    ProviderError,
    ProviderServerError,
    reload_config,
)
from nyla_provider_private_llm import PrivateLlmProvider


def server(answer: Any, seen: list[dict[str, Any]], status: int = 200) -> PrivateLlmProvider:
    def handler(request: httpx.Request) -> httpx.Response:
        seen.append({"path": request.url.path, "body": json.loads(request.content)})
        return httpx.Response(status, json=answer)

    return PrivateLlmProvider(
        base_url="http://gpu-box:8000/v1",
        models=["qwen2.5:7b"],
        rerank_models=["bge-reranker-v2-m3"],
        transport=httpx.MockTransport(handler),
    )


def test_reranking_models_come_from_the_setting(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("NYLA_CONFIG", str(tmp_path / "none.toml"))
    monkeypatch.setenv("NYLA_PRIVATE_LLM_BASE_URL", "http://gpu-box:8000/v1")
    monkeypatch.setenv("NYLA_PRIVATE_LLM_RERANK_MODELS", "bge-reranker-v2-m3, jina-reranker-v2")
    reload_config()
    specs = {s.id: s for s in PrivateLlmProvider().catalog()}
    rerankers = [s for s in specs.values() if OperationType.RERANK in s.operation_types]
    assert [s.id for s in rerankers] == [
        "private-llm:bge-reranker-v2-m3",
        "private-llm:jina-reranker-v2",
    ]
    assert all(s.on_premises and s.price_input_chf_per_mtok == 0.0 for s in rerankers)
    assert all(s.operation_types == [OperationType.RERANK] for s in rerankers)


async def test_a_rerank_call_in_vllms_shape() -> None:
    seen: list[dict[str, Any]] = []
    answer = {
        "id": "rerank-5b2e",
        "model": "bge-reranker-v2-m3",
        "usage": {"total_tokens": 51},
        "results": [
            {"index": 1, "document": {"text": "b"}, "relevance_score": 0.91},
            {"index": 0, "document": {"text": "a"}, "relevance_score": 0.02},
        ],
    }
    ranked = await server(answer, seen).rerank(
        "private-llm:bge-reranker-v2-m3", "offsite", ["a", "b"], top_n=2
    )
    assert seen == [
        {
            "path": "/v1/rerank",
            "body": {
                "model": "bge-reranker-v2-m3",
                "query": "offsite",
                "documents": ["a", "b"],
                "top_n": 2,
            },
        }
    ]
    assert [(r.index, r.score) for r in ranked.results] == [(1, 0.91), (0, 0.02)]
    assert ranked.usage.input_tokens == 51
    assert ranked.model == "private-llm:bge-reranker-v2-m3"


async def test_wrong_models_and_answers_are_errors() -> None:
    seen: list[dict[str, Any]] = []
    with pytest.raises(ModelNotAvailableError):
        await server({}, seen).rerank("private-llm:qwen2.5:7b", "q", ["a"])
    with pytest.raises(ProviderError, match="relevance_score"):
        await server({"results": [{"index": 0}]}, seen).rerank(
            "private-llm:bge-reranker-v2-m3", "q", ["a"]
        )
    with pytest.raises(ProviderServerError):
        await server({"error": "overloaded"}, seen, status=503).rerank(
            "private-llm:bge-reranker-v2-m3", "q", ["a"]
        )
    assert len(seen) == 2  # the chat model was refused before any request
