"""The local provider: embeddings computed on this machine, nothing leaves it."""

from __future__ import annotations

import asyncio

from nyla import (
    ChatRequest,
    ChatResponse,
    EmbeddingResponse,
    ModelCapabilities,
    ModelSpec,
    OperationType,
    StreamDelta,
    Usage,
    WebSearchHit,
)
from nyla.sdk import ConfigurationError, ModelNotAvailableError, config_value, count_text_tokens
from nyla_provider_local import hashing, minilm

PROVIDER_ID = "local"
DIMENSIONS_VAR = "NYLA_LOCAL_EMBED_DIMENSIONS"


def hash_dimensions() -> int:
    """The hashing embedder's dimension (``NYLA_LOCAL_EMBED_DIMENSIONS``, default 384)."""
    raw = config_value(DIMENSIONS_VAR)
    if raw is None:
        return hashing.DEFAULT_DIMENSIONS
    try:
        value = int(raw)
    except ValueError:
        raise ConfigurationError(f"{DIMENSIONS_VAR} must be an integer, got {raw!r}") from None
    if not 8 <= value <= 16_000:
        raise ConfigurationError(f"{DIMENSIONS_VAR} must be between 8 and 16000, got {value}")
    return value


class LocalProvider:
    """Offline embedding models: ``local:hash-<dim>`` (always available) and
    ``local:all-minilm-l6-v2`` (with the ``[minilm]`` extra)."""

    id = PROVIDER_ID

    def __init__(self, dimensions: int | None = None) -> None:
        self._dimensions = dimensions

    @property
    def dimensions(self) -> int:
        """Dimension of the hashing embedder."""
        return self._dimensions or hash_dimensions()

    @property
    def hash_model_id(self) -> str:
        """Model id of the hashing embedder, e.g. ``local:hash-384``."""
        return f"{PROVIDER_ID}:hash-{self.dimensions}"

    def models(self) -> list[ModelSpec]:
        """The hashing embedder and the MiniLM model (listed unavailable without its extra)."""
        reason = minilm.missing_reason()
        return [
            ModelSpec(
                id=self.hash_model_id,
                provider=PROVIDER_ID,
                name=f"hash-{self.dimensions}",
                operation_types=[OperationType.EMBEDDING],
                context_window=1_000_000,
                max_output_tokens=0,
                price_input_chf_per_mtok=0.0,
                price_output_chf_per_mtok=0.0,
                capabilities=ModelCapabilities(
                    embedding_dimensions=self.dimensions, max_batch_size=512
                ),
                quality_rank=10,
                speed_rank=100,
                on_premises=True,
            ),
            ModelSpec(
                id=f"{PROVIDER_ID}:{minilm.MODEL_NAME}",
                provider=PROVIDER_ID,
                name=minilm.MODEL_NAME,
                operation_types=[OperationType.EMBEDDING],
                context_window=256,
                max_output_tokens=0,
                price_input_chf_per_mtok=0.0,
                price_output_chf_per_mtok=0.0,
                capabilities=ModelCapabilities(
                    embedding_dimensions=minilm.DIMENSIONS, max_batch_size=64
                ),
                quality_rank=40,
                speed_rank=40,
                on_premises=True,
                available=reason is None,
                unavailable_reason=reason,
            ),
        ]

    async def embed(self, model: str, texts: list[str]) -> EmbeddingResponse:
        """Embed ``texts`` with the hashing embedder or MiniLM (in a worker thread)."""
        name = model.split(":", 1)[1] if model.startswith(PROVIDER_ID + ":") else model
        usage = Usage(input_tokens=sum(count_text_tokens(t) for t in texts))
        if name == minilm.MODEL_NAME:
            reason = minilm.missing_reason()
            if reason:
                raise ModelNotAvailableError(f"{PROVIDER_ID}:{name}: {reason}")
            vectors = await asyncio.to_thread(minilm.embed_texts, texts)
            dims = minilm.DIMENSIONS
        elif name.startswith("hash-"):
            try:
                dims = int(name.removeprefix("hash-"))
            except ValueError:
                raise ModelNotAvailableError(f"unknown local model {model!r}") from None
            # small batches inline; big ones off the event loop
            if len(texts) > 32:
                vectors = await asyncio.to_thread(hashing.embed_texts, texts, dims)
            else:
                vectors = hashing.embed_texts(texts, dims)
        else:
            raise ModelNotAvailableError(f"unknown local model {model!r}")
        return EmbeddingResponse(
            vectors=vectors, model=f"{PROVIDER_ID}:{name}", dimensions=dims, usage=usage
        )

    async def chat(self, request: ChatRequest) -> ChatResponse:
        """Not offered: the local provider only embeds."""
        raise NotImplementedError("the local provider only serves embeddings")

    async def stream(self, request: ChatRequest):  # type: ignore[no-untyped-def]
        """Not offered: the local provider only embeds."""
        raise NotImplementedError("the local provider only serves embeddings")
        yield StreamDelta(kind="done")  # pragma: no cover - makes this an async generator

    async def web_search(self, model: str, query: str, max_results: int = 5) -> list[WebSearchHit]:
        """Not offered: the local provider only embeds."""
        raise NotImplementedError("the local provider does not search the web")
