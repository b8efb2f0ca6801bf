"""The ReAct loop over an explicit tool list (seeds: ``runAgentLoop``).

:func:`run_agent_loop` is the bare loop over a :class:`~nyla.agent.spec.RunSpec`: the agent
runtime gives it the toolboxes it activated, the feature data sub-agent its own table tools
and system prompt. One round (:meth:`~nyla.agent.run.AgentRun.play_round`) is: prepare
(knowledge context, non-blocking; conversation upkeep, i.e. summarization) -> one AI service
call (operation ``agent``) with the active tool definitions -> dispatch the tool calls
(read-only ones concurrently) with their results back into the conversation -> record the
round (non-blocking). Before each round the loop checks the round limit, cancellation and the
budget.

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
from typing import TYPE_CHECKING, Protocol

from nyla.agent import events
from nyla.agent.cancel import RunCancelled
from nyla.agent.ending import cancelled, close, closing_events
from nyla.agent.run import AgentRun
from nyla.agent.spec import RunSpec
from nyla.errors import BudgetExceeded, NylaError
from nyla.models.agent import AgentEvent, AgentStatus

if TYPE_CHECKING:
    from nyla.agent.ports import AgentServices

__all__ = ["RunCancelled", "RunSpec", "run_agent_loop"]

log = logging.getLogger(__name__)


class RunSetup(Protocol):
    """What a caller adds around a run, done by the loop's own generator (the agent
    runtime's toolboxes, workflow, knowledge and cancel event: see
    :meth:`nyla.agent.runtime.AgentRuntime.execute`). In the loop's generator, not in one of
    its own around it: every event and every wait of a run passes each generator it goes
    through (a layer was ~9.5k instructions a round)."""

    async def start(self) -> AgentEvent:
        """The run's first event (awaited before the run's spec)."""

    async def spec(self) -> RunSpec:
        """The spec the loop runs."""

    def final(self, event: AgentEvent) -> AgentEvent:
        """A closing event (FINAL, AGENT_SUMMARY) as the caller gets it."""

    async def end(self) -> None:
        """Done when the run's generator ends, however it ends (the run's own end first)."""


async def run_agent_loop(
    services: AgentServices, spec: RunSpec, setup: RunSetup | None = None
) -> AsyncGenerator[AgentEvent, None]:
    """Run the ReAct loop of ``spec`` (see :class:`~nyla.agent.spec.RunSpec`) on ``services``
    (the kernel's ``kernel.agent.loop(spec)``) and yield its events. The last two events are
    always FINAL and AGENT_SUMMARY. ``setup``: what the caller adds around the run (its first
    event and the spec come from it, the closing events go through it, it ends last)."""
    closing = _as_is if setup is None else setup.final
    try:
        if setup is not None:
            yield await setup.start()
            spec = await setup.spec()
        run = AgentRun(services, spec)
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
                        yield closing(event)
                    return
                raise
            except Exception as exc:
                if isinstance(exc, NylaError):  # a typed error says what happened (a replay drift)
                    log.error("agent run %s failed: %s", run.run_id, exc)
                else:
                    log.exception("agent run %s failed", run.run_id)
                status = AgentStatus.ERROR
                trace.error = f"{type(exc).__name__}: {exc}"
                final_text = f"The run failed: {trace.error}"
                yield events.error(run.round, trace.error)

            async for event in close(run, status, final_text):
                yield closing(event)
        finally:
            if run.cancel is not None:
                run.cancel.close()  # its watcher ends with the run
    finally:
        if setup is not None:
            await setup.end()


def _as_is(event: AgentEvent) -> AgentEvent:
    return event
