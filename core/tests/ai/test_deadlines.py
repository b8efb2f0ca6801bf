"""One loop timer for the deadlines of many awaits (:class:`nyla.ai.timeouts.Deadlines`, under
every provider attempt): each await is cut at its own deadline as ``asyncio.timeout_at`` cuts
it, whatever the others' deadlines and the order they began in."""

from __future__ import annotations

import asyncio
import time

import pytest

from nyla.ai.timeouts import Deadlines, loop_deadlines


async def bounded(deadlines: Deadlines, seconds: float, work: asyncio.Future[None]) -> str:
    entry = deadlines.enter(deadlines.loop.time() + seconds)
    try:
        await work
    except BaseException as exc:
        if deadlines.leave(entry, exc):
            return "timed out"
        raise
    deadlines.leave(entry, None)
    return "done"


async def test_a_near_deadline_after_a_far_one_is_cut_in_time() -> None:
    loop = asyncio.get_running_loop()
    deadlines = Deadlines(loop)
    never: asyncio.Future[None] = loop.create_future()
    far = asyncio.ensure_future(bounded(deadlines, 600, never))
    await asyncio.sleep(0)
    began = time.monotonic()
    assert await asyncio.wait_for(bounded(deadlines, 0.05, loop.create_future()), 5) == "timed out"
    assert 0.04 <= time.monotonic() - began < 1
    assert not far.done()  # the far one still waits, its deadline kept
    never.set_result(None)
    assert await far == "done"


async def test_each_of_several_deadlines_cuts_its_own_await() -> None:
    loop = asyncio.get_running_loop()
    deadlines = Deadlines(loop)
    began = time.monotonic()
    ended: dict[float, float] = {}

    async def one(seconds: float) -> str:
        out = await bounded(deadlines, seconds, loop.create_future())
        ended[seconds] = time.monotonic() - began
        return out

    outs = await asyncio.wait_for(asyncio.gather(one(0.2), one(0.05), one(0.05), one(0.1)), 5)
    assert outs == ["timed out"] * 4
    assert ended[0.05] < ended[0.1] < ended[0.2] and ended[0.2] >= 0.19


async def test_an_await_that_ended_is_not_cut_later() -> None:
    loop = asyncio.get_running_loop()
    deadlines = Deadlines(loop)
    done: asyncio.Future[None] = loop.create_future()
    done.set_result(None)
    assert await bounded(deadlines, 0.02, done) == "done"
    await asyncio.sleep(0.06)  # past the deadline: the timer fires and finds nothing
    assert asyncio.current_task().cancelling() == 0  # type: ignore[union-attr]


async def test_a_cancel_from_outside_stays_a_cancel() -> None:
    loop = asyncio.get_running_loop()
    task = asyncio.ensure_future(bounded(Deadlines(loop), 600, loop.create_future()))
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_a_cancel_from_outside_at_the_deadline_stays_a_cancel() -> None:
    loop = asyncio.get_running_loop()
    deadlines = Deadlines(loop)
    task = asyncio.ensure_future(bounded(deadlines, 0.05, loop.create_future()))
    await asyncio.sleep(0)
    loop.call_at(deadlines._armed_for, task.cancel)  # in the same loop pass as the deadline
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 5)


async def test_the_loop_s_deadlines_are_its_own() -> None:
    loop = asyncio.get_running_loop()
    assert loop_deadlines(loop) is loop_deadlines(loop)
    other = asyncio.new_event_loop()
    try:
        assert loop_deadlines(other).loop is other
        assert loop_deadlines(loop).loop is loop
    finally:
        other.close()
