"""One run of the agent loop: its state and the steps of a round.

A round is *prepare* (knowledge context, summarization) -> *ask the model* -> *dispatch* the
tool calls it asked for (planned in batches: consecutive read-only calls together) ->
*record* the round. :func:`nyla.agent.loop.run_agent_loop` drives the rounds and the end of
the run; the end itself (progress report, trace) is in :mod:`nyla.agent.ending`.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from nyla.agent import events
from nyla.agent.cancel import CancelScope, RunCancelled, race
from nyla.agent.conversation import (
    ConversationManager,
    build_system_prompt,
    said,
    summary_request_messages,
    token_counter,
    tool_message,
)
from nyla.agent.inherit import restricted_context
from nyla.agent.model_call import assembled_request, call_model_live
from nyla.agent.registry import Dispatched, ToolRegistry, before_call_hook, result_text
from nyla.agent.repair import validation_failure_code
from nyla.errors import BudgetExceeded
from nyla.models.agent import (
    AgentEvent,
    AgentStatus,
    AgentTrace,
    CallRecord,
    RoundToolResult,
    RunContext,
)
from nyla.models.ai import (
    AiCallRequest,
    AiCallResponse,
    Message,
    OperationType,
    Role,
    ToolCall,
    ToolDefinition,
    Usage,
)
from nyla.models.tools import Tool, ToolContext

if TYPE_CHECKING:
    from nyla.agent.ports import AgentServices
    from nyla.agent.spec import ContextBuilder, RunSpec
    from nyla.ai.service import AiService

log = logging.getLogger(__name__)
_new, _set = object.__new__, object.__setattr__


class AgentRun:
    """The state of one run (trace, conversation, tools, spending) and its round steps."""

    def __init__(self, services: AgentServices, spec: RunSpec) -> None:
        config, prompt = spec.config, spec.prompt
        self.services, self.spec, self.config, self.prompt = services, spec, config, prompt
        self.ai, self.tools = services.ai, spec.tools
        run_id = spec.run_id or uuid.uuid4().hex
        self.context = billed_context(
            restricted_context(services.plugins, config, spec.context), spec, run_id
        )
        #: the caller's cancel event as the run waits on it (``None``: no one can cancel)
        self.cancel = CancelScope(spec.cancel) if spec.cancel is not None else None
        self.context_builder, self.round_recorder = spec.context_builder, spec.round_recorder
        self.trace = AgentTrace(
            run_id=run_id,
            prompt=prompt,
            started_at=datetime.now(UTC),
            parent_run_id=spec.parent_run_id,
            context=self.context,
            model=config.model,
        )
        self.session = spec.neutralization or new_neutralization_session(self.ai, self.context)
        trace = self.trace  # (not ``self``: a finished run is freed without the collector)
        self.conversation = ConversationManager(
            build_system_prompt(spec.system_prompt or config.system_prompt, self.context.timezone),
            prompt,
            history=spec.history,
            continued=spec.continued,
            count_tokens=token_counter(self.ai, lambda: trace.model or config.model),
        )
        self.registry = ToolRegistry(
            self.offered(),
            before_call=before_call_hook(services.plugins),
            default_timeout_s=config.tool_timeout_s,
            database=services.db,
        )
        #: rounds played (an interrupted run's completed ones count: its limits hold)
        self.round = sum(1 for m in spec.continued or () if m.role is Role.ASSISTANT)
        self.spent = 0.0
        self.input_tokens = self.output_tokens = 0
        self.last_text = ""
        self.unknown_price = False
        #: the answer of the round that ended the run (``None`` while it goes on)
        self.answer: str | None = None
        self._window: tuple[str | None, int | None] = ("", None)
        #: the trace's tool calls, in call order: kept as records and written from them at
        #: the end (``trace.tool_calls`` stays empty in a run; the read API gives the models)
        self.calls: list[CallRecord] = []
        #: executed calls not yet in :attr:`calls` (see :meth:`log_calls`)
        self._unlogged: list[tuple[int, Dispatched]] = []
        #: the calls of the round being dispatched (a call's place numbers its documents),
        #: and each one's place by identity (kept beside them, so no id can be reused)
        self._round_calls: list[ToolCall] = []
        self._call_numbers: dict[int, int] = {}
        #: what every call's tool context shares (see :meth:`tool_context`)
        self._tool_base: ToolContext | None = None

    def offered(self) -> list[Tool]:
        """The tools the model may call: a sub-agent (a run with a parent) never gets a
        top-level-only tool, whatever its spec or a requested toolbox holds."""
        if self.spec.parent_run_id is None:
            return self.tools
        return [t for t in self.tools if not t.top_level_only]

    @property
    def run_id(self) -> str:
        return self.trace.run_id

    @property
    def usage(self) -> Usage:
        """Tokens of the run's model calls so far."""
        return Usage(input_tokens=self.input_tokens, output_tokens=self.output_tokens)

    @property
    def remaining_budget(self) -> float | None:
        if self.config.max_cost_chf is None:
            return None
        return max(0.0, self.config.max_cost_chf - self.spent)

    def charge(self, chf: float | None) -> None:
        """Add nested spending (AI tools, sub-agents) to the run's cost."""
        if chf:
            self.spent += float(chf)

    def stop_reason(self) -> AgentStatus | None:
        """Why no further round starts (``None``: start one); :class:`RunCancelled` when the
        caller cancelled."""
        if self.round >= self.config.max_rounds:
            return AgentStatus.MAX_ROUNDS_REACHED
        if self.cancel is not None and self.cancel.is_set():
            raise RunCancelled
        limit = self.config.max_cost_chf
        if self.unknown_price or (limit is not None and self.spent >= limit):
            return AgentStatus.BUDGET_EXCEEDED
        return None

    # ---- model calls --------------------------------------------------------------------

    def request(
        self,
        operation: OperationType,
        messages: list[Message],
        *,
        tools: list[ToolDefinition] | None = None,
        model: str | None = None,
        max_output_tokens: int | None = None,
    ) -> AiCallRequest:
        """An AI service request on the run's behalf (its context, budget and placeholders).

        Built without validation, as :meth:`~nyla.models.base.WireModel.trusted` builds it
        (written out here: its keyword packing and checks were ~10k instructions a round):
        every value is the run's own and already typed (the conversation's messages, the registry's
        definitions, the config), and validating the request revalidated the whole growing
        conversation every round. It sets no answer option (``tool_choice``, ``stop``), so the
        options check has nothing to refuse."""
        return assembled_request(
            operation,
            messages,
            tools if tools is not None else [],
            self.config.temperature,
            self.context,
            self.remaining_budget,
            self.session,
            model,
            max_output_tokens,
        )

    def account(self, response: AiCallResponse, *, agent_call: bool = True) -> None:
        """Add a response's cost and usage to the run."""
        self.spent += response.cost_chf or 0.0
        usage = response.usage
        self.input_tokens += usage.input_tokens
        self.output_tokens += usage.output_tokens
        # the run's model (and its window) is the one answering as the agent
        if agent_call and response.model and response.model != self.trace.model:
            self.trace.model = response.model
        if self.config.max_cost_chf is not None and response.price_unknown:
            self.unknown_price = True

    async def summarize(self, transcript: str) -> str:
        """One summarization call over ``transcript`` (charged to the run)."""
        request = self.request(OperationType.DATA_ANALYSE, summary_request_messages(transcript))
        response = await race(self.ai.call(request), self.cancel)
        self.account(response, agent_call=False)
        return response.content

    # ---- one round ----------------------------------------------------------------------

    async def play_round(self) -> AsyncIterator[AgentEvent]:
        """Prepare -> ask the model -> dispatch its tool calls -> record. Sets
        :attr:`answer` when the model answered without tool calls."""
        self.round += 1
        yield events.status(self.round, "round", maxRounds=self.config.max_rounds)
        builder = self.context_builder  # (awaited: in a generator each wait costs a layer)
        if builder is not None and (failed := await self.knowledge_context(builder)):
            yield failed
        self.registry.refresh(self.offered())
        if self.conversation.needs_summary(self.context_window()):
            async for event in self.upkeep():
                yield event
        request = self.request(
            OperationType.AGENT,
            self.conversation.for_call(),
            tools=self.registry.definitions(),
            model=self.config.model,
        )
        if self.config.stream:
            answers: list[AiCallResponse] = []
            async for event in call_model_live(
                self.ai, request, stream=True, round_=self.round, cancel=self.cancel, into=answers
            ):
                yield event  # CHUNK events reach the caller while the model still streams
            response = answers[0]
        else:  # (call_model's own, without its frame: nothing streams)
            asked = self.ai.call(request)
            response = await (asked if self.cancel is None else self.cancel.wait(asked))
        self.account(response)
        self.last_text = response.content or self.last_text
        if not response.tool_calls:
            self.conversation.add(said(response))
            self.answer = response.content
            return
        # Dispatch (see ToolRegistry.execute), here and not in a generator of its own: every
        # event passes each generator it is yielded through (~1.1k instructions an event a
        # layer). The model's message joins the conversation and the TOOL_CALL events go out
        # once the first batch is running (the checks come first, so nothing in between can
        # fail); each result goes to the trace, the conversation and out as a TOOL_RESULT.
        calls, registry, round_ = response.tool_calls, self.registry, self.round
        results: list[Dispatched] = []
        flags: list[bool] = []  # each call's read-only flag, as the batch plan found it
        self._round_calls = calls
        self._call_numbers = {id(c): i for i, c in enumerate(calls, 1)}
        async for batch in registry.execute(calls, self.tool_context, self.cancel, True, flags):
            if not batch:  # the first batch is running
                self.conversation.add(said(response))
                self.log_calls()
                for call, read_only in zip(calls, flags, strict=True):
                    yield events.tool_call(round_, call, read_only)
                continue
            for item in batch:
                call, result = item.call, item.result
                text = item.text = result_text(result)
                self._unlogged.append((round_, item))
                self.conversation.add(tool_message(call, text))
                results.append(item)
                yield events.tool_result(round_, call, result, item.duration_ms, text)
            if len(results) < len(calls):  # a later batch runs: do the next call's work now
                self.log_calls()
                self.prepare_ahead()
        await self.record(response, results)

    async def knowledge_context(self, builder: ContextBuilder) -> AgentEvent | None:
        """The round's knowledge context from ``builder`` into the conversation (optional: a
        failure is reported by the event returned, and the run goes on)."""
        try:
            work = builder(self.prompt, self.context)
            block = await (work if self.cancel is None else self.cancel.wait(work))
            self.conversation.knowledge_context = block or ""
            take_cost = getattr(builder, "take_cost", None)
            if take_cost is not None:  # the prompt's embedding is the run's cost too
                self.charge(take_cost())
        except RunCancelled:
            raise
        except Exception as exc:  # RAG is optional (seeds: non-blocking)
            log.warning("knowledge context failed in round %d: %s", self.round, exc)
            self.conversation.knowledge_context = ""
            return events.status(self.round, "contextFailed", error=str(exc))
        return None

    async def upkeep(self) -> AsyncIterator[AgentEvent]:
        """Summarization near the model's window (a failure is reported; the run goes on)."""
        conversation = self.conversation
        yield events.status(self.round, "summarizing", tokens=conversation.tokens())
        try:
            await conversation.summarize(self.summarize)
        except (RunCancelled, BudgetExceeded):
            raise
        except Exception as exc:  # the full conversation is still there; go on
            log.warning("summarization failed: %s", exc)
            yield events.error(self.round, f"summarization failed: {exc}")

    def log_calls(self) -> None:
        """Put the executed calls not yet there into :attr:`calls`. The turn's last batch is
        logged once the next turn's tools run, or when the run ends (:mod:`~nyla.agent.ending`
        calls this first): nothing waits for it between a result and the next model call."""
        logs, record = self.calls, CallRecord.of
        for round_, item in self._unlogged:
            call, result = item.call, item.result
            logs.append(
                record(
                    round_,
                    call.id,
                    call.name,
                    call.arguments,
                    result.success,
                    result.error,
                    None if result.success else validation_failure_code(result),
                    item.duration_ms,
                )
            )
        self._unlogged.clear()

    def prepare_ahead(self) -> None:
        """Neutralize the conversation so far while the last tools run (the next model call
        then neutralizes only their results)."""
        if self.session is not None:
            self.ai.prepare_ahead(self.conversation.for_call(), self.session, self.context)

    def tool_context(self, call: ToolCall) -> ToolContext:
        """What the handler of ``call`` gets: the run's context, services, limits and session
        (a copy of the run's own with the call's place, round and limits, made as ``copied``
        makes it, without its checks and keywords, once per call: 22.9k -> 13.5k instrs)."""
        base = self._tool_base
        if base is None:  # (constructed, not validated: the run's own values, of their types)
            spec = self.spec
            base = self._tool_base = ToolContext.model_construct(
                run=self.context,
                services=spec.services,
                run_id=self.run_id,
                action_number=1,
                neutralization=self.session,
                model=self.config.model,
                toolboxes=spec.toolboxes,
                workflow=spec.workflow,
                **dict.fromkeys(("round", "task_number", "remaining_rounds", "on_charge")),
                call_id=None,
                remaining_budget_chf=None,
            )
        values = base.__dict__.copy()
        values["round"] = round_ = self.round
        values["task_number"] = self._call_numbers.get(id(call), 0)
        values["call_id"] = call.id
        values["remaining_rounds"] = max(0, self.config.max_rounds - round_)
        values["remaining_budget_chf"] = self.remaining_budget
        values["on_charge"] = self.charge  # (not in the base: the run would hold itself)
        context = _new(ToolContext)
        _set(context, "__dict__", values)
        _set(context, "__pydantic_fields_set__", set(base.__pydantic_fields_set__))
        _set(context, "__pydantic_extra__", None)
        _set(context, "__pydantic_private__", None)
        return context

    async def record(self, response: AiCallResponse, results: list[Dispatched]) -> None:
        """Hand the round to the round recorder (optional: a failure is logged): the file ids
        and document references its results name and each result as round memory keeps it,
        both made in one pass."""
        recorder = self.round_recorder
        if recorder is None:
            return
        try:
            refs: list[str] = []
            kept: list[RoundToolResult] = []
            for d in results:
                result = d.result
                data = result.data
                if isinstance(data, dict):
                    for key in ("fileId", "docItem"):
                        if isinstance(data.get(key), str):
                            refs.append(data[key])
                text = d.text if d.text is not None else result_text(result)
                made = _new(RoundToolResult)  # RoundToolResult(name, success, text)
                _set_tool_name(made, d.call.name)
                _set_success(made, result.success)
                _set_content(made, text[:2000])
                kept.append(made)
            work = recorder(
                run_id=self.run_id,
                round=self.round,
                context=self.context,
                file_refs=refs,
                tool_results=kept,
                decisions=[response.content] if response.content else [],
            )
            await (work if self.cancel is None else self.cancel.wait(work))
        except RunCancelled:
            raise
        except Exception as exc:  # round memory is optional (seeds: non-blocking)
            log.warning("recording round %d failed: %s", self.round, exc)

    def context_window(self) -> int | None:
        """The window of the run's current model (looked up once per model)."""
        model_id = self.trace.model or self.config.model
        if self._window[0] != model_id:
            self._window = (model_id, _context_window(self.services, model_id))
        return self._window[1]


#: RoundToolResult's slots, set through their descriptors (``record``): the frozen
#: dataclass's ``__init__`` sets each through ``object.__setattr__`` (5.6k -> 3.4k
#: instructions a result, four a round; the same object, equal to the constructed one)
_set_tool_name, _set_success, _set_content = (
    RoundToolResult.__dict__[name].__set__ for name in ("tool_name", "success", "content")
)


def billed_context(context: RunContext, spec: RunSpec, run_id: str) -> RunContext:
    """``context`` billed to ``run_id``; a sub-agent's (``spec.parent_run_id``) stays billed
    to the run it inherited (so a run's ledger rows hold everything it started)."""
    if context.run_id is not None and spec.parent_run_id is not None:
        return context
    return context.model_copy(update={"run_id": run_id})


def new_neutralization_session(ai: AiService, context: RunContext) -> Any:
    """One placeholder session per run so placeholders stay stable across its calls."""
    try:
        return ai.neutralization_session(context)
    except Exception as exc:  # no neutralization in this build: the AI service decides
        log.debug("no neutralization session: %s", exc)
        return None


def _context_window(services: AgentServices, model_id: str | None) -> int | None:
    if not model_id:
        return None
    try:
        spec = services.ai.model_spec(model_id)
        if spec is not None:
            return spec.context_window
    except Exception:
        pass
    for spec in services.plugins.models():
        if spec.id == model_id:
            return spec.context_window
    return None
