"""A finished run is freed by reference counting alone: nothing of the loop's own making is
left in a reference cycle for the garbage collector (whose passes, over objects that rounds
keep creating, cost the loop time in every round)."""

from __future__ import annotations

import asyncio
import collections
import gc
from typing import Any

from pydantic import BaseModel

from nyla.agent.spec import RunSpec
from nyla.models.agent import AgentConfig, RunContext
from nyla.models.ai import ChatRequest, Role
from nyla.models.tools import Tool, ToolContext


class RoundArgs(BaseModel):
    round: int


async def _read(args: RoundArgs, ctx: ToolContext) -> str:
    await asyncio.sleep(0)
    return f"read {args.round}"


async def _write(args: RoundArgs, ctx: ToolContext) -> str:
    await asyncio.sleep(0)
    return f"wrote {args.round}"


TOOLS = [
    Tool.from_model("read_a", "read a", RoundArgs, _read, read_only=True),
    Tool.from_model("read_b", "read b", RoundArgs, _read, read_only=True),
    Tool.from_model("write_c", "write c", RoundArgs, _write),
]


def _script(request: ChatRequest, _index: int) -> Any:
    i = sum(m.role is Role.ASSISTANT for m in request.messages)  # each run counts from 0
    if i < 4:
        return [(name, {"round": i}) for name in ("read_a", "read_b", "write_c")]
    return "done"


async def _run(kernel: Any) -> dict[str, Any]:
    final = None
    async for event in kernel.agent.loop(
        RunSpec("go", config=AgentConfig(), context=RunContext(user_id="anna"), tools=TOOLS)
    ):
        final = event
    assert final is not None
    return final.data


async def _cycles_left_by_a_run(kernel: Any) -> tuple[int, collections.Counter[str]]:
    gc.collect()
    gc.disable()
    try:
        summary = await _run(kernel)
        gc.set_debug(gc.DEBUG_SAVEALL)
        found = gc.collect()
        kinds = collections.Counter(type(o).__name__ for o in gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert summary["status"] == "completed" and summary["toolCalls"] == 12, summary
    return found, kinds


async def test_a_finished_run_leaves_no_cycles_behind(scripted, make_kernel):
    kernel = make_kernel(scripted(_script), settings={"persist_traces": False})
    assert (await _run(kernel))["status"] == "completed"  # warm: caches, lazy imports
    # The session's event loop is shared: work another test left running (a pool's ping, a
    # listener) may make cycles while this run awaits. The loop's own cycles come back in
    # every run, so a run that leaves none among three is the loop leaving none.
    attempts = [await _cycles_left_by_a_run(kernel) for _ in range(3)]
    found, kinds = min(attempts, key=lambda attempt: attempt[0])
    assert found == 0, f"left in cycles: {kinds.most_common(8)}"
