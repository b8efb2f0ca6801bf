"""A run's cancel event: setting it while the run waits ends the run ``cancelled`` at once,
without a task per wait, and leaves the consumer's task as it was; a cancel of the
consumer's task from elsewhere stays a cancel."""

from __future__ import annotations

import asyncio
import contextvars
from typing import Any

import pytest
from pydantic import BaseModel

from nyla.agent.cancel import CancelScope, RunCancelled
from nyla.agent.spec import RunSpec
from nyla.models.agent import AgentConfig, RunContext
from nyla.models.ai import ChatRequest, Role
from nyla.models.tools import Tool, ToolContext


class RoundArgs(BaseModel):
    round: int


def _tools(started: asyncio.Event, hold: asyncio.Event) -> list[Tool]:
    async def read(args: RoundArgs, ctx: ToolContext) -> str:
        if args.round == 2:
            started.set()
            await hold.wait()
        await asyncio.sleep(0)
        return "read"

    async def write(args: RoundArgs, ctx: ToolContext) -> str:
        await asyncio.sleep(0)
        return "wrote"

    return [
        Tool.from_model("read_a", "a", RoundArgs, read, read_only=True),
        Tool.from_model("read_b", "b", RoundArgs, read, read_only=True),
        Tool.from_model("write_c", "c", RoundArgs, write),
    ]


def _script(request: ChatRequest, _index: int) -> Any:
    i = sum(m.role is Role.ASSISTANT for m in request.messages)
    if i < 4:
        return [(name, {"round": i}) for name in ("read_a", "read_b", "write_c")]
    return "done"


async def test_cancelling_a_waiting_run_ends_it_and_leaves_the_consumer_task_clean(
    scripted, make_kernel
):
    # no database: neither traces nor governance (billing, model access) read or write one
    kernel = make_kernel(scripted(_script), settings={"persist_traces": False, "governance": False})
    started, hold, cancel = asyncio.Event(), asyncio.Event(), asyncio.Event()
    loop = asyncio.get_running_loop()
    created = 0
    factory = loop.get_task_factory()
    # only the run's own tasks count: the test loop is shared, and another test's leftover
    # background task (a host's resync tick) may create some while this one waits
    in_run: contextvars.ContextVar[bool] = contextvars.ContextVar("in_run", default=False)

    def counting(loop_: Any, coro: Any, **kw: Any) -> asyncio.Task[Any]:
        nonlocal created
        created += in_run.get()
        return asyncio.Task(coro, loop=loop_, **kw)

    async def consume() -> tuple[list[Any], int]:
        in_run.set(True)
        events = []
        async for event in kernel.agent.loop(
            RunSpec(
                "go",
                config=AgentConfig(stream=False),
                context=RunContext(),
                tools=_tools(started, hold),
                cancel=cancel,
            ),
        ):
            events.append(event)
        await asyncio.sleep(0)  # the consumer's own waits still work after the run
        return events, asyncio.current_task().cancelling()  # type: ignore[union-attr]

    loop.set_task_factory(counting)
    try:
        task = asyncio.create_task(consume())
        await asyncio.wait_for(started.wait(), 10)
        cancel.set()
        events, cancelling = await asyncio.wait_for(task, 10)
    finally:
        loop.set_task_factory(factory)
    assert events[-1].data["status"] == "cancelled"
    assert cancelling == 0
    # the tool calls of three rounds (at most) and the scope's watcher: no task per wait (a
    # race per wait made two each, dozens for this run)
    assert 3 <= created <= 9 + 1, created
    await asyncio.sleep(0)
    assert not [t for t in asyncio.all_tasks() if "_watch" in repr(t.get_coro())]


async def test_a_cancel_of_the_consumer_task_is_not_taken_for_the_runs():
    """The scope turns only its own cancel into RunCancelled."""
    scope = CancelScope(asyncio.Event())
    entered = asyncio.Event()

    async def waits() -> None:
        async def work() -> None:
            entered.set()
            await asyncio.sleep(30)

        await scope.wait(work())

    task = asyncio.create_task(waits())
    await entered.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    scope.close()


async def test_the_scope_raises_run_cancelled_only_for_its_event():
    event = asyncio.Event()
    scope = CancelScope(event)
    assert await scope.wait(asyncio.sleep(0, result=7)) == 7

    async def long() -> None:
        await asyncio.sleep(30)

    waiting = asyncio.create_task(scope.wait(long()))
    await asyncio.sleep(0.01)
    event.set()
    with pytest.raises(RunCancelled):
        await asyncio.wait_for(waiting, 5)
    assert waiting.cancelling() == 0
    with pytest.raises(RunCancelled):  # set before the wait: the work never starts
        await scope.wait(long())
    scope.close()
