"""A tool run reports its end from inside its task; one cancelled before its coroutine began
reports it through :meth:`ToolRun.cancel` (no done callback per call)."""

from __future__ import annotations

import asyncio
import gc

import pytest

from nyla.agent.guard import ToolRun, await_tool_runs


# (the handler's coroutine of a run cancelled before it began is never awaited, as before)
@pytest.mark.filterwarnings("ignore:coroutine .* was never awaited")
async def test_a_run_cancelled_before_it_began_is_counted_as_ended():
    started: list[str] = []

    async def tool(args: object, ctx: object) -> str:
        started.append("ran")
        return "never"

    runs = [ToolRun(tool, None, None, 30.0, "slow") for _ in range(2)]
    runs[0].cancel()  # before its coroutine began: it never runs
    # the batch opens at once, not at the 30 s deadline: the cancelled run was counted
    await asyncio.wait_for(await_tool_runs(runs), 5.0)
    assert runs[0].finished is not None and runs[0].task.cancelled()
    assert runs[1].finished is not None and runs[1].task.result() == "never"
    assert started == ["ran"]
    del runs
    gc.collect()  # (the never-awaited coroutine's warning, inside this test's filter)


async def test_a_finished_run_adds_no_callback_to_its_task():
    async def tool(args: object, ctx: object) -> str:
        return "ok"

    run = ToolRun(tool, None, None, 5.0, "quick")
    await await_tool_runs([run])
    assert run.began and run.finished is not None
    assert run.outcome() == "ok"
