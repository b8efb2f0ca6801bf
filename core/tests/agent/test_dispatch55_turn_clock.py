"""Session 55, dispatch room: the batches of one turn share one deadline timer (a
:class:`~nyla.agent.guard.DeadlineClock`). A batch whose earliest deadline is not before the
armed one arms none of its own; one with an earlier deadline re-arms it; a timer that fires
before a batch's own deadline times nothing out and re-arms for it; the turn's end stops it.

The tools wait on events the test sets as the turn hands out its batches (no timing decides
which batch is waiting when); only the TIMEOUT cases wait for a deadline, with wide bounds."""

from __future__ import annotations

import asyncio
import contextvars
import time
from typing import Any

import pytest
from pydantic import BaseModel

from nyla.agent import batches, guard
from nyla.agent.registry import ToolRegistry
from nyla.models.ai import ToolCall
from nyla.models.tools import Tool, ToolContext


class NoArgs(BaseModel):
    pass


class CountingClock(guard.DeadlineClock):
    """A turn's clock that keeps itself and counts the timers it arms."""

    made: list[CountingClock] = []

    def __init__(self) -> None:
        super().__init__()
        self.armed = 0
        CountingClock.made.append(self)

    def wake(self, gate: Any, when: float, now: float) -> None:
        before = self.timer
        super().wake(gate, when, now)
        if self.timer is not before:
            self.armed += 1


@pytest.fixture
def clocks(monkeypatch: pytest.MonkeyPatch) -> list[CountingClock]:
    monkeypatch.setattr(CountingClock, "made", [])
    monkeypatch.setattr(batches, "DeadlineClock", CountingClock)
    return CountingClock.made


def _waiting(name: str, release: asyncio.Event, timeout: float, read_only: bool) -> Tool:
    async def handler(args: NoArgs, ctx: ToolContext) -> str:
        await release.wait()
        return f"{name} ok"

    return Tool.from_model(name, name, NoArgs, handler, read_only=read_only, timeout_s=timeout)


def _turn(registry: ToolRegistry, names: list[str]) -> Any:
    calls = [ToolCall(id=f"c{i}", name=n, arguments="{}") for i, n in enumerate(names)]
    return registry.execute(calls, lambda c: ToolContext(call_id=c.id), None, True)


async def _play(turn: Any, releases: list[asyncio.Event]) -> list[Any]:
    """The turn's results; each release is set as the batch before it is handed out."""
    done: list[Any] = []
    index = 0
    async for batch in turn:
        if index < len(releases):
            releases[index].set()  # the next batch to be waited on may end now
        index += 1
        done += batch
    return done


@pytest.mark.parametrize("second", [30.0, 60.0])
async def test_the_turns_batches_share_one_timer(clocks: list[Any], second: float) -> None:
    read_go, write_go = asyncio.Event(), asyncio.Event()
    registry = ToolRegistry(
        [_waiting("r", read_go, 30.0, True), _waiting("w", write_go, second, False)]
    )
    done = await _play(_turn(registry, ["r", "w"]), [read_go, write_go])
    assert [d.result.content for d in done] == ["r ok", "w ok"]
    (clock,) = clocks
    assert clock.armed == 1  # the write's deadline is later: the read's timer serves it
    assert clock.timer is None and clock.gate is None  # stopped at the turn's end


async def test_a_batch_with_an_earlier_deadline_re_arms_the_timer(clocks: list[Any]) -> None:
    read_go, write_go = asyncio.Event(), asyncio.Event()
    registry = ToolRegistry(
        [_waiting("r", read_go, 60.0, True), _waiting("w", write_go, 30.0, False)]
    )
    done = await _play(_turn(registry, ["r", "w"]), [read_go, write_go])
    assert all(d.result.success for d in done)
    (clock,) = clocks
    assert clock.armed == 2
    assert clock.timer is None


async def test_a_write_times_out_at_its_own_deadline_after_a_longer_read(
    clocks: list[Any],
) -> None:
    read_go, never = asyncio.Event(), asyncio.Event()
    registry = ToolRegistry([_waiting("r", read_go, 30.0, True), _waiting("w", never, 0.2, False)])
    done = await asyncio.wait_for(_play(_turn(registry, ["r", "w"]), [read_go]), 10)
    assert done[0].result.content == "r ok"  # not at the read's 30 s timer
    assert done[1].result.error_details.code == "TIMEOUT"
    assert clocks[0].timer is None


async def test_a_timer_firing_before_a_batchs_deadline_times_nothing_out(
    clocks: list[Any],
) -> None:
    """The read's timer (0.2 s) fires while the write (0.6 s) waits: the write is not
    answered then, but at its own deadline."""
    read_go, never = asyncio.Event(), asyncio.Event()
    registry = ToolRegistry([_waiting("r", read_go, 0.2, True), _waiting("w", never, 0.6, False)])
    began = time.monotonic()
    done = await asyncio.wait_for(_play(_turn(registry, ["r", "w"]), [read_go]), 10)
    waited = time.monotonic() - began
    assert done[0].result.content == "r ok"
    assert done[1].result.error_details.code == "TIMEOUT"
    assert waited >= 0.6 - 0.01  # (a deadline never fires early)
    assert clocks[0].armed == 2  # the read's, then the write's own after the early wake


async def test_a_turn_closed_early_stops_its_timer(clocks: list[Any]) -> None:
    read_go, write_go = asyncio.Event(), asyncio.Event()
    registry = ToolRegistry(
        [_waiting("r", read_go, 30.0, True), _waiting("w", write_go, 30.0, False)]
    )
    turn = _turn(registry, ["r", "w"])
    assert await turn.__anext__() == []
    read_go.set()
    first = await turn.__anext__()
    assert [d.result.content for d in first] == ["r ok"]
    await turn.aclose()  # the write is running: cancelled, and the timer stopped
    (clock,) = clocks
    assert clock.armed == 1
    assert clock.timer is None and clock.gate is None


async def test_a_gate_without_a_shared_clock_stops_its_own_timer() -> None:
    release = asyncio.Event()

    async def wait(args: Any, ctx: Any) -> str:
        await release.wait()
        return "ok"

    run = guard.ToolRun(wait, None, None, 30.0, "wait")
    gate = guard._BatchGate([run], None)
    assert gate.own_clock and gate.clock.timer is not None
    release.set()
    await gate.future
    assert gate.clock.timer is None
    assert run.outcome() == "ok"


_SEEN: contextvars.ContextVar[str] = contextvars.ContextVar("seen", default="none")


async def test_a_batch_opened_at_a_deadline_starts_the_next_in_its_own_context(
    clocks: list[Any],
) -> None:
    """The read's timer (armed in the consumer's context of the first batch) fires early for
    the hanging write; the write's deadline then opens its batch and starts the last call in
    the context of the write's own wait (as its own timer did), not the first batch's."""
    read_go, never = asyncio.Event(), asyncio.Event()

    async def tell(args: NoArgs, ctx: ToolContext) -> str:
        return _SEEN.get()

    registry = ToolRegistry(
        [
            _waiting("r", read_go, 0.2, True),
            _waiting("w", never, 0.6, False),
            Tool.from_model("t", "t", NoArgs, tell),
        ]
    )
    turn = _turn(registry, ["r", "w", "t"])
    done: list[Any] = []
    _SEEN.set("first")
    assert await turn.__anext__() == []
    read_go.set()
    done += await turn.__anext__()  # the read's: the write runs, its gate is next
    _SEEN.set("second")
    async for batch in turn:
        done += batch
    assert [d.result.content for d in done][::2] == ["r ok", "second"]
    assert done[1].result.error_details.code == "TIMEOUT"
    assert clocks[0].armed == 2
