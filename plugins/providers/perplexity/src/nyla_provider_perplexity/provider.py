"""Perplexity's Sonar models over their OpenAI-compatible API (httpx): research answers
grounded in a live web search, with the citations kept in the response metadata."""

from __future__ import annotations

from typing import Any

from nyla.sdk import (
    ChatRequest,
    ChatResponse,
    Message,
    ModelCapabilities,
    ModelSpec,
    OpenAICompatibleProvider,
    OperationType,
    Role,
    WebSearchHit,
)

PROVIDER_ID = "perplexity"

RESEARCH_OPERATIONS = [
    OperationType.WEB_SEARCH,
    OperationType.WEB_CRAWL,
    OperationType.DATA_ANALYSE,
    OperationType.PLAN,
]

# name, price in, price out (CHF per 1M tokens), request fee (CHF), context, quality, speed
_MODELS = (
    ("sonar", 1.0, 1.0, 0.005, 127_072, 55, 80),
    ("sonar-pro", 3.0, 15.0, 0.006, 200_000, 75, 60),
    ("sonar-reasoning-pro", 2.0, 8.0, 0.006, 127_072, 80, 40),
    ("sonar-deep-research", 2.0, 8.0, 0.005, 127_072, 85, 10),
)


def extras(data: dict[str, Any]) -> dict[str, Any]:
    """Perplexity's additions to a chat completion: ``citations`` (URLs) and
    ``searchResults`` (title, url, date, snippet)."""
    out: dict[str, Any] = {}
    if data.get("citations"):
        out["citations"] = list(data["citations"])
    if data.get("search_results"):
        out["searchResults"] = list(data["search_results"])
    return out


class PerplexityProvider(OpenAICompatibleProvider):
    """Sonar models: research and web search with citations (no native tool calls)."""

    id = PROVIDER_ID
    key_var = "PERPLEXITY_API_KEY"
    base_url_var = "PERPLEXITY_BASE_URL"
    default_base_url = "https://api.perplexity.ai"
    stream_usage = False  # Perplexity sends usage in its chunks unasked

    def catalog(self) -> list[ModelSpec]:
        """The Sonar models with list prices (USD taken as CHF) and request fees."""
        return [
            ModelSpec(
                id=f"{PROVIDER_ID}:{name}",
                provider=PROVIDER_ID,
                name=name,
                operation_types=RESEARCH_OPERATIONS,
                context_window=window,
                max_output_tokens=8000,
                price_input_chf_per_mtok=p_in,
                price_output_chf_per_mtok=p_out,
                price_per_call_chf=fee,
                capabilities=ModelCapabilities(
                    streaming=True,
                    web_search=True,
                    reasoning="reasoning" in name,
                    # JSON schema only: Sonar documents no JSON mode, no stop, no tools
                    structured_output=True,
                ),
                quality_rank=quality,
                speed_rank=speed,
            )
            for name, p_in, p_out, fee, window, quality, speed in _MODELS
        ]

    def answer_options(self, request: ChatRequest) -> dict[str, Any]:
        """Structured output as Perplexity documents it: ``{"type": "json_schema",
        "json_schema": {"schema": ...}}`` (no name, no strict flag)."""
        fmt = request.response_format
        if fmt is None or fmt.type != "json_schema":
            return {}
        return {
            "response_format": {"type": "json_schema", "json_schema": {"schema": fmt.json_schema}}
        }

    def parse_chat(self, data: dict[str, Any], request: ChatRequest) -> ChatResponse:
        """The answer with citations and search results in ``metadata``."""
        response = super().parse_chat(data, request)
        response.metadata.update(extras(data))
        return response

    def stream_extras(self, chunk: dict[str, Any]) -> dict[str, Any]:
        """Citations arrive with the streamed chunks; keep the latest."""
        return extras(chunk)

    async def web_search(self, model: str, query: str, max_results: int = 5) -> list[WebSearchHit]:
        """Web search through a Sonar answer: its search results become hits."""
        request = ChatRequest(
            model=model,
            messages=[Message(role=Role.USER, content=query)],
            operation=OperationType.WEB_SEARCH,
        )
        response = await self.chat(request)
        results = response.metadata.get("searchResults") or [
            {"url": url} for url in response.metadata.get("citations", [])
        ]
        return [
            WebSearchHit(
                url=r.get("url", ""),
                title=r.get("title") or "",
                content=r.get("snippet") or r.get("content") or "",
                score=r.get("score"),
            )
            for r in results[:max_results]
            if r.get("url")
        ]
