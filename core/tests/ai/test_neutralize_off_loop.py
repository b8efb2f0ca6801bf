"""Long texts are neutralized in a worker thread, never on the event loop (issue 27, fault
1: one 24,000-character prompt froze every client of ``nyla serve`` for 22 s)."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import nyla
from nyla.ai.default_neutralizer import DefaultNeutralizer
from nyla.ai.neutralize import NeutralizationGate, NeutralizationSession, pending_chars
from nyla.cpu import OFFLOAD_CHARS, off_loop
from nyla.models.agent import RunContext
from nyla.models.ai import AiCallRequest, Message, Role
from nyla.models.neutralize import Finding
from nyla.testing import ScriptedProvider
from nyla.testing.scripted import ScriptedPlugin


class ThreadRecorder:
    """A neutralizer that notes which thread ran it."""

    id = "thread-recorder"

    def __init__(self) -> None:
        self.threads: list[int] = []

    def find(self, text: str) -> list[Finding]:
        self.threads.append(threading.get_ident())
        return []


class Plugin:
    def __init__(self, neutralizer: Any) -> None:
        self.neutralizer = neutralizer

    @nyla.hookimpl
    def nyla_neutralizers(self) -> list[Any]:
        return [self.neutralizer]


def _request(text: str, session: NeutralizationSession | None = None) -> AiCallRequest:
    return AiCallRequest(
        operation="agent",
        messages=[Message(role=Role.USER, content=text)],
        context=RunContext(require_neutralization=True),
        neutralization=session,
    )


async def test_a_long_prompt_is_neutralized_in_a_worker_thread(make_kernel) -> None:
    recorder = ThreadRecorder()
    kernel = make_kernel(ScriptedPlugin(ScriptedProvider(lambda r, i: "ok")), Plugin(recorder))
    loop_thread = threading.get_ident()
    await kernel.ai.call(_request("short prompt"))
    assert recorder.threads and set(recorder.threads) == {loop_thread}
    recorder.threads.clear()
    await kernel.ai.call(_request("A" * 100_000))
    assert recorder.threads and loop_thread not in recorder.threads


async def test_the_loop_keeps_running_while_a_long_text_is_neutralized() -> None:
    gate = NeutralizationGate([DefaultNeutralizer()])
    text = "Frau Anna Meier, geb. 14.03.1981, anna@example.ch. " * 4_000  # 200,000 characters
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    task = asyncio.create_task(ticker())
    clean = await off_loop(len(text), gate.apply, text, NeutralizationSession())
    task.cancel()
    assert "anna@example.ch" not in clean and "Anna Meier" not in clean
    assert ticks > 1  # the ticker ran while the text was neutralized


def test_pending_chars_counts_only_what_the_session_has_not_neutralized() -> None:
    gate = NeutralizationGate([DefaultNeutralizer()])
    session = NeutralizationSession()
    history = [Message(role=Role.USER, content="x" * OFFLOAD_CHARS)]
    assert pending_chars(history, None) == OFFLOAD_CHARS
    gate.prepare_messages(history, session)
    longer = [*history, Message(role=Role.ASSISTANT, content="short answer")]
    assert pending_chars(longer, session) == len("short answer")
