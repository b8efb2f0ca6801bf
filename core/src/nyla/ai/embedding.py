"""Embeddings through the AI service (``kernel.ai.embed``): the texts through the privacy
gate, counted, routed to one model (no fallback: vectors of different models must not be
mixed in one index), priced and billed; the provider called in batches the model accepts."""

from __future__ import annotations

import functools
from array import array
from collections.abc import Sequence
from typing import Any

from nyla.ai import tokens
from nyla.ai.neutralize import NeutralizationSession
from nyla.ai.pipeline import AiPipeline
from nyla.ai.route import Route
from nyla.ai.traced import report_embedding
from nyla.cpu import off_loop
from nyla.errors import ProviderError
from nyla.models.ai import EmbeddingResponse, ModelSpec, OperationType, Usage
from nyla.models.model_query import ModelQuery

#: texts per embedding request when the model states no limit
DEFAULT_EMBED_BATCH = 64


class EmbeddingOperations(AiPipeline):
    """The embedding operation of :class:`~nyla.ai.service.AiService`."""

    async def embed(
        self,
        texts: list[str],
        *,
        context: Any = None,
        model: str | None = None,
        max_cost_chf: float | None = None,
        neutralization: NeutralizationSession | None = None,
    ) -> EmbeddingResponse:
        """Vectors for ``texts`` in input order, in batches the model accepts.

        Retries apply per batch; there is no fallback to another model, because vectors of
        different models must not be mixed in one index.
        """
        await self._govern(context)
        if not texts:
            return self._no_vectors(context, model)
        spec, route, input_tokens, clean = await self._embedding_route(
            texts, context, model, max_cost_chf, neutralization
        )
        vectors, usage, dims = await self._embed_batches(spec, clean, route)
        usage, cost = self._embedding_cost(context, spec, route, usage, input_tokens)
        return EmbeddingResponse(
            vectors=vectors, model=spec.id, dimensions=dims, usage=usage, cost_chf=cost
        )

    async def embed_rows(
        self, texts: list[str], *, context: Any = None, model: str | None = None
    ) -> tuple[str, list[Sequence[float]]]:
        """:meth:`embed` for a caller that stores the vectors as float4 (round memory):
        ``(model id, vectors)`` through the same gate, route, price and errors. A provider
        offering ``embed_float32(model, texts)`` (native float32 bytes, row after row, the
        dimension and the usage) is asked for those, and each vector is an ``array('f')``:
        no Python float is made and validated for each value, twice (39 round summaries of
        256 dimensions: ~10k floats). Any other provider's vectors come as :meth:`embed`
        gives them."""
        await self._govern(context)
        if not texts:
            return self._no_vectors(context, model).model, []
        spec, route, input_tokens, clean = await self._embedding_route(
            texts, context, model, None, None
        )
        if getattr(self._provider(spec), "embed_float32", None) is None:
            vectors, usage, dims = await self._embed_batches(spec, clean, route)
            usage, cost = self._embedding_cost(context, spec, route, usage, input_tokens)
            response = EmbeddingResponse(
                vectors=vectors, model=spec.id, dimensions=dims, usage=usage, cost_chf=cost
            )
            listed: list[Sequence[float]] = [*response.vectors]
            return response.model, listed
        rows, usage = await self._float32_batches(spec, clean, route)
        self._embedding_cost(context, spec, route, usage, input_tokens)
        return spec.id, rows

    def _no_vectors(self, context: Any, model: str | None) -> EmbeddingResponse:
        query = ModelQuery.for_call(OperationType.EMBEDDING, context, model=model)
        spec = self._chain(query, self._rule(context))[0]
        dims = spec.capabilities.embedding_dimensions or 0
        return EmbeddingResponse(vectors=[], model=spec.id, dimensions=dims)

    async def _embedding_route(
        self,
        texts: list[str],
        context: Any,
        model: str | None,
        budget: float | None,
        neutralization: NeutralizationSession | None,
    ) -> tuple[ModelSpec, Route, int, list[str]]:
        """The texts through the gate, counted, routed and admitted by billing."""
        session = neutralization if neutralization is not None else NeutralizationSession()
        gate = self._gate(context)
        clean = await off_loop(
            sum(len(t) for t in texts), lambda: [gate.apply(t, session) for t in texts]
        )
        input_tokens = sum(tokens.count_text_tokens_once(t) for t in clean)
        route = self._route(
            OperationType.EMBEDDING,
            context,
            input_tokens=input_tokens,
            session=session,
            gate=gate,
            model=model,
            budget=budget,
            max_output=0,
            fallback=False,
            sized=False,
        )
        spec, _estimate = next(route.models())
        await self._admit(context, route)
        return spec, route, input_tokens, clean

    def _embedding_cost(
        self, context: Any, spec: ModelSpec, route: Route, usage: Usage, input_tokens: int
    ) -> tuple[Usage, float]:
        """Step 5 for the whole embedding (the service's count when the provider reported
        no usage), reported as one call."""
        if usage.total_tokens == 0:
            usage = Usage(input_tokens=input_tokens)
        cost, _unknown = self._settle(context, spec, usage, route)
        report_embedding(OperationType.EMBEDDING.value, route, spec, usage, cost)
        return usage, cost

    def _batch_size(self, spec: ModelSpec) -> int:
        size = spec.capabilities.max_batch_size or DEFAULT_EMBED_BATCH
        if self.settings.get("embed_batch_size"):
            size = min(size, int(self.settings["embed_batch_size"]))
        return size

    async def _embed_batches(
        self, spec: ModelSpec, clean: list[str], route: Route
    ) -> tuple[list[list[float]], Usage, int]:
        provider = self._provider(spec)
        size = self._batch_size(spec)
        dims = spec.capabilities.embedding_dimensions or 0
        vectors: list[list[float]] = []
        usage = Usage()
        for start in range(0, len(clean), size):
            batch = clean[start : start + size]
            result: EmbeddingResponse = await self._with_retries(
                spec, functools.partial(provider.embed, spec.id, batch), route, EmbeddingResponse
            )
            if len(result.vectors) != len(batch):
                raise ProviderError(
                    f"{spec.id} returned {len(result.vectors)} vectors for {len(batch)} texts",
                    provider=spec.provider,
                )
            vectors.extend(result.vectors)
            usage = usage + result.usage
            dims = result.dimensions or dims
        return vectors, usage, dims

    async def _float32_batches(
        self, spec: ModelSpec, clean: list[str], route: Route
    ) -> tuple[list[Sequence[float]], Usage]:
        """:meth:`_embed_batches` through ``embed_float32``: a vector per text, each an
        ``array('f')`` of its model's dimension."""
        provider = self._provider(spec)
        size = self._batch_size(spec)
        rows: list[Sequence[float]] = []
        usage = Usage()
        for start in range(0, len(clean), size):
            batch = clean[start : start + size]
            answer = await self._with_retries(
                spec, functools.partial(provider.embed_float32, spec.id, batch), route, tuple
            )
            values, dims, used = _float32_answer(spec, answer, len(batch))
            rows.extend(values[i : i + dims] for i in range(0, len(values), dims))
            usage = usage + used
        return rows, usage


def _float32_answer(spec: ModelSpec, answer: Any, texts: int) -> tuple[array[float], int, Usage]:
    """``embed_float32``'s answer for ``texts`` texts as its values, dimension and usage (a
    :class:`ProviderError` when it is not ``(bytes, dimension, Usage)`` with a value for
    each dimension of each text)."""
    values: array[float] = array("f")
    if len(answer) == 3:
        data, dims, usage = answer
        if (
            isinstance(data, bytes)
            and len(data) % values.itemsize == 0
            and type(dims) is int
            and dims > 0
            and isinstance(usage, Usage)
        ):
            values.frombytes(data)
            if len(values) == dims * texts:
                return values, dims, usage
    raise ProviderError(
        f"{spec.id} answered {texts} texts with float32 values that are not a vector of its"
        " dimension for each",
        provider=spec.provider,
    )
