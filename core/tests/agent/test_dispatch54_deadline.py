"""A batch's gate wakes at the earliest live deadline of its runs (found by a loop since
session 54, not a list): a hanging run with the shortest deadline is answered at its own
deadline whatever the runs' order, not at a longer one of a run that ended; a gate whose
runs are all past their deadline opens at once."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from nyla.agent.guard import ToolRun, ToolTimedOut, await_tool_runs


async def _hang(args: Any, ctx: Any) -> str:
    await asyncio.sleep(30)
    return "late"


async def _quick(args: Any, ctx: Any) -> str:
    await asyncio.sleep(0.01)
    return "quick"


@pytest.mark.parametrize("order", ["short-last", "short-first", "short-between"])
async def test_the_gate_wakes_at_the_earliest_deadline(order: str) -> None:
    short = ToolRun(_hang, None, None, 0.2, "short")
    long_ = ToolRun(_quick, None, None, 2.0, "long")
    quick = ToolRun(_quick, None, None, 1.5, "quick")
    runs = {
        "short-last": [long_, quick, short],
        "short-first": [short, long_, quick],
        "short-between": [long_, short, quick],
    }[order]
    began = time.monotonic()
    await await_tool_runs(runs)
    waited = time.monotonic() - began
    assert 0.15 <= waited < 1.2  # at the hanging run's deadline, not at 1.5 or 2 s
    assert long_.outcome() == quick.outcome() == "quick"
    with pytest.raises(ToolTimedOut):
        short.outcome()


async def test_a_gate_of_runs_past_their_deadline_opens_at_once() -> None:
    run = ToolRun(_hang, None, None, 0.0, "none")
    await asyncio.sleep(0)  # (begun: a task cancelled unbegun never awaits its coroutine)
    began = time.monotonic()
    await await_tool_runs([run])
    assert time.monotonic() - began < 0.5
    with pytest.raises(ToolTimedOut):
        run.outcome()
