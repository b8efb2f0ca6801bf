"""The ReAct loop over an explicit tool list (seeds: ``runAgentLoop``).

:func:`run_agent_loop` is the bare loop: the agent runtime calls it with the toolboxes it
activated, the feature data sub-agent with its own table tools and system prompt. Per round:
knowledge context (non-blocking), budget check, conversation upkeep (summarization), one AI
service call (operation ``agent``) with the active tool definitions, the tool calls
(read-only ones concurrently), the results back into the conversation, the round recorder
(non-blocking).

End states: ``completed``; ``maxRoundsReached`` and ``budgetExceeded`` (both end with a
progress report from one last tool-less call within the budget, or built from the trace when
no call fits); ``error``; ``cancelled``. The trace is written once, in one transaction, when
the run ends — whatever the end — so no half-written trace exists.

Validation failures: see :mod:`nyla.agent.repair` for the rule a tool result follows to count
as one (``error_details.code`` in ``VALIDATION_FAILURE_CODES`` or ``data["validationFailure"]``).

Cost of nested work: tools that spend money through the AI service outside the loop (the
``ai`` toolbox, a sub-agent) report it with ``ctx.extras["charge"](chf)`` so the run's budget
covers it; ``ctx.remaining_budget_chf`` and ``ctx.remaining_rounds`` are what such a tool may
still use.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from nyla.agent import events
from nyla.agent.conversation import (
    ConversationManager,
    build_system_prompt,
    compact_json,
    estimate_tokens,
    local_progress_summary,
    progress_request,
    summary_request_messages,
)
from nyla.agent.guard import clean_text
from nyla.agent.inherit import restricted_context
from nyla.agent.registry import (
    Dispatched,
    ToolRegistry,
    before_call_hook,
    plan_batches,
    result_text,
)
from nyla.agent.repair import repair_counters, validation_failure_code
from nyla.errors import BudgetExceeded, NylaError
from nyla.models.agent import (
    AgentConfig,
    AgentEvent,
    AgentStatus,
    AgentTrace,
    RunContext,
    ToolCallLog,
)
from nyla.models.ai import AiCallRequest, AiCallResponse, Message, OperationType, Role, Usage
from nyla.models.tools import Tool, ToolContext

log = logging.getLogger(__name__)

ContextBuilder = Callable[[str, RunContext], Awaitable[str]]
RoundRecorder = Callable[..., Awaitable[Any]]


#: Output tokens of the closing progress report (kept short so it fits a nearly spent budget).
PROGRESS_MAX_OUTPUT = 400


class RunCancelled(Exception):
    """The caller cancelled the run (raised inside the loop, never out of it)."""


@dataclass
class _Run:
    """Mutable state of one run."""

    trace: AgentTrace
    config: AgentConfig
    spent: float = 0.0
    usage: Usage = field(default_factory=Usage)
    last_text: str = ""
    unknown_price: bool = False

    @property
    def remaining_budget(self) -> float | None:
        if self.config.max_cost_chf is None:
            return None
        return max(0.0, self.config.max_cost_chf - self.spent)

    def charge(self, chf: float | None) -> None:
        """Add nested spending (AI tools, sub-agents) to the run's cost."""
        if chf:
            self.spent += float(chf)


async def _race(awaitable: Awaitable[Any], cancel: asyncio.Event | None) -> Any:
    """Await ``awaitable`` unless ``cancel`` is set first (then cancel it and raise)."""
    if cancel is None:
        return await awaitable
    if cancel.is_set():
        if asyncio.iscoroutine(awaitable):
            awaitable.close()
        raise RunCancelled
    task = asyncio.ensure_future(awaitable)
    waiter = asyncio.ensure_future(cancel.wait())
    try:
        done, _ = await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        task.cancel()
        raise
    finally:
        waiter.cancel()
    if task in done:
        return task.result()
    task.cancel()
    await asyncio.wait({task})  # let the cancelled work unwind; its outcome no longer matters
    raise RunCancelled


def new_neutralization_session(kernel: Any, context: RunContext) -> Any:
    """One placeholder session per run so placeholders stay stable across its calls."""
    factory = getattr(getattr(kernel, "ai", None), "neutralization_session", None)
    try:
        if callable(factory):
            return factory(context)
        from nyla.ai.neutralize import NeutralizationSession

        return NeutralizationSession()
    except Exception as exc:  # no neutralization in this build: the AI service decides
        log.debug("no neutralization session: %s", exc)
        return None


def _restore(session: Any, text: str) -> str:
    restore = getattr(session, "restore", None)
    if not callable(restore) or not text:
        return text
    try:
        return restore(text)
    except Exception as exc:
        log.warning("re-personalizing the final text failed: %s", exc)
        return text


def _context_window(kernel: Any, model_id: str | None) -> int | None:
    if not model_id:
        return None
    spec_of = getattr(getattr(kernel, "ai", None), "model_spec", None)
    try:
        if callable(spec_of):
            spec = spec_of(model_id)
            if spec is not None:
                return spec.context_window
    except Exception:
        pass
    for spec in kernel.plugins.models():
        if spec.id == model_id:
            return spec.context_window
    return None


def _token_counter(kernel: Any, model_id: Callable[[], str | None]) -> Any:
    """The AI service's token counter for the run's model (the estimate without one)."""
    count = getattr(getattr(kernel, "ai", None), "count_tokens", None)
    if not callable(count):
        return estimate_tokens
    return lambda messages: count(messages, model_id())


def _price_known(kernel: Any, model_id: str | None) -> bool:
    for spec in kernel.plugins.models():
        if spec.id == model_id:
            return (
                spec.price_input_chf_per_mtok is not None
                and spec.price_output_chf_per_mtok is not None
            )
    return True  # a model the registry does not list: the AI service priced the call


async def _call_model(
    kernel: Any,
    request: AiCallRequest,
    *,
    stream: bool,
    round_: int,
    cancel: asyncio.Event | None,
    sink: list[AgentEvent],
) -> AiCallResponse:
    """One model call; streamed text deltas go to ``sink`` as CHUNK events."""
    if not stream or not hasattr(kernel.ai, "stream"):
        return await _race(kernel.ai.call(request), cancel)
    iterator = kernel.ai.stream(request).__aiter__()
    response: AiCallResponse | None = None
    try:
        while True:
            try:
                delta = await _race(iterator.__anext__(), cancel)
            except StopAsyncIteration:
                break
            if delta.kind == "text" and delta.text:
                sink.append(events.chunk(round_, clean_text(delta.text)))
            elif delta.kind == "done":
                response = delta.metadata.get("response")
    finally:
        closer = getattr(iterator, "aclose", None)
        if closer is not None:
            with contextlib.suppress(Exception):
                await closer()  # release the provider's connection when we stop early
    if response is None:
        raise RuntimeError("the model stream ended without a final response")
    if isinstance(response, dict):
        response = AiCallResponse.model_validate(response)
    return response


class _LiveSink:
    """Where a streaming model call puts its CHUNK events (``append``), read by the loop as
    they arrive rather than after the call."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[AgentEvent] = asyncio.Queue()

    def append(self, event: AgentEvent) -> None:
        self.queue.put_nowait(event)

    async def drain_while(self, call: asyncio.Future[Any]) -> AsyncIterator[AgentEvent]:
        """Yield events until ``call`` is done, then the rest; a consumer that stops early
        cancels the call."""
        try:
            while not call.done():
                getter = asyncio.ensure_future(self.queue.get())
                done, _ = await asyncio.wait({call, getter}, return_when=asyncio.FIRST_COMPLETED)
                if getter in done:
                    yield getter.result()
                else:
                    getter.cancel()
            while not self.queue.empty():
                yield self.queue.get_nowait()
        finally:
            if not call.done():
                call.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await call


async def run_agent_loop(
    kernel: Any,
    prompt: str,
    *,
    config: AgentConfig,
    context: RunContext,
    tools: list[Tool],
    system_prompt: str | None = None,
    parent_run_id: str | None = None,
    context_builder: ContextBuilder | None = None,
    round_recorder: RoundRecorder | None = None,
    run_id: str | None = None,
    cancel: asyncio.Event | None = None,
    neutralization: Any = None,
    extras: dict[str, Any] | None = None,
) -> AsyncIterator[AgentEvent]:
    """Run the ReAct loop and yield its events.

    ``tools`` is read again every round (a ``requestToolbox`` handler may extend the same list
    in place). ``system_prompt`` replaces the default base prompt (the temporal block is
    always added). ``context_builder(prompt, context) -> str`` supplies a knowledge block per
    round; ``round_recorder(run_id=, round=, context=, file_refs=, tool_results=, decisions=)``
    is called after each round; failures of either are logged and the run goes on.
    ``cancel`` set by the caller ends the run with status ``cancelled``. ``neutralization``
    shares a placeholder session (a sub-agent passes its parent's); ``extras`` go into every
    :class:`ToolContext`.

    The last two events are always FINAL and AGENT_SUMMARY.
    """
    run_id = run_id or uuid.uuid4().hex
    context = restricted_context(kernel, config, context)
    trace = AgentTrace(
        run_id=run_id,
        prompt=prompt,
        started_at=datetime.now(UTC),
        parent_run_id=parent_run_id,
        context=context,
        model=config.model,
    )
    run = _Run(trace=trace, config=config)
    session = neutralization or new_neutralization_session(kernel, context)
    conversation = ConversationManager(
        build_system_prompt(system_prompt or config.system_prompt, context.timezone),
        prompt,
        count_tokens=_token_counter(kernel, lambda: trace.model or config.model),
    )
    registry = ToolRegistry(
        tools, before_call=before_call_hook(kernel), default_timeout_s=config.tool_timeout_s
    )
    tool_extras = {
        **(extras or {}),
        "charge": run.charge,
        "neutralization": session,
        "model": config.model,
    }
    status = AgentStatus.RUNNING
    final_text = ""
    round_ = 0
    sink: list[AgentEvent] = []

    def remaining_rounds() -> int:
        return max(0, config.max_rounds - round_)

    def request(operation: OperationType, messages: list[Message], **kw: Any) -> AiCallRequest:
        return AiCallRequest(
            operation=operation,
            messages=messages,
            temperature=config.temperature,
            context=context,
            max_cost_chf=run.remaining_budget,
            neutralization=session,
            **kw,
        )

    def account(response: AiCallResponse, *, agent_call: bool = True) -> None:
        run.spent += response.cost_chf or 0.0
        run.usage = run.usage + response.usage
        if agent_call:  # the run's model (and its window) is the one answering as the agent
            trace.model = response.model or trace.model
        if config.max_cost_chf is not None and not _price_known(kernel, response.model):
            run.unknown_price = True

    async def summarizer(transcript: str) -> str:
        response = await _race(
            kernel.ai.call(
                request(OperationType.DATA_ANALYSE, summary_request_messages(transcript))
            ),
            cancel,
        )
        account(response, agent_call=False)
        return response.content

    try:
        while round_ < config.max_rounds:
            if cancel is not None and cancel.is_set():
                raise RunCancelled
            if run.unknown_price or (
                config.max_cost_chf is not None and run.spent >= config.max_cost_chf
            ):
                status = AgentStatus.BUDGET_EXCEEDED
                break
            round_ += 1
            trace.rounds = round_
            yield events.status(round_, "round", maxRounds=config.max_rounds)

            if context_builder is not None:
                try:
                    conversation.knowledge_context = (
                        await _race(context_builder(prompt, context), cancel) or ""
                    )
                except RunCancelled:
                    raise
                except Exception as exc:  # RAG is optional (seeds: non-blocking)
                    log.warning("knowledge context failed in round %d: %s", round_, exc)
                    conversation.knowledge_context = ""
                    yield events.status(round_, "contextFailed", error=str(exc))

            registry.refresh(tools)
            window = _context_window(kernel, trace.model or config.model)
            if conversation.needs_summary(window):
                yield events.status(round_, "summarizing", tokens=conversation.tokens())
                try:
                    await conversation.summarize(summarizer)
                except (RunCancelled, BudgetExceeded):
                    raise
                except Exception as exc:  # the full conversation is still there; go on
                    log.warning("summarization failed: %s", exc)
                    yield events.error(round_, f"summarization failed: {exc}")

            live = _LiveSink()
            call = asyncio.ensure_future(
                _call_model(
                    kernel,
                    request(
                        OperationType.AGENT,
                        conversation.for_call(),
                        tools=registry.definitions(),
                        model=config.model,
                    ),
                    stream=config.stream,
                    round_=round_,
                    cancel=cancel,
                    sink=live,  # type: ignore[arg-type]
                )
            )
            async for event in live.drain_while(call):
                yield event  # CHUNK events reach the caller while the model still streams
            response = call.result()
            account(response)
            run.last_text = response.content or run.last_text
            conversation.add(
                Message(
                    role=Role.ASSISTANT,
                    content=response.content,
                    tool_calls=response.tool_calls,
                )
            )
            if not response.tool_calls:
                final_text = response.content
                status = AgentStatus.COMPLETED
                break

            round_results: list[Dispatched] = []
            for call in response.tool_calls:
                yield events.tool_call(round_, call, registry.is_read_only(call))

            def ctx_for(call: Any, _round: int = round_) -> ToolContext:
                return ToolContext(
                    run=context,
                    kernel=kernel,
                    run_id=run_id,
                    round=_round,
                    call_id=call.id,
                    remaining_rounds=remaining_rounds(),
                    remaining_budget_chf=run.remaining_budget,
                    extras=tool_extras,
                )

            for batch in plan_batches(response.tool_calls, registry.is_read_only):
                if len(batch) == 1:
                    done = [await _race(registry.dispatch(batch[0], ctx_for(batch[0])), cancel)]
                else:
                    done = list(
                        await _race(
                            asyncio.gather(*(registry.dispatch(c, ctx_for(c)) for c in batch)),
                            cancel,
                        )
                    )
                for item in done:
                    text = result_text(item.result)
                    trace.tool_calls.append(
                        ToolCallLog(
                            round=round_,
                            call_id=item.call.id,
                            tool_name=item.call.name,
                            arguments=item.call.arguments,
                            success=item.result.success,
                            error=item.result.error,
                            validation_failure_code=validation_failure_code(item.result),
                            duration_ms=item.duration_ms,
                        )
                    )
                    conversation.add(
                        Message(
                            role=Role.TOOL,
                            content=text,
                            tool_call_id=item.call.id,
                            name=item.call.name,
                        )
                    )
                    round_results.append(item)
                    yield events.tool_result(round_, item.call, item.result, item.duration_ms, text)

            if round_recorder is not None:
                try:
                    await _race(
                        round_recorder(
                            run_id=run_id,
                            round=round_,
                            context=context,
                            file_refs=_file_refs(round_results),
                            tool_results=[
                                {
                                    "toolName": d.call.name,
                                    "success": d.result.success,
                                    "content": result_text(d.result)[:2000],
                                }
                                for d in round_results
                            ],
                            decisions=[response.content] if response.content else [],
                        ),
                        cancel,
                    )
                except RunCancelled:
                    raise
                except Exception as exc:  # round memory is optional (seeds: non-blocking)
                    log.warning("recording round %d failed: %s", round_, exc)
        else:
            status = AgentStatus.MAX_ROUNDS_REACHED
    except BudgetExceeded as exc:
        status = AgentStatus.BUDGET_EXCEEDED
        trace.error = str(exc)
    except (RunCancelled, asyncio.CancelledError, GeneratorExit) as exc:
        trace.status = AgentStatus.CANCELLED
        trace.error = "cancelled by the caller"
        await _finish(kernel, run, "")
        if isinstance(exc, RunCancelled):
            yield events.final(round_, "", str(AgentStatus.CANCELLED))
            yield events.summary(trace)
            return
        raise
    except Exception as exc:
        if isinstance(exc, NylaError):  # a typed error says what happened (a replay drift too)
            log.error("agent run %s failed: %s", run_id, exc)
        else:
            log.exception("agent run %s failed", run_id)
        status = AgentStatus.ERROR
        trace.error = f"{type(exc).__name__}: {exc}"
        final_text = f"The run failed: {trace.error}"
        yield events.error(round_, trace.error)

    if status in (AgentStatus.MAX_ROUNDS_REACHED, AgentStatus.BUDGET_EXCEEDED):
        try:
            final_text = await _progress_report(
                kernel, run, conversation, status, request, account, cancel, sink, round_
            )
        except RunCancelled:
            trace.status = AgentStatus.CANCELLED
            await _finish(kernel, run, "")
            yield events.final(round_, "", str(AgentStatus.CANCELLED))
            yield events.summary(trace)
            return
        for event in sink:
            yield event
        sink.clear()

    trace.status = status
    final_text = clean_text(_restore(session, final_text))
    await _finish(kernel, run, final_text)
    yield events.final(round_, final_text, str(status))
    yield events.summary(trace)


async def _progress_report(
    kernel: Any,
    run: _Run,
    conversation: ConversationManager,
    status: AgentStatus,
    request: Callable[..., AiCallRequest],
    account: Callable[[AiCallResponse], None],
    cancel: asyncio.Event | None,
    sink: list[AgentEvent],
    round_: int,
) -> str:
    """One last tool-less call for a progress report; built from the trace when it cannot be
    made (budget spent, unknown price, provider down)."""
    if not run.unknown_price and (run.remaining_budget is None or run.remaining_budget > 0):
        try:
            response = await _call_model(
                kernel,
                request(
                    OperationType.AGENT,
                    [*conversation.for_call(), progress_request(str(status))],
                    model=run.config.model,
                    max_output_tokens=PROGRESS_MAX_OUTPUT,
                ),
                stream=run.config.stream,
                round_=round_,
                cancel=cancel,
                sink=sink,
            )
            account(response)
            if response.content.strip():
                return response.content
        except RunCancelled:
            raise
        except Exception as exc:
            log.info("progress report call not possible (%s); building it from the trace", exc)
    lines = [
        f"{c.tool_name}({compact_json(c.arguments)[:80]}) -> "
        + ("ok" if c.success else f"error: {c.error}")
        for c in run.trace.tool_calls
    ]
    return local_progress_summary(str(status), run.trace.prompt, lines, run.last_text)


def _file_refs(results: list[Dispatched]) -> list[str]:
    refs: list[str] = []
    for d in results:
        data = d.result.data
        if isinstance(data, dict):
            for key in ("fileId", "docItem"):
                if isinstance(data.get(key), str):
                    refs.append(data[key])
    return refs


async def _finish(kernel: Any, run: _Run, final_text: str) -> None:
    """Fill in the trace's totals and persist it (one transaction; failures logged)."""
    trace = run.trace
    trace.final_text = final_text
    trace.cost_chf = round(run.spent, 10)
    trace.input_tokens = run.usage.input_tokens
    trace.output_tokens = run.usage.output_tokens
    trace.finished_at = datetime.now(UTC)
    counters = repair_counters(trace.tool_calls)
    trace.validation_failures = counters["validation_failures"]
    trace.repair_attempts = counters["repair_attempts"]
    trace.success_after_repair = counters["success_after_repair"]
    settings = getattr(kernel, "settings", {}) or {}
    if not settings.get("persist_traces", True):
        return
    from nyla.agent.trace import save_trace

    try:
        await asyncio.shield(save_trace(kernel.db, trace))
    except Exception as exc:  # never lost: saved reduced, with the reason
        log.warning(
            "persisting the trace of run %s failed: %s; saving it reduced", trace.run_id, exc
        )
        reduced = trace.model_copy(
            update={
                "tool_calls": [
                    c.model_copy(update={"arguments": "", "error": None}) for c in trace.tool_calls
                ],
                "error": f"trace reduced: {type(exc).__name__}: {exc}"[:2000]
                + (f"; run error: {trace.error}" if trace.error else ""),
            }
        )
        try:
            await asyncio.shield(save_trace(kernel.db, reduced))
        except Exception as again:
            log.error(
                "the reduced trace of run %s could not be saved either: %s", trace.run_id, again
            )
