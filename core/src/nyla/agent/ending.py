"""How a run ends: the progress report of a run stopped early, and the trace written once.

A run that reached its round limit or budget closes with one last tool-less call asking for
a progress report (within the budget); when no call fits, the report is built from the
trace. The trace is written once, in one transaction, whatever the end; when that fails it
is written again reduced (no arguments, the reason in ``error``) so no run is lost.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

from nyla.agent import events
from nyla.agent.cancel import RunCancelled
from nyla.agent.conversation import compact_json, local_progress_summary, progress_request
from nyla.agent.guard import clean_text
from nyla.agent.model_call import call_model
from nyla.agent.repair import repair_counters
from nyla.agent.run import AgentRun
from nyla.models.agent import AgentEvent, AgentStatus
from nyla.models.ai import OperationType

log = logging.getLogger(__name__)

#: Output tokens of the closing progress report (kept short so it fits a nearly spent budget).
PROGRESS_MAX_OUTPUT = 400


async def close(run: AgentRun, status: AgentStatus, final_text: str) -> AsyncIterator[AgentEvent]:
    """The end of a run that was not cancelled: the progress report of a run stopped early
    (its streamed chunks first), the trace written, then FINAL and AGENT_SUMMARY."""
    run.log_calls()
    if status in (AgentStatus.MAX_ROUNDS_REACHED, AgentStatus.BUDGET_EXCEEDED):
        sink: list[AgentEvent] = []
        try:
            final_text = await progress_report(run, status, sink)
        except RunCancelled:
            await cancelled(run, note=False)
            for event in closing_events(run, ""):
                yield event
            return
        for event in sink:
            yield event
    run.trace.status = status
    final_text = clean_text(restore(run.session, final_text))
    await finish(run, final_text)
    for event in closing_events(run, final_text):
        yield event


async def cancelled(run: AgentRun, *, note: bool = True) -> None:
    """End a cancelled run: its trace is written with status ``cancelled``."""
    run.log_calls()
    run.trace.status = AgentStatus.CANCELLED
    if note:
        run.trace.error = "cancelled by the caller"
    await finish(run, "")


def closing_events(run: AgentRun, final_text: str) -> list[AgentEvent]:
    """The last two events of every run: FINAL and AGENT_SUMMARY."""
    return [
        events.final(run.round, final_text, str(run.trace.status)),
        events.summary(run.trace, len(run.calls)),
    ]


async def progress_report(run: AgentRun, status: AgentStatus, sink: list[AgentEvent]) -> str:
    """One last tool-less call for a progress report; built from the trace when it cannot be
    made (budget spent, unknown price, provider down). Streamed chunks go to ``sink``."""
    if not run.unknown_price and (run.remaining_budget is None or run.remaining_budget > 0):
        try:
            response = await call_model(
                run.services.ai,
                run.request(
                    OperationType.AGENT,
                    [*run.conversation.for_call(), progress_request(str(status))],
                    model=run.config.model,
                    max_output_tokens=PROGRESS_MAX_OUTPUT,
                ),
                stream=run.config.stream,
                round_=run.round,
                cancel=run.cancel,
                sink=sink.append,
            )
            run.account(response)
            if response.content.strip():
                return response.content
        except RunCancelled:
            raise
        except Exception as exc:
            log.info("progress report call not possible (%s); building it from the trace", exc)
    lines = [
        f"{c.tool_name}({compact_json(c.arguments)[:80]}) -> "
        + ("ok" if c.success else f"error: {c.error}")
        for c in run.calls
    ]
    return local_progress_summary(str(status), run.trace.prompt, lines, run.last_text)


def restore(session: Any, text: str) -> str:
    """``text`` with the run's placeholders replaced by the real values."""
    restore_fn = getattr(session, "restore", None)
    if not callable(restore_fn) or not text:
        return text
    try:
        return restore_fn(text)
    except Exception as exc:
        log.warning("re-personalizing the final text failed: %s", exc)
        return text


async def finish(run: AgentRun, final_text: str) -> None:
    """Fill in the trace's totals and persist it (one transaction; failures logged)."""
    trace = run.trace
    trace.final_text = final_text
    trace.rounds = run.round
    trace.cost_chf = round(run.spent, 10)
    trace.input_tokens = run.input_tokens
    trace.output_tokens = run.output_tokens
    trace.finished_at = datetime.now(UTC)
    counters = repair_counters(run.calls)
    trace.validation_failures = counters["validation_failures"]
    trace.repair_attempts = counters["repair_attempts"]
    trace.success_after_repair = counters["success_after_repair"]
    if run.context.run_id == run.run_id:  # the billed run: its ledger rows, with its trace
        closing = run.services.ai.close_run(run.run_id)
        try:
            if closing is not None:
                await asyncio.shield(closing)
        except Exception as exc:
            log.error("the ledger rows of run %s could not be written: %s", run.run_id, exc)
    if not run.services.settings.get("persist_traces", True):
        return
    from nyla.agent.trace import save_trace

    db = run.services.db
    try:
        await asyncio.shield(save_trace(db, trace, run.calls))
    except Exception as exc:  # never lost: saved reduced, with the reason
        log.warning(
            "persisting the trace of run %s failed: %s; saving it reduced", trace.run_id, exc
        )
        reduced = trace.model_copy(
            update={
                "error": f"trace reduced: {type(exc).__name__}: {exc}"[:2000]
                + (f"; run error: {trace.error}" if trace.error else ""),
            }
        )
        calls = [c.model_copy(update={"arguments": "", "error": None}) for c in run.calls]
        try:
            await asyncio.shield(save_trace(db, reduced, calls))
        except Exception as again:
            log.error(
                "the reduced trace of run %s could not be saved either: %s", trace.run_id, again
            )
