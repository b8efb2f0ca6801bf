"""The local provider: embeddings computed on this machine, nothing leaves it."""

from __future__ import annotations

import asyncio
import itertools
from array import array
from typing import Any

from nyla.sdk import (
    ChatRequest,
    ChatResponse,
    ConfigurationError,
    EmbeddingResponse,
    ModelCapabilities,
    ModelNotAvailableError,
    ModelSpec,
    OperationType,
    StreamDelta,
    Usage,
    WebSearchHit,
    config_value,
)
from nyla_provider_local import hashing, minilm, static_model

PROVIDER_ID = "local"
DIMENSIONS_VAR = "NYLA_LOCAL_EMBED_DIMENSIONS"
#: ``hash`` leaves the static model out, so the deterministic hashing embedder is chosen
#: (nyla's pytest plugin sets it for test runs)
EMBEDDINGS_VAR = "NYLA_LOCAL_EMBEDDINGS"


def hash_only() -> bool:
    """``NYLA_LOCAL_EMBEDDINGS=hash``: offer the hashing embedder instead of the static model."""
    return (config_value(EMBEDDINGS_VAR) or "").strip().lower() == "hash"


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


def _embedding_spec(
    name: str,
    dims: int,
    *,
    batch: int,
    quality: int,
    speed: int,
    context_window: int = 1_000_000,
    unavailable: str | None = None,
    languages: tuple[str, ...] = (),
) -> ModelSpec:
    return ModelSpec(
        id=f"{PROVIDER_ID}:{name}",
        provider=PROVIDER_ID,
        name=name,
        operation_types=[OperationType.EMBEDDING],
        context_window=context_window,
        max_output_tokens=0,
        price_input_chf_per_mtok=0.0,
        price_output_chf_per_mtok=0.0,
        capabilities=ModelCapabilities(
            embedding_dimensions=dims, max_batch_size=batch, languages=list(languages)
        ),
        quality_rank=quality,
        speed_rank=speed,
        on_premises=True,
        available=unavailable is None,
        unavailable_reason=unavailable,
    )


#: texts (and characters) the static model embeds on the event loop; more go to a thread.
#: The characters bound the time the loop waits; a thread hop costs ~180k instructions
#: (callgrind), as much as ~3 short texts, so a run's round summaries (up to ~40 of ~100
#: characters) are embedded inline
INLINE_TEXTS, INLINE_CHARS = 64, 8_000


def _small(texts: list[str]) -> bool:
    return len(texts) <= INLINE_TEXTS and sum(len(t) for t in texts) <= INLINE_CHARS


class LocalProvider:
    """Offline embedding models: ``local:wordllama-l2-256`` (static embeddings whose weights
    ship in a wheel; the default), ``local:hash-<dim>`` (always available, deterministic) and
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
        """The static WordLlama model (the offline default, left out when
        ``NYLA_LOCAL_EMBEDDINGS=hash``), the hashing embedder, and MiniLM (listed unavailable
        without its extra)."""
        specs = [
            _embedding_spec(
                f"hash-{self.dimensions}", self.dimensions, batch=512, quality=10, speed=100
            )
        ]
        if not hash_only():
            specs.append(
                _embedding_spec(
                    static_model.MODEL_NAME,
                    static_model.DIMENSIONS,
                    batch=512,
                    quality=30,
                    speed=80,
                    context_window=static_model.MAX_TOKENS,
                    unavailable=static_model.missing_reason(),
                    # trained on English text: German shares sub-word tokens only
                    languages=("en",),
                )
            )
        specs.append(
            _embedding_spec(
                minilm.MODEL_NAME,
                minilm.DIMENSIONS,
                batch=64,
                quality=40,
                speed=40,
                context_window=256,
                unavailable=minilm.missing_reason(),
                languages=("en",),
            )
        )
        return specs

    async def embed(self, model: str, texts: list[str]) -> EmbeddingResponse:
        """Embed ``texts`` with one of the local models (big batches in a worker thread)."""
        name, vectors, dims = await self._embedded(model, texts, lists=True)
        # no usage: nothing is metered here, and the AI service has already counted the
        # texts it sends (it takes its own count when a provider reports none); counting
        # them again was a quarter of embedding a round summary
        return EmbeddingResponse(
            vectors=vectors, model=f"{PROVIDER_ID}:{name}", dimensions=dims, usage=Usage()
        )

    async def embed_float32(self, model: str, texts: list[str]) -> tuple[bytes, int, Usage]:
        """:meth:`embed`'s vectors as native float32 values, one row after the other, their
        dimension and usage (none): how the AI service takes vectors it stores as float4
        (round memory), without a Python float made and validated for each value."""
        _name, vectors, dims = await self._embedded(model, texts, lists=False)
        if isinstance(vectors, list):  # the hashing embedder's floats, rounded as float4 is
            return array("f", itertools.chain.from_iterable(vectors)).tobytes(), dims, Usage()
        return vectors.astype("float32", copy=False).tobytes(), dims, Usage()

    async def _embedded(self, model: str, texts: list[str], *, lists: bool) -> tuple[str, Any, int]:
        """(model name, vectors, dimension): lists of floats, or with ``lists=False`` the
        WordLlama and MiniLM models' numpy array (the hashing embedder's lists either way)."""
        name = model.split(":", 1)[1] if model.startswith(PROVIDER_ID + ":") else model
        threaded = {minilm.MODEL_NAME: minilm, static_model.MODEL_NAME: static_model}
        if name in threaded:
            module = threaded[name]
            reason = module.missing_reason()
            if reason:
                raise ModelNotAvailableError(f"{PROVIDER_ID}:{name}: {reason}")
            embed = module.embed_texts if lists else module.embed_matrix
            if module is static_model and static_model.loaded() and _small(texts):
                # a thread hop costs more CPU than a few short texts do
                return name, embed(texts), module.DIMENSIONS
            return name, await asyncio.to_thread(embed, texts), module.DIMENSIONS
        if name.startswith("hash-"):
            try:
                dims = int(name.removeprefix("hash-"))
            except ValueError:
                raise ModelNotAvailableError(f"unknown local model {model!r}") from None
            # small batches inline; big ones off the event loop
            if len(texts) > 32:
                return name, await asyncio.to_thread(hashing.embed_texts, texts, dims), dims
            return name, hashing.embed_texts(texts, dims), dims
        raise ModelNotAvailableError(f"unknown local model {model!r}")

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
