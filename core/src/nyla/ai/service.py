"""The AI service (``kernel.ai``): the one way to call a model.

Every call goes through one pipeline, in this order:

1. **neutralize** — every neutralizer runs over all text going to the model; placeholders are
   stable within the run's :class:`~nyla.ai.neutralize.NeutralizationSession`;
2. **select model** — by operation, estimated prompt size, the context's allowed providers,
   tools, rank; an explicit model id overrides;
3. **price preflight** — the estimate must fit the caller's remaining ``max_cost_chf``;
4. **provider call** — with jittered exponential backoff (``Retry-After`` honoured), then
   fallback to the next eligible model, recorded in ``metadata["fallbacks"]``;
5. **usage and cost** — recorded on the response and in the per-run totals.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

from nyla.ai.config import config_value
from nyla.ai.neutralize import NeutralizationGate, NeutralizationSession, StreamRestorer
from nyla.ai.pricing import UsageTotals, call_cost_chf, preflight
from nyla.ai.retry import RetryPolicy
from nyla.ai.selector import ModelSelector
from nyla.ai.timeouts import bounded_stream, seconds_setting
from nyla.ai.tokens import (
    REQUEST_OVERHEAD,
    count_text_tokens,
    count_tokens,
    count_tool_tokens,
)
from nyla.errors import (
    BudgetExceeded,
    ModelNotAvailableError,
    ProviderError,
    ProviderTimeoutError,
)
from nyla.models.ai import (
    AiCallRequest,
    AiCallResponse,
    ChatRequest,
    ChatResponse,
    EmbeddingResponse,
    ImagePart,
    Message,
    ModelSpec,
    OperationType,
    StreamDelta,
    ToolCall,
    Usage,
    WebSearchHit,
)

log = logging.getLogger(__name__)

T = TypeVar("T")

#: texts per embedding request when the model states no limit
DEFAULT_EMBED_BATCH = 64


@dataclass
class _Prepared:
    """A request after neutralization and selection."""

    session: NeutralizationSession
    gate: NeutralizationGate
    messages: list[Message]
    chain: list[ModelSpec]
    input_tokens: int
    metadata: dict[str, Any] = field(default_factory=dict)


def invalid_tool_arguments(calls: list[ToolCall]) -> list[dict[str, str]]:
    """Structured errors for tool calls whose arguments are not a JSON object (the calls are
    kept verbatim; the agent reports the error back to the model instead of crashing)."""
    import json

    out = []
    for call in calls:
        try:
            value = json.loads(call.arguments or "{}")
        except Exception as exc:  # RecursionError of deep nesting included: never fatal here
            out.append(
                {"id": call.id, "name": call.name, "error": f"invalid JSON: {type(exc).__name__}"}
            )
            continue
        if not isinstance(value, dict):
            out.append(
                {"id": call.id, "name": call.name, "error": "arguments are not a JSON object"}
            )
    return out


def _wrap_unexpected(provider_id: str, exc: Exception) -> ProviderError:
    if isinstance(exc, ProviderError):
        return exc
    if isinstance(exc, TimeoutError):
        return ProviderTimeoutError(f"{provider_id}: no answer in time", provider=provider_id)
    if isinstance(exc, NotImplementedError):
        return ProviderError(
            f"{provider_id} does not support this operation: {exc}", provider=provider_id
        )
    return ProviderError(f"{provider_id} failed: {exc!r}", provider=provider_id)


class AiService:
    """Calls models through the provider plugins of the kernel's plugin host.

    Settings (``kernel.settings["ai"]``, all optional): ``neutralize`` (default ``True``; a
    context with ``require_neutralization`` always neutralizes), ``max_attempts`` (3),
    ``base_delay_s`` (0.5), ``max_retry_after_s`` (60), ``timeout_s`` (600, per provider call),
    ``max_fallbacks`` (2), ``embed_batch_size`` (caps the model's batch size),
    ``default_models`` (operation -> model id; also
    ``NYLA_MODEL_<OPERATION>`` from the environment / config file).
    """

    def __init__(self, kernel: Any, *, retry: RetryPolicy | None = None) -> None:
        self.kernel = kernel
        settings = dict(getattr(kernel, "settings", {}).get("ai", {}) or {})
        self.settings = settings
        self.retry = retry or RetryPolicy(
            max_attempts=int(settings.get("max_attempts", 3)),
            base_delay_s=float(settings.get("base_delay_s", 0.5)),
            max_retry_after_s=float(settings.get("max_retry_after_s", 60.0)),
        )
        self.timeout_s: float = seconds_setting(
            settings.get("timeout_s"), config_value("NYLA_AI_TIMEOUT_S"), 600.0
        )
        #: longest silence between two streamed chunks
        self.stream_idle_timeout_s: float = seconds_setting(
            settings.get("stream_idle_timeout_s"),
            config_value("NYLA_AI_STREAM_IDLE_TIMEOUT_S"),
            min(self.timeout_s, 120.0),
        )
        #: wall-clock budget of all attempts on one model (retries count in time too)
        self.retry_budget_s: float = seconds_setting(
            settings.get("retry_budget_s"),
            config_value("NYLA_AI_RETRY_BUDGET_S"),
            self.timeout_s * self.retry.max_attempts + 30.0,
        )
        #: per-model overrides of ``timeout_s`` (model id -> seconds)
        self.model_timeouts: dict[str, float] = {
            str(k): float(v) for k, v in (settings.get("model_timeouts") or {}).items()
        }
        self.max_fallbacks: int = int(settings.get("max_fallbacks", 2))
        self.selector = ModelSelector(lambda: self.kernel.plugins.models())
        self._totals: dict[str | None, UsageTotals] = {}

    # ---- registry -----------------------------------------------------------------------

    def models(self) -> list[ModelSpec]:
        """Every model of every provider (available or not)."""
        return self.selector.all()

    def model_spec(self, model_id: str) -> ModelSpec | None:
        """The spec of ``model_id`` (``provider:model``), or ``None``."""
        return self.selector.spec(model_id)

    def select_model(
        self,
        operation: OperationType | str,
        *,
        context: Any = None,
        estimated_tokens: int = 0,
        needs_tools: bool = False,
        model: str | None = None,
    ) -> ModelSpec:
        """The model a call with these properties would go to (raises
        :class:`ModelNotAvailableError` when none fits)."""
        return self._chain(operation, context, estimated_tokens, needs_tools, model)[0]

    def count_tokens(self, text_or_messages: Any, model_id: str | None = None) -> int:
        """Estimated tokens of a text or messages (offline, see :mod:`nyla.ai.tokens`)."""
        return count_tokens(text_or_messages, model_id)

    def totals(self, run_id: str | None = None) -> UsageTotals:
        """Usage and cost so far of the run ``run_id`` (the context's ``workflow_id``), or of
        everything this service called with ``None``."""
        return self._totals.get(run_id, UsageTotals())

    def _provider(self, spec: ModelSpec) -> Any:
        provider = self.kernel.plugins.providers.get(spec.provider)
        if provider is None:
            raise ModelNotAvailableError(f"provider {spec.provider!r} of {spec.id!r} is not loaded")
        return provider

    def _chain(
        self,
        operation: OperationType | str,
        context: Any,
        estimated_tokens: int,
        needs_tools: bool,
        model: str | None,
    ) -> list[ModelSpec]:
        operation = OperationType(operation)
        soft_default = None
        if model is None:
            defaults = self.settings.get("default_models") or {}
            soft_default = defaults.get(operation.value) or config_value(
                f"NYLA_MODEL_{operation.name}"
            )
        if soft_default:
            try:
                return self.selector.candidates(
                    operation,
                    context=context,
                    estimated_tokens=estimated_tokens,
                    needs_tools=needs_tools,
                    model=soft_default,
                )
            except ModelNotAvailableError as exc:
                log.warning("default model for %s ignored: %s", operation.value, exc)
        return self.selector.candidates(
            operation,
            context=context,
            estimated_tokens=estimated_tokens,
            needs_tools=needs_tools,
            model=model,
        )

    # ---- neutralization -----------------------------------------------------------------

    def _gate(self, context: Any) -> NeutralizationGate:
        require = bool(getattr(context, "require_neutralization", False))
        enabled = require or bool(self.settings.get("neutralize", True))
        neutralizers = list(self.kernel.plugins.neutralizers.values()) if enabled else []
        if require and not neutralizers:
            from nyla.errors import NeutralizationError

            raise NeutralizationError(
                "neutralization is required but no neutralizer is installed: call blocked"
            )
        return NeutralizationGate(neutralizers, require=require)

    def neutralization_session(self, context: Any = None) -> NeutralizationSession:
        """A fresh placeholder session for one run (pass it as ``request.neutralization`` on
        every call of the run so placeholders stay stable)."""
        del context
        return NeutralizationSession()

    def neutralize_text(
        self,
        text: str,
        *,
        context: Any = None,
        session: NeutralizationSession | None = None,
    ) -> tuple[str, NeutralizationSession]:
        """``text`` as a model would receive it, and the session holding the placeholders."""
        session = session if session is not None else NeutralizationSession()
        return self._gate(context).apply(text, session), session

    # ---- chat ---------------------------------------------------------------------------

    def _prepare(self, request: AiCallRequest) -> _Prepared:
        session = request.neutralization
        if session is None:
            session = NeutralizationSession()
        gate = self._gate(request.context)
        messages, message_tokens = gate.prepare_messages(request.messages, session)
        input_tokens = REQUEST_OVERHEAD + message_tokens + count_tool_tokens(request.tools)
        chain = self._chain(
            request.operation,
            request.context,
            input_tokens + (request.max_output_tokens or 0),
            bool(request.tools),
            request.model,
        )
        if not request.allow_fallback:
            chain = chain[:1]
        chain = chain[: 1 + max(0, self.max_fallbacks)]
        metadata: dict[str, Any] = {
            "neutralization": {"placeholders": len(session), "errors": list(gate.errors)},
            "fallbacks": [],
            "retries": 0,
        }
        return _Prepared(session, gate, messages, chain, input_tokens, metadata)

    def _chat_request(self, request: AiCallRequest, prepared: _Prepared, spec: ModelSpec) -> Any:
        return ChatRequest(
            model=spec.id,
            messages=prepared.messages,
            tools=request.tools,
            temperature=request.temperature,
            max_output_tokens=request.max_output_tokens,
            operation=request.operation,
        )

    def timeout_for(self, spec: ModelSpec) -> float:
        """Seconds one call of ``spec`` may take (per-model setting, else ``timeout_s``)."""
        return self.model_timeouts.get(spec.id, self.timeout_s)

    async def _with_retries(
        self,
        spec: ModelSpec,
        call: Callable[[], Awaitable[T]],
        metadata: dict[str, Any],
        expect: type | None = None,
    ) -> T:
        per_call = self.timeout_for(spec)

        async def guarded() -> T:
            try:
                async with asyncio.timeout(per_call):
                    answer = await call()
            except ProviderError:
                raise
            except Exception as exc:
                raise _wrap_unexpected(spec.provider, exc) from exc
            if expect is not None and not isinstance(answer, expect):
                raise self._wrong_type(spec, answer, expect)
            return answer

        def on_retry(attempt: int, exc: ProviderError, wait: float) -> None:
            metadata["retries"] = metadata.get("retries", 0) + 1
            log.info("%s: attempt %d failed (%s); retrying in %.2fs", spec.id, attempt, exc, wait)

        try:
            async with asyncio.timeout(self.retry_budget_s):
                return await self.retry.run(guarded, on_retry)
        except TimeoutError:
            raise ProviderTimeoutError(
                f"{spec.id}: no answer within the retry budget of {self.retry_budget_s:g} s",
                provider=spec.provider,
            ) from None

    def _wrong_type(self, spec: ModelSpec, answer: Any, expected: type) -> ProviderError:
        """A provider broke the :class:`~nyla.models.ai.Provider` contract: the error names
        the plugin (not retried; the next model is not tried either)."""
        owner = self.kernel.plugins.owner_of("providers", spec.provider) or "?"
        return ProviderError(
            f"provider {spec.provider!r} of plugin {owner!r} answered {spec.id} with "
            f"{type(answer).__name__}, expected {expected.__name__} (a bug in the plugin)",
            provider=spec.provider,
        )

    def _record(self, context: Any, usage: Usage, cost: float) -> None:
        run_id = getattr(context, "workflow_id", None)
        for key in {run_id, None}:
            self._totals.setdefault(key, UsageTotals()).add(usage, cost)

    def _cost(self, spec: ModelSpec, usage: Usage, metadata: dict[str, Any]) -> float:
        cost = call_cost_chf(spec, usage)
        if cost is None:
            metadata["priceUnknown"] = True
            return 0.0
        return cost

    @staticmethod
    def _note_fallback(metadata: dict[str, Any], spec: ModelSpec, exc: Exception) -> None:
        metadata["fallbacks"].append(
            {"model": spec.id, "error": str(exc), "errorType": type(exc).__name__}
        )

    async def call(self, request: AiCallRequest) -> AiCallResponse:
        """One model call through the whole pipeline (see the module docstring).

        Raises :class:`BudgetExceeded`, :class:`~nyla.errors.NeutralizationError`,
        :class:`ModelNotAvailableError`, or the provider's typed error when every eligible
        model failed.
        """
        prepared = self._prepare(request)
        metadata = prepared.metadata
        last_error: Exception | None = None
        for spec, estimate in self._within_budget(
            prepared.chain,
            prepared.input_tokens,
            request.max_output_tokens,
            request.max_cost_chf,
            metadata,
        ):
            provider = self._provider(spec)
            chat_request = self._chat_request(request, prepared, spec)
            started = time.perf_counter()
            try:
                response: ChatResponse = await self._with_retries(
                    spec, lambda p=provider, r=chat_request: p.chat(r), metadata, ChatResponse
                )
            except ProviderError as exc:
                if not exc.retryable:
                    raise
                last_error = exc
                self._note_fallback(metadata, spec, exc)
                continue
            metadata["estimatedCostChf"] = estimate
            metadata["durationMs"] = round((time.perf_counter() - started) * 1000, 1)
            return self._finish(request, prepared, spec, response)
        raise self._exhausted(last_error)

    def _within_budget(
        self,
        chain: list[ModelSpec],
        input_tokens: int,
        max_output: int | None,
        budget: float | None,
        metadata: dict[str, Any],
    ) -> Iterator[tuple[ModelSpec, float | None]]:
        """The fallback chain with the budget preflight applied, as ``(spec, estimate)``: the
        first model must fit (else :class:`BudgetExceeded`); a later one that does not is
        noted as a fallback and skipped."""
        for index, spec in enumerate(chain):
            try:
                estimate = preflight(spec, input_tokens, max_output, budget)
            except BudgetExceeded as exc:
                if index == 0:
                    raise
                self._note_fallback(metadata, spec, exc)
                continue
            yield spec, estimate

    @staticmethod
    def _exhausted(
        last_error: Exception | None, message: str = "no model fits the remaining budget"
    ) -> Exception:
        """The error to raise when every model of the chain failed or was over budget."""
        return last_error or BudgetExceeded(message)

    def _finish(
        self,
        request: AiCallRequest,
        prepared: _Prepared,
        spec: ModelSpec,
        response: ChatResponse,
    ) -> AiCallResponse:
        metadata = {**response.metadata, **prepared.metadata}
        usage = response.usage
        if usage.total_tokens == 0:
            usage = Usage(
                input_tokens=prepared.input_tokens,
                output_tokens=count_text_tokens(response.content)
                + sum(count_text_tokens(c.arguments) for c in response.tool_calls),
            )
            metadata["usageEstimated"] = True
        cost = self._cost(spec, usage, metadata)
        self._record(request.context, usage, cost)
        invalid = invalid_tool_arguments(response.tool_calls)
        if invalid:
            metadata["invalidToolArguments"] = invalid
        restore = prepared.session.restore if request.restore_output else (lambda s: s)
        return AiCallResponse(
            content=restore(response.content),
            tool_calls=[
                ToolCall(id=c.id, name=c.name, arguments=restore(c.arguments))
                for c in response.tool_calls
            ],
            usage=usage,
            cost_chf=cost,
            model=spec.id,
            finish_reason=response.finish_reason,
            metadata=metadata,
        )

    async def stream(self, request: AiCallRequest) -> AsyncIterator[StreamDelta]:
        """Stream one call: ``text`` deltas, assembled ``tool_call`` s, and as the last item
        ``done`` with usage, finish reason and ``metadata["response"]`` (the assembled
        :class:`AiCallResponse`). Retries and fallback apply until the first delta was sent;
        a failure after that is raised to the consumer."""
        prepared = self._prepare(request)
        metadata = prepared.metadata
        last_error: Exception | None = None
        for spec, _estimate in self._within_budget(
            prepared.chain,
            prepared.input_tokens,
            request.max_output_tokens,
            request.max_cost_chf,
            metadata,
        ):
            provider = self._provider(spec)
            chat_request = self._chat_request(request, prepared, spec)
            attempt = 0
            while True:
                attempt += 1
                emitted = False
                text: list[str] = []
                calls: list[ToolCall] = []
                usage: Usage | None = None
                finish: str | None = None
                extra: dict[str, Any] = {}
                restorer = StreamRestorer(prepared.session) if request.restore_output else None
                try:
                    async for delta in bounded_stream(
                        provider.stream(chat_request),
                        idle_s=self.stream_idle_timeout_s,
                        total_s=self.timeout_for(spec),
                        provider_id=spec.provider,
                    ):
                        if not isinstance(delta, StreamDelta):
                            raise self._wrong_type(spec, delta, StreamDelta)
                        if delta.kind == "text" and delta.text:
                            text.append(delta.text)
                            out = restorer.feed(delta.text) if restorer else delta.text
                            if out:
                                emitted = True
                                yield StreamDelta(kind="text", text=out)
                        elif delta.kind == "tool_call" and delta.tool_call is not None:
                            calls.append(delta.tool_call)
                            call = delta.tool_call
                            if restorer:
                                call = ToolCall(
                                    id=call.id,
                                    name=call.name,
                                    arguments=prepared.session.restore(call.arguments),
                                )
                            emitted = True
                            yield StreamDelta(kind="tool_call", tool_call=call)
                        elif delta.kind in ("usage", "done"):
                            usage = delta.usage or usage
                            finish = delta.finish_reason or finish
                            extra.update(delta.metadata)
                except Exception as raw:
                    exc = _wrap_unexpected(spec.provider, raw)
                    if emitted:
                        raise exc from raw
                    wait = self.retry.delay(attempt, exc)
                    if wait is not None:
                        metadata["retries"] += 1
                        await self.retry.sleep(wait)
                        continue
                    if not exc.retryable:
                        raise exc from raw
                    last_error = exc
                    self._note_fallback(metadata, spec, exc)
                    break
                if restorer:
                    tail = restorer.flush()
                    if tail:
                        yield StreamDelta(kind="text", text=tail)
                response = ChatResponse(
                    content="".join(text),
                    tool_calls=calls,
                    usage=usage or Usage(),
                    finish_reason=finish,
                    model=spec.id,
                    metadata=extra,
                )
                final = self._finish(request, prepared, spec, response)
                yield StreamDelta(
                    kind="done",
                    usage=final.usage,
                    finish_reason=final.finish_reason,
                    metadata={"response": final},
                )
                return
        raise self._exhausted(last_error)

    # ---- embeddings ---------------------------------------------------------------------

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
        spec = self._chain(OperationType.EMBEDDING, context, 0, False, model)[0]
        dims = spec.capabilities.embedding_dimensions or 0
        if not texts:
            return EmbeddingResponse(vectors=[], model=spec.id, dimensions=dims)
        session = neutralization if neutralization is not None else NeutralizationSession()
        gate = self._gate(context)
        clean = [gate.apply(t, session) for t in texts]
        input_tokens = sum(count_text_tokens(t) for t in clean)
        preflight(spec, input_tokens, 0, max_cost_chf)
        provider = self._provider(spec)
        size = spec.capabilities.max_batch_size or DEFAULT_EMBED_BATCH
        if self.settings.get("embed_batch_size"):
            size = min(size, int(self.settings["embed_batch_size"]))
        metadata: dict[str, Any] = {"retries": 0}
        vectors: list[list[float]] = []
        usage = Usage()
        for start in range(0, len(clean), size):
            batch = clean[start : start + size]
            result: EmbeddingResponse = await self._with_retries(
                spec, lambda b=batch: provider.embed(spec.id, b), metadata, EmbeddingResponse
            )
            if len(result.vectors) != len(batch):
                raise ProviderError(
                    f"{spec.id} returned {len(result.vectors)} vectors for {len(batch)} texts",
                    provider=spec.provider,
                )
            vectors.extend(result.vectors)
            usage = usage + result.usage
            dims = result.dimensions or dims
        if usage.total_tokens == 0:
            usage = Usage(input_tokens=input_tokens)
        cost = call_cost_chf(spec, usage)
        cost = 0.0 if cost is None else cost
        self._record(context, usage, cost)
        return EmbeddingResponse(
            vectors=vectors, model=spec.id, dimensions=dims, usage=usage, cost_chf=cost
        )

    # ---- web search ---------------------------------------------------------------------

    async def web_search(
        self,
        query: str,
        *,
        context: Any = None,
        max_results: int = 5,
        model: str | None = None,
        max_cost_chf: float | None = None,
        allow_fallback: bool = True,
    ) -> list[WebSearchHit]:
        """Search the web through a ``webSearch`` model (neutralized query, retries,
        fallback). Placeholders in the hits are restored."""
        session = NeutralizationSession()
        clean = self._gate(context).apply(query, session)
        chain = self._chain(OperationType.WEB_SEARCH, context, 0, False, model)
        chain = chain[: 1 + max(0, self.max_fallbacks)] if allow_fallback else chain[:1]
        metadata: dict[str, Any] = {"fallbacks": [], "retries": 0}
        last_error: Exception | None = None
        tokens = count_text_tokens(clean)
        for spec, _estimate in self._within_budget(chain, tokens, 1, max_cost_chf, metadata):
            provider = self._provider(spec)
            try:
                hits: list[WebSearchHit] = await self._with_retries(
                    spec,
                    lambda p=provider, s=spec: p.web_search(s.id, clean, max_results),
                    metadata,
                    list,
                )
            except ProviderError as exc:
                if not exc.retryable:
                    raise
                last_error = exc
                self._note_fallback(metadata, spec, exc)
                continue
            usage = Usage(input_tokens=tokens)
            self._record(context, usage, call_cost_chf(spec, usage) or 0.0)
            return [
                hit.model_copy(
                    update={
                        "title": session.restore(hit.title),
                        "content": session.restore(hit.content),
                    }
                )
                for hit in hits[:max_results]
            ]
        raise self._exhausted(last_error, "no web search model fits the remaining budget")

    # ---- images -------------------------------------------------------------------------

    async def generate_image(
        self,
        prompt: str,
        *,
        context: Any = None,
        model: str | None = None,
        size: str = "1024x1024",
        max_cost_chf: float | None = None,
    ) -> list[ImagePart]:
        """Images for ``prompt`` from an ``imageGenerate`` model (neutralized prompt, budget
        preflight, retries, fallback). Cost is estimated from the prompt and the model's
        price for one image's output tokens."""
        session = NeutralizationSession()
        clean = self._gate(context).apply(prompt, session)
        chain = self._chain(OperationType.IMAGE_GENERATE, context, 0, False, model)
        chain = chain[: 1 + max(0, self.max_fallbacks)]
        metadata: dict[str, Any] = {"fallbacks": [], "retries": 0}
        last_error: Exception | None = None
        tokens = count_text_tokens(clean)
        for spec, _estimate in self._within_budget(chain, tokens, None, max_cost_chf, metadata):
            provider = self._provider(spec)
            if not hasattr(provider, "generate_image"):
                last_error = ModelNotAvailableError(f"{spec.provider} cannot generate images")
                continue
            try:
                images: list[ImagePart] = await self._with_retries(
                    spec,
                    lambda p=provider, s=spec: p.generate_image(s.id, clean, size=size),
                    metadata,
                    list,
                )
            except ProviderError as exc:
                if not exc.retryable:
                    raise
                last_error = exc
                self._note_fallback(metadata, spec, exc)
                continue
            usage = Usage(input_tokens=tokens, output_tokens=min(spec.max_output_tokens, 4160))
            self._record(context, usage, call_cost_chf(spec, usage) or 0.0)
            return images
        raise self._exhausted(last_error, "no image model fits the remaining budget")
