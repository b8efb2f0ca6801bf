"""A tool that blocks the event loop inside ``async def`` (issue 27, fault 6): it is named, its
deadline is answered, and from its second call on it can no longer stall other work."""

from __future__ import annotations

import asyncio
import selectors
import threading
import time
from typing import Any

import pytest
from pydantic import BaseModel
from sqlalchemy import text

from nyla.agent.guard import call_with_deadline
from nyla.agent.isolation import run_in_own_thread
from nyla.agent.loop_watch import forget_blockers, has_blocked
from nyla.agent.spec import RunSpec
from nyla.agent.tool_services import tool_services
from nyla.models.agent import AgentConfig, RunContext
from nyla.models.ai import ChatRequest, ToolCall
from nyla.models.tools import Tool, ToolContext


class NoArgs(BaseModel):
    pass


@pytest.fixture(autouse=True)
def _fresh_watchdog(monkeypatch):
    monkeypatch.setenv("NYLA_TOOL_BLOCK_LIMIT_MS", "150")
    forget_blockers()
    yield
    forget_blockers()


class Heartbeat:
    """Ticks on the event loop and records the longest gap between two ticks."""

    def __init__(self) -> None:
        self.longest = 0.0
        self.task: asyncio.Task[None] | None = None

    async def _tick(self) -> None:
        last = time.monotonic()
        while True:
            await asyncio.sleep(0.01)
            now = time.monotonic()
            self.longest = max(self.longest, now - last)
            last = now

    def __enter__(self) -> Heartbeat:
        self.task = asyncio.get_running_loop().create_task(self._tick())
        return self

    def __exit__(self, *exc: Any) -> None:
        assert self.task is not None
        self.task.cancel()


def blocking_tool(block_s: float, finished: list[threading.Event]) -> Tool:
    async def sleeps_in_async_def(args: NoArgs, ctx: ToolContext) -> str:
        time.sleep(block_s)  # the fault: blocking work inside async def
        finished.append(threading.Event())
        finished[-1].set()
        return "late"

    return Tool.from_model("slowParse", "Parses.", NoArgs, sleeps_in_async_def, timeout_s=0.1)


def call_once(name: str):
    """A model that calls ``name`` once per run, then answers."""

    def script(request: ChatRequest, i: int) -> Any:
        if request.messages[-1].role == "tool":
            return "done"
        return [ToolCall(id=f"c{i}", name=name)]

    return script


async def one_call(kernel: Any, tool: Tool) -> dict[str, Any]:
    events = [
        e
        async for e in kernel.agent.loop(
            RunSpec("go", config=AgentConfig(stream=False), context=RunContext(), tools=[tool]),
        )
    ]
    assert events[-1].data["status"] == "completed"
    [result] = [e.data for e in events if e.type.value == "TOOL_RESULT"]
    return result


async def test_a_tool_blocking_the_loop_is_named_and_cannot_stall_it_again(
    scripted, make_kernel, db, caplog
):
    finished: list[threading.Event] = []
    tool = blocking_tool(0.8, finished)

    kernel = make_kernel(scripted(call_once(tool.name)), db=db, builtins=False)

    with caplog.at_level("WARNING", logger="nyla.agent.loop_watch"), Heartbeat() as first:
        result = await one_call(kernel, tool)
    # the first call held the loop: unavoidable in Python, but it is answered as a timeout
    # that names the block and the tool's own function, and the log names the tool
    assert result["success"] is False and result["errorDetails"]["code"] == "TIMEOUT"
    assert "held the event loop" in result["error"]
    assert "sleeps_in_async_def" in result["error"]
    assert "/" not in result["error"], "a server path reached the model"
    assert any("slowParse" in r.getMessage() for r in caplog.records)
    assert first.longest > 0.5  # (the block did happen: the test would pass vacuously else)
    assert has_blocked(tool.handler)

    finished.clear()
    with Heartbeat() as second:
        result = await one_call(kernel, tool)
        # answered at its deadline, while the blocking work still runs in its own thread
        assert result["errorDetails"]["code"] == "TIMEOUT"
        assert not finished, "the call was answered only after the blocking work ended"
    assert second.longest < 0.4, f"the loop stalled {second.longest:.2f} s"


async def test_an_isolated_tool_still_reaches_the_kernel_s_services(make_kernel, db):
    kernel = make_kernel(db=db, builtins=False)
    seen_threads: list[int] = []
    charged: list[float] = []

    async def reads_the_database(args: NoArgs, ctx: ToolContext) -> str:
        seen_threads.append(threading.get_ident())
        ctx.charge(0.25)
        item = await ctx.services.files.save("answer.txt", b"42", ctx.run)
        return await ctx.services.files.read_text(item.id, ctx.run)

    ctx = ToolContext(services=tool_services(kernel.agent.services), on_charge=charged.append)
    value = await run_in_own_thread(reads_the_database, NoArgs(), ctx, "reads")
    assert value == "42"
    assert seen_threads and seen_threads[0] != threading.get_ident()
    assert charged == [0.25]
    # the pool's connections stayed on this loop: the store still works here
    async with db.session() as session:
        assert (await session.execute(text("select 1"))).scalar_one() == 1


async def test_cancelling_an_isolated_call_cancels_its_task():
    cancelled = threading.Event()

    async def waits(args: Any, ctx: Any) -> None:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    async def isolated(args: Any, ctx: Any) -> None:
        await run_in_own_thread(waits, args, ctx, "waits")

    with pytest.raises(Exception) as info:
        await call_with_deadline(isolated, None, None, 0.1)
    assert type(info.value).__name__ == "ToolTimedOut"
    await asyncio.to_thread(cancelled.wait, 5)
    assert cancelled.is_set()


async def test_a_tool_waiting_in_a_selector_of_its_own_is_still_named(scripted, make_kernel, db):
    """The watchdog skips its heartbeat while the loop waits for I/O in its own selector;
    a tool blocking in another selector (as a synchronous client does) still holds the loop."""

    async def waits_in_its_own_selector(args: NoArgs, ctx: ToolContext) -> str:
        with selectors.DefaultSelector() as selector:
            selector.select(0.6)  # the fault: a blocking wait inside async def
        return "late"

    tool = Tool.from_model(
        "slowFetch", "Fetches.", NoArgs, waits_in_its_own_selector, timeout_s=0.1
    )
    kernel = make_kernel(scripted(call_once(tool.name)), db=db, builtins=False)
    result = await one_call(kernel, tool)
    assert result["errorDetails"]["code"] == "TIMEOUT"
    assert "held the event loop" in result["error"]
    assert "waits_in_its_own_selector" in result["error"]
    assert has_blocked(tool.handler)


@pytest.mark.parametrize(
    ("looks", "beats"),
    [(("tool", None), False), (("tool", "other"), False), (("tool", "tool"), True)],
)
def test_the_watchdog_asks_the_loop_only_when_one_tool_holds_it_twice_in_a_row(
    monkeypatch, looks, beats
):
    """A heartbeat goes out only when the same tool's task runs on the loop at two looks in a
    row: a loop seen running a tool once and then waiting (or running another task) is held
    by no one, and a beat landing in its wait would only wake it (the looks are scripted, not
    timed; a loop of its own, so that no watchdog of an earlier test is in the middle of a
    look)."""
    from nyla.agent import loop_watch

    seen: dict[str, Any] = {"other": object(), None: None}
    answers = iter(looks * 1000)
    monkeypatch.setattr(loop_watch.LoopWatchdog, "_holder", lambda self: seen[next(answers)])

    async def main() -> int:
        async def waits() -> None:
            await asyncio.sleep(0.5)

        task = asyncio.get_running_loop().create_task(waits())
        seen["tool"] = task
        watched = loop_watch.watch(task, "waits", waits)
        assert watched is not None
        dog = loop_watch._watchdogs[asyncio.get_running_loop()]
        await task
        watched.release()
        return dog.beats

    assert (asyncio.run(main()) > 0) is beats


def test_a_loop_busy_with_no_tool_gets_no_heartbeat():
    """The loop held by something that is no tool (here the test's own task, while a tool call
    is in flight) gets no heartbeat: there is no tool to name, and the beat would only cost
    the loop a wake-up once it waits again (a loop of its own: no earlier watchdog)."""
    from nyla.agent import loop_watch

    async def main() -> int:
        async def waits() -> None:
            await asyncio.sleep(0.6)

        task = asyncio.get_running_loop().create_task(waits())
        watched = loop_watch.watch(task, "waits", waits)
        assert watched is not None
        dog = loop_watch._watchdogs[asyncio.get_running_loop()]
        await asyncio.sleep(0.05)
        time.sleep(0.3)  # the caller's own blocking work, not the tool's
        await task
        watched.release()
        return dog.beats

    assert asyncio.run(main()) == 0
