"""A batch's gate opens once every run has ended or passed its deadline: a run past its
deadline is answered TIMEOUT then and no longer holds the batch until a later deadline of
another run (it did, up to session 54: a hanging call with a 0.2 s deadline beside a call
ending later with a 30 s deadline held the batch for the whole 30 s)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from nyla.agent.guard import ToolRun, ToolTimedOut, await_tool_runs


async def _hang(args: Any, ctx: Any) -> str:
    await asyncio.sleep(60)
    return "late"


async def test_a_run_past_its_deadline_does_not_hold_the_batch_to_a_later_deadline() -> None:
    release = asyncio.Event()

    async def slow(args: Any, ctx: Any) -> str:
        await release.wait()
        return "slow done"

    hanging = ToolRun(_hang, None, None, 0.1, "hanging")
    patient = ToolRun(slow, None, None, 30.0, "patient")
    waiting = asyncio.ensure_future(await_tool_runs([hanging, patient]))
    await asyncio.sleep(0.4)  # the hanging run's deadline has passed
    assert not waiting.done(), "the batch opened while a run within its deadline was live"
    assert hanging.task.cancelling(), "a run past its deadline is cancelled then"
    release.set()
    await asyncio.wait_for(waiting, 10)  # at the patient run's end, not at its 30 s deadline
    with pytest.raises(ToolTimedOut):
        hanging.outcome()
    assert patient.outcome() == "slow done"


async def test_then_is_called_once_when_the_last_live_run_ends_after_a_timeout() -> None:
    calls: list[str] = []
    release = asyncio.Event()

    async def slow(args: Any, ctx: Any) -> str:
        await release.wait()
        return "ok"

    runs = [ToolRun(_hang, None, None, 0.05, "a"), ToolRun(slow, None, None, 30.0, "b")]
    waiting = asyncio.ensure_future(await_tool_runs(runs, then=lambda: calls.append("then")))
    await asyncio.sleep(0.3)
    assert calls == []
    release.set()
    await asyncio.wait_for(waiting, 10)
    await asyncio.sleep(0.05)  # the abandoned task's cancellation ends it: no second count
    assert calls == ["then"]
