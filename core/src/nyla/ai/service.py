"""The AI service (``kernel.ai``): the one way to call a model.

Every operation (chat, stream, embeddings, web search, images) goes through one pipeline, in
this order (the shared steps live in :mod:`nyla.ai.pipeline` and :mod:`nyla.ai.route`):

1. **neutralize** — every neutralizer runs over all text going to the model; placeholders are
   stable within the run's :class:`~nyla.ai.neutralize.NeutralizationSession`;
2. **select model** — by operation, estimated prompt size, the context's allowed providers,
   tools, the capabilities the answer options need (``tool_choice``, ``stop``,
   ``response_format``: a model lacking one is passed over, an explicit one is refused with
   :class:`~nyla.errors.UnsupportedCapabilityError` before any call), rank; an explicit
   model id overrides;
3. **price preflight** — the estimate must fit the caller's remaining ``max_cost_chf``;
4. **provider call** — with jittered exponential backoff (``Retry-After`` honoured), then
   fallback to the next eligible model, recorded in ``response.fallbacks``;
5. **usage and cost** — recorded on the response and in the per-run totals.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from nyla.ai.embedding import EmbeddingOperations
from nyla.ai.neutralize import NeutralizationSession, StreamRestorer, pending_chars
from nyla.ai.pricing import UsageTotals
from nyla.ai.route import (
    Assembled,
    Route,
    assembled,
    invalid_tool_arguments,
    restored_calls,
    wrap_unexpected,
)
from nyla.ai.timeouts import bounded_stream
from nyla.ai.tokens import REQUEST_OVERHEAD, count_text_tokens, count_tokens, count_tool_tokens
from nyla.ai.traced import report_call
from nyla.config import pin_settings, unpin_settings
from nyla.cpu import OFFLOAD_CHARS, off_loop
from nyla.errors import ProviderError
from nyla.models.ai import (
    AiCallRequest,
    AiCallResponse,
    ChatResponse,
    ImagePart,
    Message,
    ModelSpec,
    OperationType,
    StreamDelta,
    Usage,
    WebSearchHit,
)
from nyla.models.model_query import ModelQuery

__all__ = ["AiService", "invalid_tool_arguments"]

log = logging.getLogger(__name__)


class AiService(EmbeddingOperations):
    """Calls models through the provider plugins of the plugin host (``kernel.ai``).

    ``settings`` (the kernel's ``settings["ai"]``): see :class:`~nyla.ai.pipeline.AiPipeline`.
    """

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
        query = ModelQuery.for_call(
            operation,
            context,
            estimated_tokens=estimated_tokens,
            needs_tools=needs_tools,
            model=model,
        )
        return self._chain(query)[0]

    def count_tokens(self, text_or_messages: Any, model_id: str | None = None) -> int:
        """Estimated tokens of a text or messages (offline, see :mod:`nyla.ai.tokens`)."""
        return count_tokens(text_or_messages, model_id)

    def totals(self, run_id: str | None = None) -> UsageTotals:
        """Usage and cost so far of the run ``run_id`` (the context's ``workflow_id``), or of
        everything this service called with ``None``."""
        return self._totals.get(run_id, UsageTotals())

    # ---- chat ---------------------------------------------------------------------------

    def _chat_route(self, request: AiCallRequest) -> tuple[Route, list[Message]]:
        session = request.neutralization
        if session is None:
            session = NeutralizationSession()
        gate = self._gate(request.context)
        messages, message_tokens = gate.prepare_messages(request.messages, session)
        route = self._route(
            request.operation,
            request.context,
            input_tokens=REQUEST_OVERHEAD + message_tokens + count_tool_tokens(request.tools),
            session=session,
            gate=gate,
            model=request.model,
            max_output=request.max_output_tokens,
            budget=request.max_cost_chf,
            needs_tools=bool(request.tools),
            needs=request.required_capabilities(),
            fallback=request.allow_fallback,
        )
        return route, messages

    async def _chat_route_off_loop(self, request: AiCallRequest) -> tuple[Route, list[Message]]:
        """:meth:`_chat_route` inside the caller's access rule, in a worker thread when the
        messages not yet neutralized in the run's session are long (:mod:`nyla.cpu`), then
        admitted by billing."""
        await self._govern(request.context)
        chars = pending_chars(request.messages, request.neutralization)
        if chars < OFFLOAD_CHARS:  # off_loop's own test, without its coroutine
            route, messages = self._chat_route(request)
        else:
            route, messages = await off_loop(chars, self._chat_route, request)
        await self._admit(request.context, route)
        return route, messages

    async def call(self, request: AiCallRequest) -> AiCallResponse:
        """One model call through the whole pipeline (see the module docstring).

        Raises :class:`BudgetExceeded`, :class:`~nyla.errors.NeutralizationError`,
        :class:`ModelNotAvailableError`, or the provider's typed error when every eligible
        model failed. The settings are read under one fingerprint for the whole call.
        """
        pinned = pin_settings()
        try:
            route, messages = await self._chat_route_off_loop(request)
            started, current = time.perf_counter(), None

            def chat(spec: ModelSpec, provider: Any) -> Awaitable[ChatResponse]:
                nonlocal started, current
                if spec is not current:  # the answering model's duration, retries included
                    started, current = time.perf_counter(), spec
                return provider.chat(self._chat_request(request, messages, spec))

            spec, estimate, response = await self._answer(route, chat, expect=ChatResponse)
            duration = round((time.perf_counter() - started) * 1000, 1)
            return self._finish(request, route, spec, response, estimate, duration)
        finally:
            unpin_settings(pinned)

    def _finish(
        self,
        request: AiCallRequest,
        route: Route,
        spec: ModelSpec,
        response: ChatResponse,
        estimate: float | None = None,
        duration_ms: float | None = None,
    ) -> AiCallResponse:
        """The service's answer; nothing is restored while the session holds no placeholder."""
        usage, estimated = response.usage, False
        if usage.input_tokens + usage.output_tokens == 0:  # (total_tokens without its frame)
            usage = Usage(
                input_tokens=route.input_tokens,
                output_tokens=count_text_tokens(response.content)
                + sum(count_text_tokens(c.arguments) for c in response.tool_calls),
            )
            estimated = True
        cost, unknown = self._settle(request.context, spec, usage, route)
        invalid = invalid_tool_arguments(response.tool_calls)
        placeholders = len(route.session)  # (restoring adds none: counted once)
        restore = route.session.restore if request.restore_output and placeholders else None
        out = assembled(
            AiCallResponse,
            {
                "content": restore(response.content) if restore else response.content,
                "tool_calls": restored_calls(response.tool_calls, restore),
                "usage": usage,
                "cost_chf": cost,
                "model": spec.id,
                "finish_reason": response.finish_reason,
                "fallbacks": list(route.fallbacks),
                "retries": route.retries,
                "invalid_tool_arguments": invalid,
                "usage_estimated": estimated,
                "price_unknown": unknown,
                "estimated_cost_chf": estimate,
                "duration_ms": duration_ms,
                "neutralization": route.report(placeholders),
                "metadata": dict(response.metadata),
            },
        )
        report_call(request, route, spec, response, out)
        return out

    async def stream(self, request: AiCallRequest) -> AsyncIterator[StreamDelta]:
        """Stream one call: ``text`` deltas, assembled ``tool_call`` s, and as the last item
        ``done`` with usage, finish reason and ``response`` (the assembled
        :class:`AiCallResponse`). Retries and fallback apply until the first delta was sent;
        a failure after that is raised to the consumer."""
        route, messages = await self._chat_route_off_loop(request)
        for spec, estimate in route.models():
            provider = self._provider(spec)
            chat_request = self._chat_request(request, messages, spec)
            attempt = 0
            while True:
                attempt += 1
                assembled = Assembled()
                try:
                    async for delta in self._stream_once(
                        request, route, spec, provider, chat_request, assembled
                    ):
                        yield delta
                except ProviderError as exc:
                    if assembled.emitted:
                        raise
                    wait = self.retry.delay(attempt, exc)
                    if wait is not None:
                        route.retries += 1
                        await self.retry.sleep(wait)
                        continue
                    route.failed(spec, exc)
                    break
                final = self._finish(request, route, spec, assembled.response(spec), estimate)
                yield StreamDelta(
                    kind="done",
                    usage=final.usage,
                    finish_reason=final.finish_reason,
                    response=final,
                )
                return
        raise route.exhausted()

    async def _stream_once(
        self,
        request: AiCallRequest,
        route: Route,
        spec: ModelSpec,
        provider: Any,
        chat_request: Any,
        into: Assembled,
    ) -> AsyncIterator[StreamDelta]:
        """One streamed attempt on ``spec``: deltas out (placeholders restored), the answer
        assembled in ``into``; any failure comes out as a typed :class:`ProviderError`."""
        restorer = StreamRestorer(route.session) if request.restore_output else None
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
                    into.text.append(delta.text)
                    out = restorer.feed(delta.text) if restorer else delta.text
                    if out:
                        into.emitted = True
                        yield StreamDelta(kind="text", text=out)
                elif delta.kind == "tool_call" and delta.tool_call is not None:
                    into.calls.append(delta.tool_call)
                    call = delta.tool_call
                    if restorer:
                        call = restored_calls([call], route.session.restore)[0]
                    into.emitted = True
                    yield StreamDelta(kind="tool_call", tool_call=call)
                elif delta.kind in ("usage", "done"):
                    into.usage = delta.usage or into.usage
                    into.finish = delta.finish_reason or into.finish
                    into.extra.update(delta.metadata)
        except Exception as raw:
            raise wrap_unexpected(spec.provider, raw) from raw
        if restorer:
            tail = restorer.flush()
            if tail:
                yield StreamDelta(kind="text", text=tail)

    # ---- web search and images ----------------------------------------------------------

    async def web_search(
        self,
        query: str,
        *,
        context: Any = None,
        max_results: int = 5,
        model: str | None = None,
        max_cost_chf: float | None = None,
        allow_fallback: bool = True,
        on_cost: Callable[[float], object] | None = None,
    ) -> list[WebSearchHit]:
        """Search the web through a ``webSearch`` model (neutralized query, retries,
        fallback). Placeholders in the hits are restored; the search's cost goes to
        ``on_cost`` (a tool charges its run with it)."""
        route, clean = await self._governed_text_route(
            OperationType.WEB_SEARCH,
            query,
            context,
            model=model,
            max_output=1,
            budget=max_cost_chf,
            fallback=allow_fallback,
            what="web search model",
        )
        spec, _estimate, hits = await self._answer(
            route, lambda s, p: p.web_search(s.id, clean, max_results), expect=list
        )
        cost, _unknown = self._settle(context, spec, Usage(input_tokens=route.input_tokens), route)
        if on_cost is not None:
            on_cost(cost)
        restore = route.session.restore
        return [
            hit.model_copy(update={"title": restore(hit.title), "content": restore(hit.content)})
            for hit in hits[:max_results]
        ]

    async def generate_image(
        self,
        prompt: str,
        *,
        context: Any = None,
        model: str | None = None,
        size: str = "1024x1024",
        max_cost_chf: float | None = None,
        on_cost: Callable[[float], object] | None = None,
    ) -> list[ImagePart]:
        """Images for ``prompt`` from an ``imageGenerate`` model (neutralized prompt, budget
        preflight, retries, fallback). Cost is estimated from the prompt and the model's
        price for one image's output tokens; ``on_cost`` gets it (a tool charges its run)."""
        route, clean = await self._governed_text_route(
            OperationType.IMAGE_GENERATE,
            prompt,
            context,
            model=model,
            budget=max_cost_chf,
            what="image model",
        )
        spec, _estimate, images = await self._answer(
            route,
            lambda s, p: p.generate_image(s.id, clean, size=size),
            expect=list,
            capability=("generate_image", "generate images"),
        )
        usage = Usage(
            input_tokens=route.input_tokens, output_tokens=min(spec.max_output_tokens, 4160)
        )
        cost, _unknown = self._settle(context, spec, usage, route)
        if on_cost is not None:
            on_cost(cost)
        return images
