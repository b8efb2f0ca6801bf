"""A reranking model faked at the wire, for bench/retrieval_hybrid_latency.py ``--rerank``.

nyla's private-LLM provider talks to a vLLM-style ``POST /v1/rerank`` answered by an httpx
``MockTransport`` in this process: the request is built, sent through httpx, parsed and
answered in the vendor's shape (each passage scored by the words it shares with the query),
so the time measured is nyla's side of a rerank — neutralizing the query and the passages,
choosing the model, the budget and billing checks, the HTTP client and the JSON both ways,
reordering the hits — and none of a model's. What a real cross-encoder adds (tens to
hundreds of milliseconds on a GPU for 20 passages) and what it does to quality cannot be
measured here: no reranking model runs on this machine without torch and a download.
"""

from __future__ import annotations

import json
import re
from typing import Any

import httpx

MODEL = "bench-reranker"
_WORD = re.compile(r"\w+")


def vllm_rerank(request: httpx.Request) -> httpx.Response:
    """A vLLM server's rerank answer: passages scored by shared words, best first."""
    body = json.loads(request.content)
    query = set(_WORD.findall(body["query"].lower()))
    results = []
    for i, doc in enumerate(body["documents"]):
        words = set(_WORD.findall(doc.lower()))
        score = len(query & words) / (1 + len(words)) ** 0.5
        results.append({"index": i, "document": {"text": doc}, "relevance_score": score})
    results.sort(key=lambda r: -r["relevance_score"])
    return httpx.Response(
        200,
        json={"id": "rerank-bench", "model": body["model"], "results": results,
              "usage": {"total_tokens": sum(len(d) for d in body["documents"]) // 4}},
    )  # fmt: skip


def fake_reranker_provider() -> Any:
    """The private-LLM provider with one reranking model, its server faked at the wire."""
    from nyla_provider_private_llm import PrivateLlmProvider

    return PrivateLlmProvider(
        base_url="http://reranker.invalid/v1",
        models=[],
        rerank_models=[MODEL],
        transport=httpx.MockTransport(vllm_rerank),
    )


def install_fake_reranker(kernel: Any) -> None:
    """Give ``kernel`` (built, not yet used) the local embedder, the kernel's built-ins and
    the faked reranker as its plugins, and that reranker as its rerank model."""
    import nyla_provider_local
    from nyla.plugins import PluginHost
    from nyla.testing.scripted import ScriptedPlugin

    kernel.__dict__["plugins"] = PluginHost.from_plugins(
        [nyla_provider_local, ScriptedPlugin(fake_reranker_provider())],
        builtins=True,
        names=["local", "bench-reranker"],
    )
    kernel.settings.setdefault("knowledge", {})["rerank_model"] = f"private-llm:{MODEL}"
