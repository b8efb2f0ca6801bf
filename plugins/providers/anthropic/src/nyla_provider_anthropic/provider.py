"""Anthropic's Claude models over the official ``anthropic`` SDK (imported on first call)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from nyla.sdk import (
    TEXT_OPERATIONS,
    ChatRequest,
    ChatResponse,
    EmbeddingResponse,
    ModelCapabilities,
    ModelSpec,
    OperationType,
    ProviderAuthError,
    ProviderError,
    ProviderTimeoutError,
    StreamDelta,
    WebSearchHit,
    config_value,
    error_for_status,
    error_for_transport,
    missing_reason,
    sdk_async_client,
    vendor_model,
)
from nyla_provider_anthropic.convert import answer_options, from_anthropic, to_anthropic
from nyla_provider_anthropic.stream import EventAssembler

PROVIDER_ID = "anthropic"
KEY_VAR = "ANTHROPIC_API_KEY"

OPERATIONS = [*TEXT_OPERATIONS, OperationType.IMAGE_ANALYSE]

# name, price in, price out (USD list prices taken as CHF per 1M tokens), max out, quality, speed
_MODELS = (
    ("claude-opus-4-6", 5.0, 25.0, 64_000, 97, 30),
    ("claude-sonnet-4-6", 3.0, 15.0, 64_000, 93, 55),
    ("claude-haiku-4-5", 1.0, 5.0, 64_000, 78, 85),
)
DEFAULT_MAX_TOKENS = 8192


class AnthropicProvider:
    """Claude via the Messages API: tools (``tool_use`` / ``tool_result``), streaming,
    system prompt as the top-level ``system`` field, vision, ``tool_choice``,
    ``stop_sequences``, and JSON answers through a forced answer tool."""

    id = PROVIDER_ID
    timeout_s = 120.0

    def __init__(
        self, *, api_key: str | None = None, base_url: str | None = None, transport: Any = None
    ) -> None:
        self._api_key = api_key
        self._base_url = base_url
        self._transport = transport

    @property
    def api_key(self) -> str | None:
        """The key (explicit, else ``ANTHROPIC_API_KEY``)."""
        return self._api_key or config_value(KEY_VAR)

    def models(self) -> list[ModelSpec]:
        """The Claude models; unavailable (naming the variable) without a key."""
        reason = None if self.api_key else missing_reason(KEY_VAR)
        return [
            ModelSpec(
                id=f"{PROVIDER_ID}:{name}",
                provider=PROVIDER_ID,
                name=name,
                operation_types=OPERATIONS,
                context_window=200_000,
                max_output_tokens=max_out,
                price_input_chf_per_mtok=p_in,
                price_output_chf_per_mtok=p_out,
                capabilities=ModelCapabilities(
                    tools=True,
                    streaming=True,
                    vision=True,
                    reasoning=True,
                    tool_choice=True,
                    stop_sequences=True,
                    # through a forced answer tool, as Anthropic documents JSON output
                    json_mode=True,
                    structured_output=True,
                ),
                quality_rank=quality,
                speed_rank=speed,
                available=reason is None,
                unavailable_reason=reason,
            )
            for name, p_in, p_out, max_out, quality, speed in _MODELS
        ]

    def sdk(self) -> Any:
        """A configured ``AsyncAnthropic`` client (SDK retries off: the AI service retries)."""
        import anthropic

        if not self.api_key:
            raise ProviderAuthError(
                f"anthropic: {missing_reason(KEY_VAR)}", env_var=KEY_VAR, provider=self.id
            )
        kwargs: dict[str, Any] = {
            "api_key": self.api_key,
            "max_retries": 0,
            "timeout": self.timeout_s,
        }
        base_url = self._base_url or config_value("ANTHROPIC_BASE_URL")
        if base_url:
            kwargs["base_url"] = base_url
        if self._transport is not None:
            kwargs["http_client"] = sdk_async_client(self._transport, self.timeout_s)
        return anthropic.AsyncAnthropic(**kwargs)

    def _error(self, exc: Exception) -> Exception:
        import anthropic

        if isinstance(exc, anthropic.APITimeoutError):
            return ProviderTimeoutError(f"anthropic: no answer in time ({exc})", provider=self.id)
        if isinstance(exc, anthropic.APIStatusError):
            return error_for_status(
                self.id,
                exc.status_code,
                exc.body if exc.body is not None else exc.message,
                dict(exc.response.headers),
                env_var=KEY_VAR,
            )
        if isinstance(exc, anthropic.APIConnectionError):
            return error_for_transport(self.id, exc)
        if isinstance(exc, anthropic.AnthropicError):
            return ProviderError(f"anthropic: {exc}", provider=self.id)
        return exc

    def payload(self, request: ChatRequest) -> dict[str, Any]:
        """The Messages API body."""
        system, messages = to_anthropic(request.messages)
        name = vendor_model(self.id, request.model)
        spec_max = next((m[3] for m in _MODELS if m[0] == name), DEFAULT_MAX_TOKENS)
        body: dict[str, Any] = {
            "model": name,
            "messages": messages,
            "max_tokens": request.max_output_tokens or min(spec_max, DEFAULT_MAX_TOKENS),
        }
        if system:
            body["system"] = system
        body.update(answer_options(request)[0])
        if request.temperature is not None:
            body["temperature"] = request.temperature
        return body

    async def chat(self, request: ChatRequest) -> ChatResponse:
        """One Messages API call."""
        client = self.sdk()
        try:
            async with client:
                message = await client.messages.create(**self.payload(request))
        except Exception as exc:
            raise self._error(exc) from exc
        answer = answer_options(request)[1]
        return from_anthropic(message.model_dump(), model=request.model, answer=answer)

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamDelta]:
        """A streamed Messages API call: text deltas, tool calls assembled from their
        ``input_json_delta`` pieces at ``content_block_stop``, a JSON answer as text, then
        usage."""
        client = self.sdk()
        assembler = EventAssembler(answer_options(request)[1])
        try:
            async with client:
                events = await client.messages.create(**self.payload(request), stream=True)
                async for event in events:
                    for delta in assembler.feed(event.model_dump()):
                        yield delta
        except Exception as exc:
            raise self._error(exc) from exc
        for delta in assembler.finish():
            yield delta

    async def embed(self, model: str, texts: list[str]) -> EmbeddingResponse:
        """Not offered: Anthropic has no embeddings API."""
        raise NotImplementedError("anthropic offers no embeddings")

    async def web_search(self, model: str, query: str, max_results: int = 5) -> list[WebSearchHit]:
        """Not offered through this provider."""
        raise NotImplementedError("anthropic web search is not supported by this provider")
