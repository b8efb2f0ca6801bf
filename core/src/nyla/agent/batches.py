"""Running one model turn's tool calls: batches, checks and the hand-over between batches.

Consecutive read-only calls form a batch that runs concurrently; a writing call is a batch of
its own, a barrier in the model's order. Every call is checked (arguments, owned ids, repeats,
policy) in the model's order before its handler starts.

The batches are pipelined so that the kernel's own work overlaps with the tools' waiting:

- the turn's first call starts as soon as it has passed its check, and the rest of its
  batch is checked while it runs; once a batch's handlers are started, the *next* batch's
  calls are checked while they run (checks only read: a check never sees the outcome of an
  earlier call);
- the next batch is started the moment the current one is over, from the done callback of
  its last handler (:func:`~nyla.agent.guard.await_tool_runs`), *before* the finished batch's
  results are built and handed out, so recording them (trace, conversation, events) overlaps
  with the next batch.

A writing call's handler starts only after the gate of :data:`~nyla.agent.write_gate.
BEFORE_WRITE` (when one is set: a durable run records the call's start); read-only calls
pass none.

The order the caller sees is unchanged: batch after batch, results in call order, and a write
never starts before every call before it has finished.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from nyla.agent.cancel import RunCancelled
from nyla.agent.guard import ToolRun, await_tool_runs, run_is_cancelled, safe_result
from nyla.agent.write_gate import BEFORE_WRITE, BeforeWrite
from nyla.models.ai import ToolCall
from nyla.models.tools import Tool, ToolContext, ToolResult

#: ``check(call, ctx)``: a refusal, or the tool and its validated arguments
Check = Callable[[ToolCall, ToolContext], Awaitable["ToolResult | tuple[Tool, Any]"]]
#: what a finished handler's run came to, as a result
Outcome = Callable[[Tool, ToolRun], ToolResult]


@dataclass(slots=True)
class Dispatched:
    """One executed (or rejected) call: the call, its result and how long it took."""

    call: ToolCall
    result: ToolResult
    duration_ms: float
    read_only: bool
    #: the text the model got for the result, once the run has made it (``result_text``)
    text: str | None = None


@dataclass(slots=True)
class _Pending:
    """A checked call: refused (``result``), or ready to run (``tool``, ``args``, ``ctx``)."""

    call: ToolCall
    read_only: bool
    checked_at: float
    checked_in: float
    result: ToolResult | None = None
    tool: Tool | None = None
    args: Any = None
    ctx: ToolContext | None = None
    run: ToolRun | None = None


def plan_batches(
    calls: list[ToolCall],
    is_read_only: Callable[[ToolCall], bool],
    read_only: list[bool] | None = None,
) -> list[list[ToolCall]]:
    """Split calls into batches: consecutive read-only calls together, each write alone.
    Each call's flag is appended to ``read_only`` (when given), in call order."""
    batches: list[list[ToolCall]] = []
    current: list[ToolCall] = []
    for call in calls:
        flag = is_read_only(call)
        if read_only is not None:
            read_only.append(flag)
        if flag:
            current.append(call)
            continue
        if current:
            batches.append(current)
            current = []
        batches.append([call])
    if current:
        batches.append(current)
    return batches


class BatchRunner:
    """Checks, starts and collects the batches of one model turn (see the module docstring).

    ``check`` never raises (a failure in it is the call's result); ``default_timeout_s``
    applies to tools without their own timeout.
    """

    def __init__(
        self,
        check: Check,
        outcome: Outcome,
        is_read_only: Callable[[ToolCall], bool],
        default_timeout_s: float,
    ) -> None:
        self.check = check
        self.outcome = outcome
        self.is_read_only = is_read_only
        self.default_timeout_s = default_timeout_s

    async def checked(
        self, calls: list[ToolCall], ctx_for: Callable[[ToolCall], ToolContext]
    ) -> list[_Pending]:
        """``calls`` checked in order (nothing started yet)."""
        pending = []
        for call in calls:
            began = time.monotonic()
            ctx = ctx_for(call)
            checked = await self.check(call, ctx)
            if isinstance(checked, ToolResult):
                item = _Pending(call, self.is_read_only(call), began, 0.0)
                item.result = checked
            else:  # (the tool is the one is_read_only would look up: no second look-up)
                tool = checked[0]
                item = _Pending(call, bool(tool.read_only), began, 0.0)
                item.tool, item.args, item.ctx = tool, checked[1], ctx
            item.checked_in = time.monotonic() - began
            pending.append(item)
        return pending

    def start(self, pending: list[_Pending], gate: BeforeWrite | None = None) -> list[_Pending]:
        """Start the handlers of the checked calls that passed (each in its own task); a
        writing call's handler after ``gate(call, ctx)``."""
        for item in pending:
            if item.tool is not None:
                timeout = item.tool.timeout_s or self.default_timeout_s
                tool = item.tool
                before = None
                if gate is not None and not item.read_only:
                    before = functools.partial(gate, item.call, item.ctx)
                item.run = ToolRun(tool.handler, item.args, item.ctx, timeout, tool.name, before)
        return pending

    async def finish(
        self, pending: list[_Pending], then: Callable[[], None] | None = None
    ) -> list[Dispatched]:
        """Wait for the started handlers; the batch's results in call order. ``then()`` is
        called as soon as the batch is over, before its results are built (it starts the
        next batch)."""
        runs = []
        for item in pending:  # (loops, not comprehensions: each is a frame of its own on 3.11)
            if item.run is not None:
                runs.append(item.run)
        cancelled_inside = False
        try:
            await await_tool_runs(runs, then)
        except asyncio.CancelledError:
            if run_is_cancelled():
                raise
            cancelled_inside = True
            if then is not None:
                then()
        dispatched = self._dispatched
        results = []
        for item in pending:
            results.append(dispatched(item, cancelled_inside))
        return results

    def _dispatched(self, item: _Pending, cancelled_inside: bool) -> Dispatched:
        run, result = item.run, item.result
        if cancelled_inside and run is not None:
            result = ToolResult.fail("the tool was cancelled from inside", "TOOL_ERROR")
        elif result is None and item.tool is not None and run is not None:
            result = self.outcome(item.tool, run)
        if run is not None:
            # the check's time plus the handler's own (not the wait for an earlier batch)
            ended = run.finished if run.finished else time.monotonic()
            seconds = item.checked_in + (ended - run.started)
        else:
            seconds = item.checked_in
        return Dispatched(
            item.call,
            safe_result(result or ToolResult.fail("no result", "TOOL_ERROR")),
            seconds * 1000,
            item.read_only,
        )

    async def _opening(
        self,
        batch: list[ToolCall],
        ctx_for: Callable[[ToolCall], ToolContext],
        gate: BeforeWrite | None,
        into: list[_Pending],
        cancelled: Callable[[], bool] | None,
    ) -> None:
        """The turn's first batch checked and started, into ``into`` as they start (a
        cancelled turn cancels what it holds): the first call as soon as it has passed, the
        rest checked while it runs (its handler begins at the sleep). One wait of the run for
        both checks (a wait costs ~3.8k instructions); a cancel set by then raises before the
        rest is checked, as the rest's own wait did."""
        into += self.start(await self.checked(batch[:1], ctx_for), gate)
        if len(batch) > 1:
            if into[0].run is not None:
                await asyncio.sleep(0)
                if cancelled is not None and cancelled():
                    raise RunCancelled
            into += self.start(await self.checked(batch[1:], ctx_for), gate)

    async def _next(
        self,
        batch: list[ToolCall],
        current: list[_Pending],
        ctx_for: Callable[[ToolCall], ToolContext],
        gate: BeforeWrite | None,
        started: list[list[_Pending]],
    ) -> list[Dispatched]:
        """``batch`` checked while ``current`` runs, then ``current``'s results; ``batch`` is
        started (into ``started``) the moment ``current`` is over. One wait for both."""
        following = await self.checked(batch, ctx_for)

        def then() -> None:
            started.append(self.start(following, gate))

        return await self.finish(current, then)

    async def run_turn(
        self,
        calls: list[ToolCall],
        ctx_for: Callable[[ToolCall], ToolContext],
        wait: Callable[[Awaitable[Any]], Awaitable[Any]],
        announce: bool = False,
        cancelled: Callable[[], bool] | None = None,
        read_only: list[bool] | None = None,
    ) -> AsyncGenerator[list[Dispatched], None]:
        """Every batch of one turn, pipelined; ``wait`` wraps each wait (the run's cancel:
        ``cancelled()`` says whether it is set). With ``announce``, an empty list comes
        first, once the first batch's handlers are started (the caller's bookkeeping of the
        turn then overlaps with them). ``read_only`` (when given) gets each call's flag from
        the plan, in call order, before anything is yielded."""
        batches = plan_batches(calls, self.is_read_only, read_only)
        if not batches:
            return
        gate = BEFORE_WRITE.get()
        current: list[_Pending] = []
        started: list[list[_Pending]] = []  # batches the gate of the one before started
        try:
            await wait(self._opening(batches[0], ctx_for, gate, current, cancelled))
            for item in current:
                if item.run is not None:
                    await asyncio.sleep(0)  # let the started handlers begin their work
                    break
            if announce:
                yield []
            last = len(batches) - 1
            for index in range(len(batches)):
                if index < last:  # (a gate-started batch has begun already)
                    results = await wait(
                        self._next(batches[index + 1], current, ctx_for, gate, started)
                    )
                    current = started[-1]
                else:
                    results = await wait(self.finish(current))
                    current = []
                yield results
        finally:  # a consumer that stopped early leaves nothing running
            for batch in (current, *started):
                for item in batch:
                    if item.run is not None and not item.run.task.done():
                        item.run.cancel()
