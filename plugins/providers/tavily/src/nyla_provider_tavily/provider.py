"""Tavily web search over its REST API (httpx): results with URL, title, content, score."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from nyla.sdk import (
    ChatRequest,
    ChatResponse,
    EmbeddingResponse,
    ModelCapabilities,
    ModelSpec,
    OperationType,
    ProviderAuthError,
    ProviderServerError,
    StreamDelta,
    WebSearchHit,
    config_value,
    error_for_transport,
    missing_reason,
    raise_for_response,
    vendor_model,
)

PROVIDER_ID = "tavily"
KEY_VAR = "TAVILY_API_KEY"

# search depth -> (credits per search, quality, speed); one credit is 0.008 (USD taken as CHF)
_DEPTHS = {"basic": (1, 60, 80), "advanced": (2, 80, 50)}
CREDIT_CHF = 0.008


class TavilyProvider:
    """The ``webSearch`` operation: ``tavily:search-basic`` and ``tavily:search-advanced``."""

    id = PROVIDER_ID
    timeout_s = 60.0

    def __init__(
        self, *, api_key: str | None = None, base_url: str | None = None, transport: Any = None
    ) -> None:
        self._api_key = api_key
        self._base_url = base_url
        self._transport = transport

    @property
    def api_key(self) -> str | None:
        """The key (explicit, else ``TAVILY_API_KEY`` from the environment / config file)."""
        return self._api_key or config_value(KEY_VAR)

    @property
    def base_url(self) -> str:
        """The API base URL (``TAVILY_BASE_URL`` overrides it)."""
        return (
            self._base_url or config_value("TAVILY_BASE_URL") or "https://api.tavily.com"
        ).rstrip("/")

    def models(self) -> list[ModelSpec]:
        """The two search depths; unavailable (naming the variable) without a key."""
        reason = None if self.api_key else missing_reason(KEY_VAR)
        return [
            ModelSpec(
                id=f"{PROVIDER_ID}:search-{depth}",
                provider=PROVIDER_ID,
                name=f"search-{depth}",
                operation_types=[OperationType.WEB_SEARCH],
                context_window=400,
                max_output_tokens=0,
                price_input_chf_per_mtok=0.0,
                price_output_chf_per_mtok=0.0,
                price_per_call_chf=credits * CREDIT_CHF,
                capabilities=ModelCapabilities(web_search=True),
                quality_rank=quality,
                speed_rank=speed,
                available=reason is None,
                unavailable_reason=reason,
            )
            for depth, (credits, quality, speed) in _DEPTHS.items()
        ]

    async def web_search(self, model: str, query: str, max_results: int = 5) -> list[WebSearchHit]:
        """One ``POST /search``; hits ordered as Tavily ranks them."""
        import httpx

        if not self.api_key:
            raise ProviderAuthError(
                f"tavily: {missing_reason(KEY_VAR)}", env_var=KEY_VAR, provider=self.id
            )
        depth = vendor_model(self.id, model).removeprefix("search-")
        payload = {
            "query": query,
            "search_depth": depth if depth in _DEPTHS else "basic",
            "max_results": max(1, min(max_results, 20)),
            "include_answer": False,
            "include_raw_content": False,
        }
        async with httpx.AsyncClient(
            base_url=self.base_url,
            headers={"Authorization": f"Bearer {self.api_key}"},
            timeout=self.timeout_s,
            transport=self._transport,
        ) as client:
            try:
                response = await client.post("/search", json=payload)
            except httpx.TransportError as exc:
                raise error_for_transport(self.id, exc) from exc
            await raise_for_response(response, self.id, env_var=KEY_VAR)
            try:
                data = response.json()
            except ValueError as exc:
                raise ProviderServerError("tavily: answer is not JSON", provider=self.id) from exc
        return [
            WebSearchHit(
                url=r["url"],
                title=r.get("title") or "",
                content=r.get("content") or "",
                score=r.get("score"),
            )
            for r in data.get("results") or []
            if r.get("url")
        ]

    async def chat(self, request: ChatRequest) -> ChatResponse:
        """Not offered: Tavily only searches."""
        raise NotImplementedError("tavily only offers web search")

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamDelta]:
        """Not offered: Tavily only searches."""
        raise NotImplementedError("tavily only offers web search")
        yield StreamDelta(kind="done")  # pragma: no cover - makes this an async generator

    async def embed(self, model: str, texts: list[str]) -> EmbeddingResponse:
        """Not offered: Tavily only searches."""
        raise NotImplementedError("tavily only offers web search")
