"""The OpenAI provider over the official ``openai`` SDK (imported on first call only)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from nyla.sdk import (
    ChatRequest,
    ChatResponse,
    EmbeddingResponse,
    ImagePart,
    ModelNotAvailableError,
    ModelSpec,
    OpenAICompatibleProvider,
    ProviderError,
    ProviderTimeoutError,
    SpeechAudio,
    StreamAssembler,
    StreamDelta,
    Transcript,
    error_for_status,
    error_for_transport,
    parse_usage,
    sdk_async_client,
    vendor_model,
)
from nyla_provider_openai.catalog import PROVIDER_ID, catalog, is_reasoning_model
from nyla_provider_openai.speech import speech_audio, speech_params, transcript


class OpenAIProvider(OpenAICompatibleProvider):
    """Chat with tools and streaming, embeddings, image generation and speech (text to
    speech, speech to text and into English). GPT-5.x and o-series
    requests carry ``max_completion_tokens`` and never a custom ``temperature`` (the API
    rejects it with HTTP 400 ``unsupported_value``)."""

    id = PROVIDER_ID
    key_var = "OPENAI_API_KEY"
    base_url_var = "OPENAI_BASE_URL"
    default_base_url = "https://api.openai.com/v1"

    def catalog(self) -> list[ModelSpec]:
        """The OpenAI models (see :mod:`nyla_provider_openai.catalog`)."""
        return catalog()

    def chat_payload(self, request: ChatRequest, *, stream: bool) -> dict[str, Any]:
        """The chat-completions body, tuned for reasoning models."""
        payload = super().chat_payload(request, stream=stream)
        if is_reasoning_model(payload["model"]):
            payload.pop("temperature", None)
            tokens = payload.pop("max_tokens", None)
            if tokens is not None:
                payload["max_completion_tokens"] = tokens
        return payload

    def sdk(self) -> Any:
        """A configured ``AsyncOpenAI`` client (SDK retries off: the AI service retries)."""
        import openai

        reason = self.missing_configuration()
        if reason is not None:
            from nyla.sdk import ProviderAuthError

            raise ProviderAuthError(f"openai: {reason}", env_var=self.key_var, provider=self.id)
        http_client = (
            sdk_async_client(self._transport, self.timeout_s)
            if self._transport is not None
            else None
        )
        return openai.AsyncOpenAI(
            api_key=self.api_key,
            base_url=self.base_url,
            max_retries=0,
            timeout=self.timeout_s,
            http_client=http_client,
        )

    def _error(self, exc: Exception) -> Exception:
        import openai

        if isinstance(exc, openai.APITimeoutError):
            return ProviderTimeoutError(f"openai: no answer in time ({exc})", provider=self.id)
        if isinstance(exc, openai.APIStatusError):
            return error_for_status(
                self.id,
                exc.status_code,
                exc.body if exc.body is not None else exc.message,
                dict(exc.response.headers),
                env_var=self.key_var,
            )
        if isinstance(exc, openai.APIConnectionError):
            return error_for_transport(self.id, exc)
        if isinstance(exc, openai.OpenAIError):
            return ProviderError(f"openai: {exc}", provider=self.id)
        return exc

    async def chat(self, request: ChatRequest) -> ChatResponse:
        """One chat completion."""
        client = self.sdk()
        try:
            async with client:
                completion = await client.chat.completions.create(
                    **self.chat_payload(request, stream=False)
                )
        except Exception as exc:
            raise self._error(exc) from exc
        return self.parse_chat(completion.model_dump(), request)

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamDelta]:
        """A streamed chat completion; tool-call arguments reassembled."""
        client = self.sdk()
        assembler = StreamAssembler()
        try:
            async with client:
                stream = await client.chat.completions.create(
                    **self.chat_payload(request, stream=True)
                )
                async for chunk in stream:
                    for delta in assembler.feed(chunk.model_dump()):
                        yield delta
        except Exception as exc:
            raise self._error(exc) from exc
        for delta in assembler.finish():
            yield delta

    async def embed(self, model: str, texts: list[str]) -> EmbeddingResponse:
        """One embeddings request."""
        spec = self.spec_for(model)
        if spec is None or not spec.capabilities.embedding_dimensions:
            raise ModelNotAvailableError(f"{model!r} is not an OpenAI embedding model")
        client = self.sdk()
        try:
            async with client:
                result = await client.embeddings.create(
                    model=vendor_model(self.id, model), input=texts
                )
        except Exception as exc:
            raise self._error(exc) from exc
        data = result.model_dump()
        items = sorted(data["data"], key=lambda d: d["index"])
        vectors = [list(map(float, d["embedding"])) for d in items]
        return EmbeddingResponse(
            vectors=vectors,
            model=spec.id,
            dimensions=len(vectors[0]) if vectors else spec.capabilities.embedding_dimensions,
            usage=parse_usage(data.get("usage")),
        )

    async def generate_image(
        self, model: str, prompt: str, *, size: str = "1024x1024"
    ) -> list[ImagePart]:
        """Images for ``prompt`` (base64 PNG parts)."""
        client = self.sdk()
        try:
            async with client:
                result = await client.images.generate(
                    model=vendor_model(self.id, model), prompt=prompt, size=size, n=1
                )
        except Exception as exc:
            raise self._error(exc) from exc
        return [
            ImagePart(url=item.url, data_base64=item.b64_json, mime_type="image/png")
            for item in result.data or []
        ]

    async def synthesize_speech(
        self,
        model: str,
        text: str,
        *,
        voice: str | None = None,
        language: str | None = None,
        audio_format: str = "mp3",
    ) -> SpeechAudio:
        """``text`` spoken (``language`` is heard from the text itself)."""
        del language
        params = speech_params(
            vendor_model(self.id, model), text, voice=voice, audio_format=audio_format
        )
        client = self.sdk()
        try:
            async with client:
                response = await client.audio.speech.create(**params)
                content = await response.aread()
        except Exception as exc:
            raise self._error(exc) from exc
        return speech_audio(content, audio_format, len(text))

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
        """The text heard in ``audio`` (``translate``: in English, ``/audio/translations``)."""
        params: dict[str, Any] = {
            "model": vendor_model(self.id, model),
            "file": (file_name, audio, mime_type),
            "response_format": "verbose_json",
        }
        client = self.sdk()
        try:
            async with client:
                if translate:
                    result = await client.audio.translations.create(**params)
                else:
                    if language:
                        params["language"] = language
                    result = await client.audio.transcriptions.create(**params)
        except Exception as exc:
            raise self._error(exc) from exc
        data = result.model_dump() if hasattr(result, "model_dump") else {"text": str(result)}
        return transcript(data, translate=translate)
