"""The steps every operation of the AI service shares: settings, model selection, the
neutralization gate, the fallback walk with retries, and cost recording.

:class:`AiPipeline` is the base of :class:`~nyla.ai.service.AiService`, which adds the
operations themselves (chat, stream, embeddings, web search, images).
"""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from nyla.ai.model_chain import ModelChains
from nyla.ai.neutralize import NeutralizationGate, NeutralizationSession
from nyla.ai.pricing import UsageTotals, call_cost_chf
from nyla.ai.retry import RetryPolicy
from nyla.ai.route import Route, assembled, with_retries
from nyla.ai.selector import ModelSelector
from nyla.ai.speech import SpeechOperations
from nyla.ai.timeouts import seconds_setting
from nyla.ai.tokens import count_text_tokens
from nyla.config import config_value
from nyla.cpu import off_loop
from nyla.errors import ModelNotAvailableError, ProviderError
from nyla.models.ai import AiCallRequest, ChatRequest, Message, ModelSpec, OperationType, Usage
from nyla.models.billing import Charge
from nyla.models.model_query import ModelQuery

if TYPE_CHECKING:
    from nyla.ai.access_rule import AccessRule
    from nyla.ai.ports import AccessRules, ProviderPlugins, Spending

log = logging.getLogger(__name__)

T = TypeVar("T")

#: what :meth:`AiPipeline._rule` finds for a context whose rule was not read
_UNREAD: Any = object()


class AiPipeline:
    """The pipeline every operation of the AI service goes through (see
    :mod:`nyla.ai.service`), over the provider plugins of ``plugins`` (the plugin host).

    ``settings`` (the kernel's ``settings["ai"]``, all optional): ``neutralize`` (default ``True``; a
    context with ``require_neutralization`` always neutralizes), ``max_attempts`` (3),
    ``base_delay_s`` (0.5), ``max_retry_after_s`` (60), ``timeout_s`` (600, per provider call),
    ``max_fallbacks`` (2), ``embed_batch_size`` (caps the model's batch size),
    ``default_models`` (operation -> model id; also
    ``NYLA_MODEL_<OPERATION>`` from the environment / config file).

    ``access`` (the model access entries, :class:`~nyla.ai.access.ModelAccess`) binds every
    call of a context's user and mandate; ``spending`` (billing) is asked before every
    operation and told its cost after it. Without them (a bare service in a test) neither
    applies.
    """

    def __init__(
        self,
        plugins: ProviderPlugins,
        settings: Mapping[str, Any] | None = None,
        *,
        retry: RetryPolicy | None = None,
        access: AccessRules | None = None,
        spending: Spending | None = None,
    ) -> None:
        self.plugins = plugins
        self.access = access
        self.spending = spending
        #: the access rule of each (user, mandate) the service was asked for, as last read
        self._rules: dict[tuple[str | None, str | None], AccessRule | None] = {}
        settings = dict(settings or {})
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
        #: a :class:`nyla.ai.recording.Tape` while runs are recorded or replayed
        self.tape: Any = None
        self.selector = ModelSelector(self._model_specs)
        #: each call's chain inside its access rule, the ranked part kept between calls
        self.chains = ModelChains(self.selector, self._models, settings, self._model_specs)
        self._totals: dict[str | None, UsageTotals] = {}
        #: require_neutralization -> (the neutralizers, a gate of them), see :meth:`_gate`
        self._gates: dict[bool, tuple[tuple[Any, ...], NeutralizationGate]] = {}

    # ---- selection ------------------------------------------------------------------

    def _models(self) -> list[ModelSpec]:
        if self.tape is not None and self.tape.replaying:
            return self.tape.models()
        return self.plugins.models()

    def _model_specs(self) -> tuple[ModelSpec, ...]:
        """:meth:`_models` as a tuple: the plugin host's kept one when it has one (the same
        object while its specs are; see :meth:`nyla.plugins.PluginHost.model_specs`)."""
        if self.tape is not None and self.tape.replaying:
            return tuple(self.tape.models())
        kept = getattr(self.plugins, "model_specs", None)  # (a host of a test may lack it)
        return kept() if kept is not None else tuple(self.plugins.models())

    def _provider(self, spec: ModelSpec) -> Any:
        provider = self.plugins.providers.get(spec.provider)
        if self.tape is not None:
            return self.tape.provider(spec, provider)
        if provider is None:
            raise ModelNotAvailableError(f"provider {spec.provider!r} of {spec.id!r} is not loaded")
        return provider

    def _chain(self, query: ModelQuery, rule: AccessRule | None = None) -> list[ModelSpec]:
        """The selector's chain for ``query`` inside the caller's access ``rule`` (see
        :class:`~nyla.ai.model_chain.ModelChains`)."""
        return self.chains.chain(query, rule)

    @functools.cached_property
    def speech(self) -> SpeechOperations:
        """Text to speech and speech to text (:mod:`nyla.ai.speech`)."""
        return SpeechOperations(self)

    # ---- neutralization -----------------------------------------------------------------

    def _gate(self, context: Any) -> NeutralizationGate:
        """A gate of its own for one call (its errors are the call's: concurrent runs' calls
        never share one), made from the gate kept for ``require`` while the neutralizers to
        run are the same (10.1k -> 6.4k instructions a call; built again when they change)."""
        require = bool(getattr(context, "require_neutralization", False))
        enabled = require or self.settings.get("neutralize", True)
        neutralizers = tuple(self.plugins.neutralizers.values()) if enabled else ()
        kept = self._gates.get(require)
        if kept is not None and kept[0] == neutralizers:
            return kept[1].for_call()
        if require and not neutralizers:
            from nyla.errors import NeutralizationError

            raise NeutralizationError(
                "neutralization is required but no neutralizer is installed: call blocked"
            )
        gate = NeutralizationGate(neutralizers, require=require)
        if all(type(n).__eq__ is object.__eq__ for n in neutralizers):
            # (kept only when ``==`` above is ``is``: an equal but other object is another
            # neutralizer)
            self._gates[require] = (neutralizers, gate)
        return gate.for_call()

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

    def prepare_ahead(
        self, messages: list[Message], session: NeutralizationSession, context: Any = None
    ) -> None:
        """Neutralize and count ``messages`` now, for a caller that is waiting anyway (the
        agent loop while a tool runs): the next call in ``session`` that starts with them
        pays only for what was added. Best effort: a failure here is the next call's to
        report."""
        if not session.lock.acquire(blocking=False):  # a call is neutralizing in a thread
            return
        try:
            self._gate(context).prepare_messages(messages, session)
        except Exception as exc:
            log.debug("neutralizing ahead failed: %s", exc)
        finally:
            session.lock.release()

    # ---- governance: model access and billing --------------------------------------------

    async def _govern(self, context: Any) -> None:
        """Read the access rule of ``context``'s user and mandate (kept a few seconds by
        :class:`~nyla.ai.access.ModelAccess`) before a route is made for it."""
        if self.access is None or context is None:
            return
        key = (getattr(context, "user_id", None), getattr(context, "mandate_id", None))
        self._rules[key] = await self.access.rule(*key)

    def _rule(self, context: Any) -> AccessRule | None:
        """The access rule :meth:`_govern` read for ``context`` (an operation that skipped
        it is a bug, refused rather than let through)."""
        if self.access is None or context is None:
            return None
        key = (getattr(context, "user_id", None), getattr(context, "mandate_id", None))
        rule = self._rules.get(key, _UNREAD)
        if rule is _UNREAD:
            raise RuntimeError("model access was not read before the model was selected")
        return rule

    async def _admit(self, context: Any, route: Route) -> None:
        """Billing's preflight for the route's first model (:class:`SpendingRefused` when
        the mandate or user may not spend its estimate)."""
        if self.spending is None or not route.chain:
            return
        estimate = route.estimate(route.chain[0])
        route.hold = await self.spending.admit(context, route.operation, estimate, route.budget)
        route.admitted_chf = estimate or 0.0

    def close_run(self, run_id: str) -> Awaitable[int] | None:
        """The run ``run_id`` ended: what writes its ledger rows and releases its hold
        (``None`` without billing)."""
        return None if self.spending is None else self.spending.close_run(run_id)

    # ---- the pipeline -------------------------------------------------------------------

    @staticmethod
    def _chat_request(request: AiCallRequest, messages: list[Message], spec: ModelSpec) -> Any:
        """The provider's request for ``spec`` from a checked one (its messages neutralized)."""
        return assembled(
            ChatRequest,
            {
                "tool_choice": request.tool_choice,
                "stop": request.stop,
                "response_format": request.response_format,
                "model": spec.id,
                "messages": messages,
                "tools": request.tools,
                "temperature": request.temperature,
                "max_output_tokens": request.max_output_tokens,
                "operation": request.operation,
            },
        )

    def _route(
        self,
        operation: OperationType,
        context: Any,
        *,
        input_tokens: int,
        session: NeutralizationSession,
        gate: NeutralizationGate,
        model: str | None = None,
        max_output: int | None = None,
        budget: float | None = None,
        needs_tools: bool = False,
        needs: tuple[str, ...] = (),
        fallback: bool = True,
        sized: bool = True,
        what: str = "model",
    ) -> Route:
        """Steps 2 and 3 for neutralized input of ``input_tokens``: the fallback chain (one
        model without ``fallback``; the window checked against the input and the answer when
        ``sized``; every model declaring the capabilities in ``needs``) under the caller's
        remaining ``budget``."""
        window = input_tokens + (max_output or 0) if sized else 0
        limit = 1 + max(0, self.max_fallbacks) if fallback else 1
        # (positional, the enum's value read as its attribute: keywords and the ``value``
        # property cost ~1k instructions each)
        rule = self._rule(context)
        chain = self.chains.chain_for(
            operation, context, rule, window, needs_tools, model, needs, limit
        )
        if what == "model":  # (the route's own message)
            return Route(chain, input_tokens, max_output, budget, session, gate, operation._value_)
        message = f"no {what} fits the remaining budget"
        return Route(
            chain, input_tokens, max_output, budget, session, gate, operation._value_, message
        )

    def _text_route(
        self, operation: OperationType, text: str, context: Any, **kw: Any
    ) -> tuple[Route, str]:
        """A route for one text (a search query, an image prompt) and the text neutralized."""
        session = kw.pop("session", None) or NeutralizationSession()
        gate = self._gate(context)
        clean = gate.apply(text, session)
        route = self._route(
            operation,
            context,
            input_tokens=count_text_tokens(clean),
            session=session,
            gate=gate,
            sized=False,
            **kw,
        )
        return route, clean

    async def _governed_text_route(
        self, operation: OperationType, text: str, context: Any, **kw: Any
    ) -> tuple[Route, str]:
        """:meth:`_text_route` (off the event loop for a long text) inside the caller's
        access rule, admitted by billing."""
        await self._govern(context)
        route, clean = await off_loop(len(text), self._text_route, operation, text, context, **kw)
        await self._admit(context, route)
        return route, clean

    async def _answer(
        self,
        route: Route,
        attempt: Callable[[ModelSpec, Any], Awaitable[T]],
        *,
        expect: type,
        capability: tuple[str, str] | None = None,
    ) -> tuple[ModelSpec, float | None, T]:
        """Step 4: ``attempt(spec, provider)`` with retries on each model of the route until
        one answers with an ``expect`` instance: ``(spec, estimated cost, answer)``. A
        provider without the method ``capability[0]`` is passed over (it "cannot
        ``capability[1]``")."""
        for spec, estimate in route.models():
            provider = self._provider(spec)
            if capability and not hasattr(provider, capability[0]):
                route.last_error = ModelNotAvailableError(f"{spec.provider} cannot {capability[1]}")
                continue
            try:
                answer = await self._with_retries(
                    spec, functools.partial(attempt, spec, provider), route, expect
                )
            except ProviderError as exc:
                route.failed(spec, exc)
                continue
            return spec, estimate, answer
        raise route.exhausted()

    def _with_retries(
        self,
        spec: ModelSpec,
        call: Callable[[], Awaitable[T]],
        route: Route,
        expect: type | None = None,
    ) -> Awaitable[T]:
        """``call()`` with the service's timeouts and retries; an answer that is not an
        ``expect`` instance is the provider plugin's bug (named, not retried)."""
        return with_retries(
            self.retry,
            spec,
            call,
            route,
            timeout_s=self.timeout_for(spec),
            budget_s=self.retry_budget_s,
            expect=expect,
            wrong_type=self._wrong_type,
        )

    def _wrong_type(self, spec: ModelSpec, answer: Any, expected: type) -> ProviderError:
        """A provider broke the :class:`~nyla.models.ai.Provider` contract: the error names
        the plugin (not retried; the next model is not tried either)."""
        owner = self.plugins.owner_of("providers", spec.provider) or "?"
        return ProviderError(
            f"provider {spec.provider!r} of plugin {owner!r} answered {spec.id} with "
            f"{type(answer).__name__}, expected {expected.__name__} (a bug in the plugin)",
            provider=spec.provider,
        )

    def _settle(
        self, context: Any, spec: ModelSpec, usage: Usage, route: Route | None = None
    ) -> tuple[float, bool]:
        """Step 5: the cost of ``usage`` (0 and ``True`` when the model has no price),
        recorded in the totals and, for billing, in the ledger (with the route's hold)."""
        cost = call_cost_chf(spec, usage)
        self._record(context, usage, cost or 0.0)
        if self.spending is not None and route is not None:
            charge = Charge(
                route.operation,
                spec.id,
                cost or 0.0,
                usage.input_tokens,
                usage.output_tokens,
                {"priceUnknown": True} if cost is None else {},
                route.admitted_chf,
            )
            self.spending.record(context, charge, route.hold)
            route.hold = None
        return (0.0, True) if cost is None else (cost, False)

    def record_cost(self, cost_chf: float, **where: Any) -> None:
        """Book a cost reported from outside the AI service (an MCP server's price for a tool
        call) as a model call's is booked: in the totals and, with billing, in the ledger.
        ``where``: ``context`` (whose), ``operation``, ``source`` (in the model column) and
        ``detail``. ``ValueError`` for a negative or non-finite cost."""
        if not math.isfinite(cost_chf) or cost_chf < 0:
            raise ValueError(f"a cost must be a finite amount of 0 or more, not {cost_chf!r}")
        context = where.get("context")
        self._record(context, Usage(), cost_chf)
        if self.spending is not None:
            detail = {"reported": True, **(where.get("detail") or {})}
            operation, source = str(where["operation"]), str(where["source"])
            self.spending.record(context, Charge(operation, source, cost_chf, detail=detail))

    def _record(self, context: Any, usage: Usage, cost: float) -> None:
        """Count a call of ``usage`` and ``cost`` in its run's totals and in everything's
        (as :meth:`UsageTotals.add`, the usage read once)."""
        run_id = getattr(context, "workflow_id", None)
        kept = self._totals
        input_tokens, output_tokens = usage.input_tokens, usage.output_tokens
        if run_id is not None:
            totals = kept.get(run_id)
            if totals is None:
                totals = kept[run_id] = UsageTotals()
            totals.calls += 1
            totals.input_tokens += input_tokens
            totals.output_tokens += output_tokens
            totals.cost_chf += cost
        totals = kept.get(None)
        if totals is None:
            totals = kept[None] = UsageTotals()
        totals.calls += 1
        totals.input_tokens += input_tokens
        totals.output_tokens += output_tokens
        totals.cost_chf += cost

    def timeout_for(self, spec: ModelSpec) -> float:
        """Seconds one call of ``spec`` may take (per-model setting, else ``timeout_s``)."""
        return self.model_timeouts.get(spec.id, self.timeout_s)
