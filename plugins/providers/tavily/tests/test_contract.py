"""The provider contract for Tavily: httpx over MockTransport with ``/search`` answers and
errors shaped as the Tavily API reference documents them."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

import nyla_provider_tavily
from nyla.testing.provider_contract import ProviderContract, ProviderWire, Recorder
from nyla_provider_tavily import TavilyProvider


class TavilyWire(ProviderWire):
    def provider(self, handler: Any) -> TavilyProvider:
        return TavilyProvider(api_key="tvly-test", transport=httpx.MockTransport(handler))

    def search_reply(self, hits: list[dict[str, Any]]) -> Any:
        return httpx.Response(
            200,
            json={
                "query": "q",
                "follow_up_questions": None,
                "answer": None,
                "images": [],
                "results": [{**h, "raw_content": None} for h in hits],
                "response_time": "1.67",
                "request_id": "123e4567-e89b-12d3-a456-426614174111",
            },
        )

    def error_reply(self, status: int, retry_after: float | None = None) -> Any:
        messages = {
            401: "Unauthorized: missing or invalid API key.",
            429: "Your request has been blocked due to excessive requests.",
        }
        headers = {"retry-after": f"{retry_after:g}"} if retry_after is not None else {}
        return httpx.Response(
            status,
            json={"detail": {"error": messages.get(status, "Internal server error")}},
            headers=headers,
        )


class TestTavilyContract(ProviderContract):
    supports_chat = False
    supports_tools = False
    supports_streaming = False
    supports_web_search = True
    auth_env_var = "TAVILY_API_KEY"

    @pytest.fixture
    def plugin(self) -> Any:
        return nyla_provider_tavily

    @pytest.fixture
    def wire(self) -> TavilyWire:
        return TavilyWire()


async def test_request_shape_and_cost_per_search(make_kernel) -> None:
    wire = TavilyWire()
    rec = Recorder(
        wire.search_reply([{"url": "https://a.ch", "title": "A", "content": "x", "score": 0.7}])
    )
    provider = wire.provider(rec)
    from nyla.testing.scripted import ScriptedPlugin

    kernel = make_kernel(ScriptedPlugin(provider), builtins=False)
    hits = await kernel.ai.web_search("zurich", model="tavily:search-advanced", max_results=3)
    assert hits[0].url == "https://a.ch"
    sent = rec.requests[0]
    assert sent.url.path == "/search" and sent.headers["authorization"] == "Bearer tvly-test"
    body = json.loads(sent.content)
    assert body["search_depth"] == "advanced" and body["max_results"] == 3
    assert kernel.ai.totals().cost_chf == pytest.approx(0.016)
