"""The provider contract for Perplexity: httpx over MockTransport with chat completions
shaped as Perplexity documents them (OpenAI format plus ``citations`` / ``search_results``)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

import nyla_provider_perplexity
from nyla.testing.provider_contract import OpenAIWire, ProviderContract, Recorder
from nyla_provider_perplexity import PerplexityProvider

CITATIONS = ["https://www.admin.ch/vat", "https://www.estv.admin.ch/rates"]


class PerplexityWire(OpenAIWire):
    model_name = "sonar"

    def provider(self, handler: Any) -> PerplexityProvider:
        return PerplexityProvider(api_key="pplx-test", transport=httpx.MockTransport(handler))

    def completion(self, message: dict[str, Any], finish: str, usage: tuple[int, int]) -> dict:
        body = super().completion(message, finish, usage)
        body["citations"] = CITATIONS
        body["search_results"] = [
            {"title": "VAT", "url": CITATIONS[0], "date": "2025-01-01", "snippet": "8.1 %"}
        ]
        return body

    def response_format_fields(self, response_format: Any) -> dict[str, Any]:
        """Perplexity's structured output: the schema only."""
        schema = {"schema": response_format.json_schema}
        return {"response_format": {"type": "json_schema", "json_schema": schema}}

    def search_reply(self, hits: list[dict[str, Any]]) -> Any:
        body = super().completion(
            {"role": "assistant", "content": "Summary [1][2]"}, "stop", (20, 30)
        )
        body["citations"] = [h["url"] for h in hits]
        body["search_results"] = [
            {"title": h["title"], "url": h["url"], "snippet": h["content"], "score": h.get("score")}
            for h in hits
        ]
        return httpx.Response(200, json=body)


class TestPerplexityContract(ProviderContract):
    supports_tools = False
    supports_web_search = True
    auth_env_var = "PERPLEXITY_API_KEY"
    chat_operation = "dataAnalyse"

    @pytest.fixture
    def plugin(self) -> Any:
        return nyla_provider_perplexity

    @pytest.fixture
    def wire(self) -> PerplexityWire:
        return PerplexityWire()


async def test_citations_are_kept_in_the_response_metadata() -> None:
    from nyla.sdk import ChatRequest, Message, Role

    wire = PerplexityWire()
    rec = Recorder(wire.chat_reply("The rate is 8.1 % [1].", 10, 8))
    provider = wire.provider(rec)
    response = await provider.chat(
        ChatRequest(model="perplexity:sonar", messages=[Message(role=Role.USER, content="VAT?")])
    )
    assert response.metadata["citations"] == CITATIONS
    assert response.metadata["searchResults"][0]["snippet"] == "8.1 %"
    assert rec.requests[0].url.host == "api.perplexity.ai"


async def test_streamed_citations_reach_the_done_delta() -> None:
    from nyla.testing.provider_contract import sse_response

    wire = PerplexityWire()
    chunk = wire.chunk({"content": "8.1 %"}, "stop")
    chunk["citations"] = CITATIONS
    rec = Recorder(sse_response([chunk, wire.usage_chunk((5, 2))]))
    provider = wire.provider(rec)
    from nyla.sdk import ChatRequest, Message, Role

    deltas = [
        d
        async for d in provider.stream(
            ChatRequest(model="perplexity:sonar", messages=[Message(role=Role.USER, content="x")])
        )
    ]
    assert deltas[-1].kind == "done" and deltas[-1].metadata["citations"] == CITATIONS
