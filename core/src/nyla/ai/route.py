"""The shared part of the AI service's pipeline: a request's :class:`Route`.

Every operation (chat, stream, embeddings, web search, images) goes the same way: its input
is neutralized, the selector lists the models that may answer (the fallback chain), each
model's price is checked against the caller's remaining budget before it is called, a model
is retried on transient failures and then replaced by the next one. A :class:`Route` holds
one request's chain, budget and what happened on the way (fallbacks, retries); the service
walks it the same way for every operation.
"""

from __future__ import annotations

import asyncio
import json.scanner
import logging
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from nyla.ai.neutralize import NeutralizationGate, NeutralizationSession
from nyla.ai.pricing import estimate_cost_chf, within_budget
from nyla.ai.retry import RetryPolicy
from nyla.ai.timeouts import loop_deadlines
from nyla.errors import BudgetExceeded, ProviderError, ProviderTimeoutError
from nyla.models.ai import (
    ChatResponse,
    FallbackNote,
    InvalidToolArguments,
    ModelSpec,
    NeutralizationReport,
    ToolCall,
    Usage,
)
from nyla.models.base import assembled
from nyla.text import loads_json

log = logging.getLogger(__name__)

T = TypeVar("T")

#: the C scanner ``json.loads`` ends in, called directly for the usual arguments (one JSON
#: object, nothing around it): what a failure is, and every other text, ``loads_json`` says
_scan_json = json.scanner.make_scanner(cast(Any, json.JSONDecoder()))


@dataclass
class Route:
    """One request's way through the pipeline: the models to try in order (``chain``), the
    neutralized input's size and the caller's remaining budget, and what happened."""

    chain: list[ModelSpec]
    input_tokens: int
    max_output: int | None
    budget: float | None
    session: NeutralizationSession
    gate: NeutralizationGate
    #: the operation's name (``agent``, ``embedding``, ...), as billing records it
    operation: str = ""
    #: what to say when no model could even be tried (every one over budget)
    exhausted_message: str = "no model fits the remaining budget"
    fallbacks: list[FallbackNote] = field(default_factory=list)
    retries: int = 0
    last_error: Exception | None = None
    #: when the route was made, its input neutralised (``time.time_ns()``): where a streamed
    #: call starts for its span
    started_ns: int = field(default_factory=time.time_ns)
    #: the hold billing's preflight took for a call outside a run (released with its row)
    hold: str | None = None
    #: the estimate billing admitted the call with (CHF)
    admitted_chf: float = 0.0
    #: the last model estimated and its estimate (see :meth:`estimate`)
    estimated: tuple[ModelSpec, float | None] | None = field(default=None, repr=False)

    def estimate(self, spec: ModelSpec) -> float | None:
        """The estimated cost of a call of ``spec`` with this route's input, made once for
        the model billing's preflight and the price preflight both ask about (the first)."""
        kept = self.estimated
        if kept is not None and kept[0] is spec:
            return kept[1]
        value = estimate_cost_chf(spec, self.input_tokens, self.max_output)
        self.estimated = (spec, value)
        return value

    def models(self) -> Iterator[tuple[ModelSpec, float | None]]:
        """The chain with the budget preflight applied, as ``(spec, estimated cost)``: the
        first model must fit (else :class:`BudgetExceeded`); a later one that does not is
        noted as a fallback and skipped."""
        for index, spec in enumerate(self.chain):
            try:
                estimate = within_budget(spec, self.estimate(spec), self.budget)
            except BudgetExceeded as exc:
                if index == 0:
                    raise
                self.note_fallback(spec, exc)
                continue
            yield spec, estimate

    def failed(self, spec: ModelSpec, exc: ProviderError) -> None:
        """``spec`` gave up with ``exc``: raise it when another model would not do better
        (auth, bad request), else note it and go on with the next model."""
        if not exc.retryable:
            raise exc
        self.last_error = exc
        self.note_fallback(spec, exc)

    def note_fallback(self, spec: ModelSpec, exc: Exception) -> None:
        self.fallbacks.append(
            FallbackNote(model=spec.id, error=str(exc), error_type=type(exc).__name__)
        )

    def exhausted(self) -> Exception:
        """The error to raise when every model of the chain failed or was over budget."""
        return self.last_error or BudgetExceeded(self.exhausted_message)

    def report(self, placeholders: int | None = None) -> NeutralizationReport:
        """What neutralization did for this request (``placeholders``: the session's size,
        when the caller has just counted it)."""
        if placeholders is None:
            placeholders = len(self.session)
        return assembled(
            NeutralizationReport,
            {"placeholders": placeholders, "errors": list(dict.fromkeys(self.gate.errors))},
        )


async def with_retries(
    retry: RetryPolicy,
    spec: ModelSpec,
    call: Callable[[], Awaitable[T]],
    route: Route,
    *,
    timeout_s: float,
    budget_s: float,
    expect: type | None = None,
    wrong_type: Callable[[ModelSpec, Any, type], ProviderError] | None = None,
) -> T:
    """``call()`` with ``timeout_s`` per attempt, retried by ``retry`` within ``budget_s`` of
    wall-clock time; failures come out as typed :class:`ProviderError` s.

    One deadline per attempt (:class:`~nyla.ai.timeouts.Deadlines`, as ``asyncio.timeout_at``),
    at the nearer of the attempt's and the budget's; a retry whose wait would end past the
    budget gives up at once. An answer that is not an ``expect`` instance fails with
    ``wrong_type(spec, answer, expect)`` (not retried)."""
    loop = asyncio.get_running_loop()
    deadlines = loop_deadlines(loop)
    give_up = loop.time() + budget_s
    attempt = 0
    while True:
        attempt += 1
        deadline = min(loop.time() + timeout_s, give_up)
        entry = deadlines.enter(deadline)
        try:
            answer = await call()
        except BaseException as raised:
            failure: BaseException = raised
            if deadlines.leave(entry, raised):
                failure = TimeoutError()  # the deadline's cancel, as asyncio.timeout words it
            elif not isinstance(raised, Exception):
                raise
            if entry.expired and deadline >= give_up:
                raise _over_budget(spec, budget_s) from None
            error = wrap_unexpected(spec.provider, cast(Exception, failure))
        else:
            deadlines.leave(entry, None)
            if expect is None or isinstance(answer, expect):
                return answer
            if wrong_type is None:
                raise TypeError(f"{spec.id} answered {type(answer).__name__}")
            raise wrong_type(spec, answer, expect)
        wait = retry.delay(attempt, error)
        if wait is None:
            raise error
        if loop.time() + wait >= give_up:
            raise _over_budget(spec, budget_s) from error
        route.retries += 1
        log.info("%s: attempt %d failed (%s); retrying in %.2fs", spec.id, attempt, error, wait)
        await retry.sleep(wait)


def _over_budget(spec: ModelSpec, budget_s: float) -> ProviderTimeoutError:
    return ProviderTimeoutError(
        f"{spec.id}: no answer within the retry budget of {budget_s:g} s",
        provider=spec.provider,
    )


def wrap_unexpected(provider_id: str, exc: Exception) -> ProviderError:
    """Any failure of a provider call as a typed :class:`ProviderError`."""
    if isinstance(exc, ProviderError):
        return exc
    if isinstance(exc, TimeoutError):
        return ProviderTimeoutError(f"{provider_id}: no answer in time", provider=provider_id)
    if isinstance(exc, NotImplementedError):
        return ProviderError(
            f"{provider_id} does not support this operation: {exc}", provider=provider_id
        )
    return ProviderError(f"{provider_id} failed: {exc!r}", provider=provider_id)


def invalid_tool_arguments(calls: list[ToolCall]) -> list[InvalidToolArguments]:
    """Structured errors for tool calls whose arguments are not a JSON object (the calls are
    kept verbatim; the agent reports the error back to the model instead of crashing)."""
    out = []
    for call in calls:
        raw = call.arguments
        if raw and raw[0] == "{" and raw[-1] == "}":  # ~3k instructions less a call
            try:
                value, end = _scan_json(raw, 0)
            except Exception:  # (StopIteration, JSONDecodeError, RecursionError)
                pass
            else:
                if end == len(raw) and type(value) is dict:
                    continue
        try:
            value = loads_json(raw or "{}")
        except Exception as exc:  # RecursionError of deep nesting included: never fatal here
            error = f"invalid JSON: {type(exc).__name__}"
        else:
            if isinstance(value, dict):
                continue
            error = "arguments are not a JSON object"
        out.append(InvalidToolArguments(id=call.id, name=call.name, error=error))
    return out


class Assembled:
    """What one streamed attempt of the AI service sent so far."""

    def __init__(self) -> None:
        self.emitted = False
        self.text: list[str] = []
        self.calls: list[ToolCall] = []
        self.usage: Usage | None = None
        self.finish: str | None = None
        self.extra: dict[str, Any] = {}

    def response(self, spec: ModelSpec) -> ChatResponse:
        return ChatResponse(
            content="".join(self.text),
            tool_calls=self.calls,
            usage=self.usage or Usage(),
            finish_reason=self.finish,
            model=spec.id,
            metadata=self.extra,
        )


def restored_calls(calls: list[ToolCall], restore: Callable[[str], str] | None) -> list[ToolCall]:
    """``calls`` with placeholders in their arguments restored (unchanged calls kept)."""
    if restore is None:
        return list(calls)
    out = []
    for call in calls:
        arguments = restore(call.arguments)
        if arguments != call.arguments:
            call = ToolCall(id=call.id, name=call.name, arguments=arguments)
        out.append(call)
    return out
