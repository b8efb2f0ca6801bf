"""The ReAct loop over an explicit tool list (seeds: ``runAgentLoop``).

:func:`run_agent_loop` is the bare loop: the agent runtime calls it with the toolboxes it
activated, the feature data sub-agent with its own table tools and system prompt. One round
(:meth:`~nyla.agent.run.AgentRun.play_round`) is: prepare (knowledge context, non-blocking;
conversation upkeep, i.e. summarization) -> one AI service call (operation ``agent``) with
the active tool definitions -> dispatch the tool calls (read-only ones concurrently) with
their results back into the conversation -> record the round (non-blocking). Before each
round the loop checks the round limit, cancellation and the budget.

End states: ``completed``; ``maxRoundsReached`` and ``budgetExceeded`` (both end with a
progress report from one last tool-less call within the budget, or built from the trace when
no call fits); ``error``; ``cancelled``. The trace is written once, in one transaction, when
the run ends — whatever the end — so no half-written trace exists (:mod:`nyla.agent.ending`).

Validation failures: see :mod:`nyla.agent.repair` for the rule a tool result follows to count
as one (``error_details.code`` in ``VALIDATION_FAILURE_CODES`` or ``data["validationFailure"]``).

Cost of nested work: tools that spend money through the AI service outside the loop (the
``ai`` toolbox, a sub-agent) report it with ``ctx.charge(chf)`` so the run's budget covers
it; ``ctx.remaining_budget_chf`` and ``ctx.remaining_rounds`` are what such a tool may still
use, ``ctx.neutralization`` and ``ctx.model`` what it passes on.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING, Any

from nyla.agent import events
from nyla.agent.cancel import RunCancelled
from nyla.agent.ending import cancelled, close, closing_events
from nyla.agent.run import AgentRun, ContextBuilder, RoundRecorder
from nyla.errors import BudgetExceeded, NylaError
from nyla.models.agent import AgentConfig, AgentEvent, AgentStatus, RunContext
from nyla.models.ai import Message
from nyla.models.tools import Tool

if TYPE_CHECKING:
    from nyla.agent.ports import AgentHost

__all__ = ["ContextBuilder", "RoundRecorder", "RunCancelled", "run_agent_loop"]

log = logging.getLogger(__name__)


async def run_agent_loop(
    kernel: AgentHost,
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
    history: list[Message] | None = None,
) -> AsyncGenerator[AgentEvent, None]:
    """Run the ReAct loop and yield its events.

    ``tools`` is read again every round (a ``requestToolbox`` handler may extend the same list
    in place). ``system_prompt`` replaces the default base prompt (the temporal block is
    always added). ``context_builder(prompt, context) -> str`` supplies a knowledge block per
    round; ``round_recorder(run_id=, round=, context=, file_refs=, tool_results=, decisions=)``
    is called after each round; failures of either are logged and the run goes on.
    ``cancel`` set by the caller ends the run with status ``cancelled``. ``neutralization``
    shares a placeholder session (a sub-agent passes its parent's); ``extras`` go into every
    :class:`ToolContext`; ``history`` (a conversation's earlier prompts and answers) comes
    before ``prompt``. The last two events are always FINAL and AGENT_SUMMARY."""
    run = AgentRun(
        kernel,
        prompt,
        config=config,
        context=context,
        tools=tools,
        system_prompt=system_prompt,
        parent_run_id=parent_run_id,
        context_builder=context_builder,
        round_recorder=round_recorder,
        run_id=run_id,
        cancel=cancel,
        neutralization=neutralization,
        extras=extras,
        history=history,
    )
    try:
        trace = run.trace
        status, final_text = AgentStatus.RUNNING, ""
        try:
            while (stop := run.stop_reason()) is None:
                async for event in run.play_round():
                    yield event
                if run.answer is not None:
                    stop, final_text = AgentStatus.COMPLETED, run.answer
                    break
            status = stop
        except BudgetExceeded as exc:
            status = AgentStatus.BUDGET_EXCEEDED
            trace.error = str(exc)
        except (RunCancelled, asyncio.CancelledError, GeneratorExit) as exc:
            await cancelled(run)
            if isinstance(exc, RunCancelled):
                for event in closing_events(run, ""):
                    yield event
                return
            raise
        except Exception as exc:
            if isinstance(exc, NylaError):  # a typed error says what happened (a replay drift too)
                log.error("agent run %s failed: %s", run.run_id, exc)
            else:
                log.exception("agent run %s failed", run.run_id)
            status = AgentStatus.ERROR
            trace.error = f"{type(exc).__name__}: {exc}"
            final_text = f"The run failed: {trace.error}"
            yield events.error(run.round, trace.error)

        async for event in close(run, status, final_text):
            yield event
    finally:
        if run.cancel is not None:
            run.cancel.close()  # its watcher ends with the run
