"""CHUNK events reach the caller while the model is still streaming (a host streams them on)."""

from __future__ import annotations

import asyncio

from nyla.models.agent import AgentConfig, EventType
from nyla.models.ai import StreamDelta
from nyla.testing.scripted import ScriptedProvider


class GatedProvider(ScriptedProvider):
    """Streams one word, then waits for ``gate`` before the rest."""

    def __init__(self) -> None:
        super().__init__(lambda request, index: "first second")
        self.gate = asyncio.Event()

    async def stream(self, request):
        response = await self.chat(request)
        yield StreamDelta(kind="text", text="first")
        await self.gate.wait()
        yield StreamDelta(kind="text", text=" second")
        yield StreamDelta(kind="usage", usage=response.usage)
        yield StreamDelta(kind="done", finish_reason="stop")


async def test_chunks_arrive_before_the_model_call_ends(make_kernel, db):
    provider = GatedProvider()
    kernel = make_kernel(provider, db=db, builtins=False)
    run = kernel.agent.run("hi", AgentConfig(model="scripted:model"))
    seen = []
    async for event in run:
        seen.append(event)
        if event.type is EventType.CHUNK:
            break
    assert seen[-1].text == "first" and not provider.gate.is_set()  # the call is still open
    provider.gate.set()
    rest = [event async for event in run]
    assert [e.text for e in rest if e.type is EventType.CHUNK] == [" second"]
    assert next(e for e in rest if e.type is EventType.FINAL).text == "first second"


async def test_a_consumer_that_stops_mid_stream_cancels_the_call(make_kernel, db):
    provider = GatedProvider()
    kernel = make_kernel(provider, db=db, builtins=False)
    run = kernel.agent.run("hi", AgentConfig(model="scripted:model"))
    async for event in run:
        if event.type is EventType.CHUNK:
            break
    await asyncio.wait_for(run.aclose(), 10)  # returns although the gate never opens
    assert kernel.agent.running == []
