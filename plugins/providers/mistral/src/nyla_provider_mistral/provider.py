"""Mistral models over the official ``mistralai`` SDK (imported on first call only): chat
with tools and streaming, embeddings, speech to text (Voxtral, ``/v1/audio/transcriptions``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from nyla.sdk import (
    TEXT_OPERATIONS,
    ChatRequest,
    ChatResponse,
    EmbeddingResponse,
    ModelCapabilities,
    ModelNotAvailableError,
    ModelSpec,
    OpenAICompatibleProvider,
    OperationType,
    ProviderError,
    ProviderServerError,
    ProviderTimeoutError,
    StreamAssembler,
    StreamDelta,
    Transcript,
    Usage,
    error_for_status,
    parse_completion,
    parse_usage,
    sdk_async_client,
    sdk_exception_types,
    to_messages,
    to_response_format,
    to_tool_choice,
    to_tools,
    vendor_model,
)

PROVIDER_ID = "mistral"


# name, price in, price out (USD list prices taken as CHF per 1M tokens), window, quality, speed
_CHAT = (
    ("mistral-large-latest", 2.0, 6.0, 131_072, 80, 55),
    ("mistral-medium-latest", 0.4, 2.0, 131_072, 72, 70),
    ("mistral-small-latest", 0.1, 0.3, 131_072, 60, 85),
)


def _plain(value: Any) -> Any:
    """A Speakeasy model as plain JSON data (``UNSET`` fields dropped)."""
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json", exclude_unset=False, by_alias=True)
    return value


class MistralProvider(OpenAICompatibleProvider):
    """Mistral chat (tools, streaming, tool choice, stop sequences, JSON mode and structured
    output), ``mistral-embed`` (1024 dimensions) and Voxtral transcription."""

    id = PROVIDER_ID
    key_var = "MISTRAL_API_KEY"
    base_url_var = "MISTRAL_BASE_URL"
    default_base_url = "https://api.mistral.ai"

    def catalog(self) -> list[ModelSpec]:
        """Mistral's chat models and its embedding model."""
        specs = [
            ModelSpec(
                id=f"{PROVIDER_ID}:{name}",
                provider=PROVIDER_ID,
                name=name,
                operation_types=list(TEXT_OPERATIONS),
                context_window=window,
                max_output_tokens=16_384,
                price_input_chf_per_mtok=p_in,
                price_output_chf_per_mtok=p_out,
                capabilities=ModelCapabilities(
                    tools=True,
                    streaming=True,
                    tool_choice=True,
                    stop_sequences=True,
                    json_mode=True,
                    structured_output=True,
                ),
                quality_rank=quality,
                speed_rank=speed,
            )
            for name, p_in, p_out, window, quality, speed in _CHAT
        ]
        specs.append(
            ModelSpec(
                id=f"{PROVIDER_ID}:mistral-embed",
                provider=PROVIDER_ID,
                name="mistral-embed",
                operation_types=[OperationType.EMBEDDING],
                context_window=8192,
                max_output_tokens=0,
                price_input_chf_per_mtok=0.1,
                price_output_chf_per_mtok=0.0,
                capabilities=ModelCapabilities(embedding_dimensions=1024, max_batch_size=128),
                quality_rank=70,
                speed_rank=70,
            )
        )
        specs.append(
            ModelSpec(
                id=f"{PROVIDER_ID}:voxtral-mini-latest",
                provider=PROVIDER_ID,
                name="voxtral-mini-latest",
                operation_types=[OperationType.SPEECH_TO_TEXT],
                context_window=32_768,
                max_output_tokens=0,
                price_input_chf_per_mtok=0.0,
                price_output_chf_per_mtok=0.0,
                # Voxtral Mini Transcribe's list price, USD taken as CHF
                price_per_audio_minute_chf=0.002,
                quality_rank=70,
                speed_rank=75,
            )
        )
        return specs

    def sdk(self) -> Any:
        """A configured ``Mistral`` client (SDK retries off: the AI service retries)."""
        from mistralai.client import Mistral

        reason = self.missing_configuration()
        if reason is not None:
            from nyla.sdk import ProviderAuthError

            raise ProviderAuthError(f"mistral: {reason}", env_var=self.key_var, provider=self.id)
        kwargs: dict[str, Any] = {
            "api_key": self.api_key,
            "server_url": self.base_url,
            "timeout_ms": int(self.timeout_s * 1000),
        }
        if self._transport is not None:
            kwargs["async_client"] = sdk_async_client(self._transport, self.timeout_s)
        return Mistral(**kwargs)

    def _error(self, exc: Exception) -> Exception:
        from mistralai.client import errors

        timeout_types, transport_types = sdk_exception_types()

        if isinstance(exc, errors.MistralError):
            if exc.status_code < 400:  # the answer did not match the documented schema
                return ProviderError(f"mistral: unexpected answer: {exc}", provider=self.id)
            return error_for_status(
                self.id, exc.status_code, exc.body, dict(exc.headers), env_var=self.key_var
            )
        if isinstance(exc, timeout_types):
            return ProviderTimeoutError(f"mistral: no answer in time ({exc!r})", provider=self.id)
        if isinstance(exc, (transport_types, errors.NoResponseError)):
            return ProviderServerError(f"mistral unreachable: {exc!r}", provider=self.id)
        return exc

    def _kwargs(self, request: ChatRequest) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "model": vendor_model(self.id, request.model),
            "messages": to_messages(request.messages),
        }
        if request.tools:
            kwargs["tools"] = to_tools(request.tools)
        if request.temperature is not None:
            kwargs["temperature"] = request.temperature
        if request.max_output_tokens is not None:
            kwargs["max_tokens"] = request.max_output_tokens
        kwargs.update(self.answer_options(request))
        return kwargs

    def answer_options(self, request: ChatRequest) -> dict[str, Any]:
        """``tool_choice`` (``"auto"`` / ``"none"`` / ``"any"`` — Mistral's word for a
        required call — or ``{"type": "function", "function": {"name"}}``), ``stop`` and
        ``response_format`` (``json_object`` or ``json_schema`` with name, schema, strict)."""
        out: dict[str, Any] = {}
        choice = request.tool_choice
        if choice is not None and request.tools:
            out["tool_choice"] = "any" if choice.mode == "required" else to_tool_choice(choice)
        if request.stop:
            out["stop"] = list(request.stop)
        if request.response_format is not None and request.response_format.is_json:
            out["response_format"] = to_response_format(request.response_format)
        return out

    async def chat(self, request: ChatRequest) -> ChatResponse:
        """One chat completion."""
        client = self.sdk()
        try:
            async with client:
                result = await client.chat.complete_async(**self._kwargs(request))
        except Exception as exc:
            raise self._error(exc) from exc
        if result is None:
            raise ProviderError("mistral returned no answer", provider=self.id)
        return parse_completion(_plain(result), model=request.model)

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamDelta]:
        """A streamed chat completion; tool-call arguments reassembled."""
        client = self.sdk()
        assembler = StreamAssembler()
        try:
            async with client:
                events = await client.chat.stream_async(**self._kwargs(request))
                async with events as stream:
                    async for event in stream:
                        for delta in assembler.feed(_plain(event.data)):
                            yield delta
        except Exception as exc:
            raise self._error(exc) from exc
        for delta in assembler.finish():
            yield delta

    async def embed(self, model: str, texts: list[str]) -> EmbeddingResponse:
        """One embeddings request."""
        spec = self.spec_for(model)
        if spec is None or not spec.capabilities.embedding_dimensions:
            raise ModelNotAvailableError(f"{model!r} is not a Mistral embedding model")
        client = self.sdk()
        try:
            async with client:
                result = await client.embeddings.create_async(
                    model=vendor_model(self.id, model), inputs=texts
                )
        except Exception as exc:
            raise self._error(exc) from exc
        data = _plain(result)
        items = sorted(data.get("data") or [], key=lambda d: d.get("index") or 0)
        vectors = [list(map(float, d["embedding"])) for d in items]
        return EmbeddingResponse(
            vectors=vectors,
            model=spec.id,
            dimensions=len(vectors[0]) if vectors else spec.capabilities.embedding_dimensions,
            usage=parse_usage(data.get("usage")),
        )

    async def transcribe(
        self,
        model: str,
        audio: bytes,
        *,
        file_name: str,
        mime_type: str,
        language: str | None = None,
        translate: bool = False,
    ) -> Transcript:
        """The text Voxtral hears in ``audio``, billed by the seconds it reports."""
        if translate:
            raise ModelNotAvailableError("mistral: Voxtral does not translate speech")
        kwargs: dict[str, Any] = {
            "model": vendor_model(self.id, model),
            "file": {"file_name": file_name, "content": audio, "content_type": mime_type},
        }
        if language:
            kwargs["language"] = language
        client = self.sdk()
        try:
            async with client:
                result = await client.audio.transcriptions.complete_async(**kwargs)
        except Exception as exc:
            raise self._error(exc) from exc
        data = _plain(result)
        usage = data.get("usage") or {}
        return Transcript(
            text=str(data.get("text") or "").strip(),
            language=data.get("language") or None,
            usage=Usage(audio_seconds=float(usage.get("prompt_audio_seconds") or 0.0)),
        )
