"""Run starts wait their turn in arrival order, a few at a time; only a full queue is a 503
with Retry-After, and nothing of the refused start is stored."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import func, select

from nyla_host.start_gate import ServerBusy, StartGate
from nyla_host.tables import HostRunRow

from .conftest import wait_run


async def test_starts_go_in_arrival_order_a_few_at_a_time():
    gate = StartGate(concurrent=2, waiting=10)
    running, peak, order = 0, 0, []
    release = asyncio.Event()

    async def start(n: int) -> None:
        nonlocal running, peak
        async with gate.turn():
            running += 1
            peak = max(peak, running)
            order.append(n)
            await release.wait()
            running -= 1

    tasks = [asyncio.create_task(start(n)) for n in range(6)]
    for _ in range(5):
        await asyncio.sleep(0)
    assert order == [0, 1] and gate.queued == 4
    release.set()
    await asyncio.gather(*tasks)
    assert order == [0, 1, 2, 3, 4, 5] and peak == 2 and gate.queued == 0


async def test_a_full_queue_refuses_at_once():
    gate = StartGate(concurrent=1, waiting=1)
    held, go = asyncio.Event(), asyncio.Event()

    async def holder() -> None:
        async with gate.turn():
            held.set()
            await go.wait()

    first = asyncio.create_task(holder())
    await held.wait()
    second = asyncio.create_task(holder())  # waits: the queue has room for one
    await asyncio.sleep(0)
    with pytest.raises(ServerBusy):
        async with gate.turn():
            pass
    go.set()
    await asyncio.gather(first, second)
    async with gate.turn():  # room again
        pass


@pytest.mark.db
async def test_post_runs_answers_503_with_retry_after_when_the_queue_is_full(
    state, client, token_for
):
    headers = await token_for("alice")
    state.runs.gate = StartGate(concurrent=1, waiting=0)
    go = asyncio.Event()

    async def hold() -> None:
        async with state.runs.gate.turn():
            await go.wait()

    holder = asyncio.create_task(hold())
    await asyncio.sleep(0)
    busy = await client.post("/api/runs", json={"prompt": "hi"}, headers=headers)
    assert busy.status_code == 503 and busy.headers["retry-after"] == "5"
    assert busy.json()["error"] == "ServerBusy"
    async with state.kernel.db.session() as s:
        assert await s.scalar(select(func.count()).select_from(HostRunRow)) == 0
    go.set()
    await holder
    started = await client.post("/api/runs", json={"prompt": "hi"}, headers=headers)
    assert started.status_code == 202
    await wait_run(state, started.json()["runId"])
