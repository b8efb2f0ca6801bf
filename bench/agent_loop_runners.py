"""The three contenders of ``bench/agent_loop.py`` and the tool probe they share.

Each runner is built once per worker process and schedule and then driven run after run:
``runner(probe, rounds)`` plays one scripted conversation of ``rounds`` model turns (the first
``rounds - 1`` ask for three reads and one write, the last answers in text). The scripted
model is a fixture at the provider level for every framework (no vendor, no network): what
is measured is each framework's own work around the model and the tools.

Schedules (the same for every framework):

- ``apart``: the write starts after the round's reads have ended. nyla marks it
  ``read_only=False`` (its barrier), Pydantic AI registers it ``sequential=True`` (its
  barrier); LangGraph's ``ToolNode`` has no barrier, so its write tool waits for the round's
  reads inside the tool before its own wait starts (a wait on an event, no polling).
- ``together``: the reads and the write run at once (nyla: the write declared read-only;
  Pydantic AI: not sequential; LangGraph: its ``ToolNode`` as it is).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

READS = ("read_a", "read_b", "read_c")
WRITE = "write_d"
SCHEDULES = ("apart", "together")
PROMPT = "Check the three sources, then record what they say."

Runner = Callable[["Probe", int], Awaitable[None]]


class Probe:
    """Tool bookkeeping of one run: busy intervals, reads in flight, the write's barrier."""

    def __init__(self, tool_s: float, write_after_reads: bool) -> None:
        self.tool_s = tool_s
        self.write_after_reads = write_after_reads
        self.intervals: list[tuple[float, float]] = []
        self.reads_in_flight = self.max_reads_in_flight = 0
        self.reads_done = self.writes = 0
        self.write_overlapped = False
        self._read_end = asyncio.Event()

    async def _wait(self) -> None:
        if self.tool_s > 0:
            await asyncio.sleep(self.tool_s)

    async def read(self) -> str:
        self.reads_in_flight += 1
        self.max_reads_in_flight = max(self.max_reads_in_flight, self.reads_in_flight)
        start = time.perf_counter()
        await self._wait()
        self.intervals.append((start, time.perf_counter()))
        self.reads_in_flight -= 1
        self.reads_done += 1
        self._read_end.set()
        # each result its own text, as a real tool's, so no framework (nor nyla's round memory,
        # which embeds a repeated summary once) gets the cheaper path of identical rounds
        return f"read {self.reads_done} ok"

    async def write(self, *, barrier: bool = False) -> str:
        """``barrier``: wait for the round's reads first (for a framework without one)."""
        if barrier and self.write_after_reads:
            target = (self.writes + 1) * len(READS)
            while self.reads_done < target:
                self._read_end.clear()
                await self._read_end.wait()
        self.writes += 1
        start = time.perf_counter()
        self.write_overlapped |= self.reads_in_flight > 0
        await self._wait()
        self.intervals.append((start, time.perf_counter()))
        return f"write {self.writes} ok"

    def busy(self) -> float:
        """Length of the union of the tool intervals."""
        total, end = 0.0, float("-inf")
        for a, b in sorted(self.intervals):
            if a > end:
                total += b - a
                end = b
            elif b > end:
                total += b - end
                end = b
        return total


# ---- nyla: kernel.agent.run -----------------------------------------------------------------


def nyla_runner(schedule: str) -> Runner:
    """``kernel.agent.run`` as a user calls it: every installed plugin, the embedded
    PostgreSQL (``NYLA_DATABASE_URL``, a schema of its own), traces persisted, the knowledge
    store's context builder and round recorder (the default embedding model), the default
    toolboxes plus the bench's. The scripted provider answers through the AI service."""
    from nyla.ai.scripted import ScriptedPlugin, ScriptedProvider
    from nyla.hookspecs import hookimpl
    from nyla.kernel import Kernel
    from nyla.models.agent import AgentConfig, EventType
    from nyla.models.ai import ChatResponse, ToolCall, Usage
    from nyla.models.tools import Tool, Toolbox
    from nyla.plugins import PluginHost

    usage = Usage(input_tokens=100, output_tokens=20)
    state: dict[str, Any] = {"turn": 0, "rounds": 0, "probe": None}

    def script(request: Any, _index: int) -> ChatResponse:
        index = state["turn"]
        state["turn"] += 1
        if index >= state["rounds"] - 1:
            return ChatResponse(content="done", finish_reason="stop", usage=usage)
        calls = [
            ToolCall(id=f"{name}-{index}", name=name, arguments=f'{{"round": {index}}}')
            for name in (*READS, WRITE)
        ]
        return ChatResponse(tool_calls=calls, finish_reason="tool_calls", usage=usage)

    def make(name: str, read_only: bool) -> Tool:
        is_write = name == WRITE

        async def fn(ctx: Any, round: int) -> str:
            probe = state["probe"]
            return await (probe.write() if is_write else probe.read())

        return Tool.from_function(
            fn, name=name, description=f"bench tool {name}", read_only=read_only
        )

    class BenchProvider(ScriptedProvider):
        """The scripted model without the test double's request log."""

        async def chat(self, request: Any) -> Any:
            self.requests.clear()
            return await super().chat(request)

    class BenchToolbox:
        @hookimpl
        def nyla_toolboxes(self) -> list[Toolbox]:
            tools = [make(n, True) for n in READS] + [make(WRITE, schedule == "together")]
            return [Toolbox(id="bench", label="bench", tools=tools, default_active=True)]

    plugins = PluginHost.discover()  # every installed plugin, as `nyla run` loads them
    plugins.add_plugin(ScriptedPlugin(BenchProvider(script)), "bench-scripted")
    plugins.add_plugin(BenchToolbox(), "bench-toolbox")
    kernel = Kernel(plugins=plugins, db=_bench_database())

    async def run(probe: Probe, rounds: int) -> None:
        state.update(turn=0, rounds=rounds, probe=probe)
        final = run_id = None
        config = AgentConfig(max_rounds=rounds, stream=False)  # no framework streams here
        async for event in kernel.agent.run(PROMPT, config):
            if event.type is EventType.FINAL:
                final = event
            elif event.type is EventType.AGENT_SUMMARY:
                run_id = event.data["runId"]
        assert final is not None and final.data["status"] == "completed", final
        state.update(run_id=run_id, citations=len(final.data.get("citations") or []))

    async def verify() -> str:
        """What the last run left (checked after its measurement, outside it): its trace,
        its round memory, and the knowledge its context quoted."""
        from sqlalchemy import func, select

        from nyla.tables.knowledge import RoundMemory

        rounds = state["rounds"]
        trace = await kernel.agent.trace(state["run_id"])
        assert trace is not None, "no trace persisted"
        assert trace.rounds == rounds and len(trace.tool_calls) == 4 * (rounds - 1), trace.rounds
        async with kernel.db.session() as s:
            remembered = await s.scalar(
                select(func.count())
                .select_from(RoundMemory)
                .where(RoundMemory.run_id == trace.run_id, RoundMemory.embedding.is_not(None))
            )
        assert remembered == rounds - 1, f"{remembered} rounds remembered, not {rounds - 1}"
        assert state["citations"] > 0, "the run's knowledge context quoted nothing"
        return (
            f"trace {trace.rounds} rounds/{len(trace.tool_calls)} calls, round memory "
            f"{remembered} embedded rows, {state['citations']} files cited from the context"
        )

    run.verify = verify  # type: ignore[attr-defined]
    return run


_DATABASE: list[Any] = []


def _bench_database() -> Any:
    """One database per worker (both schedules share it): the bench schema, with a few
    documents indexed so the round's knowledge context finds something."""
    if not _DATABASE:
        import os

        from nyla.db import Database

        _DATABASE.append(Database(schema=os.environ["NYLA_BENCH_SCHEMA"]))
    return _DATABASE[0]


async def index_documents(db: Any) -> None:
    """Index bench/retrieval/docs into the bench schema (once, by the orchestrator)."""
    from pathlib import Path

    from nyla.kernel import Kernel
    from nyla.models.agent import RunContext
    from nyla.models.files import FileItem, Scope

    kernel = Kernel(db=db)
    context = RunContext()
    items = []
    for i, path in enumerate(sorted((Path(__file__).parent / "retrieval" / "docs").glob("*.md"))):
        item = FileItem(
            id=f"bench-doc-{i}",
            name=path.name,
            mime_type="text/markdown",
            scope=Scope.PERSONAL,
            user_id=context.user_id,
        )
        items.append((item, path.read_bytes()))
    await kernel.knowledge.indexing.index_files(items, context=context)


# ---- Pydantic AI ------------------------------------------------------------------------------


def pydantic_ai_runner(schedule: str) -> Runner:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.usage import RequestUsage, UsageLimits

    state: dict[str, Any] = {"turn": 0, "rounds": 0, "probe": None}

    async def model(messages: list[Any], info: AgentInfo) -> ModelResponse:
        index = state["turn"]
        state["turn"] += 1
        usage = RequestUsage(input_tokens=100, output_tokens=20)
        if index >= state["rounds"] - 1:
            return ModelResponse(parts=[TextPart("done")], usage=usage)
        return ModelResponse(
            parts=[
                ToolCallPart(tool_name=name, args={"round": index}, tool_call_id=f"{name}-{index}")
                for name in (*READS, WRITE)
            ],
            usage=usage,
        )

    agent = Agent(FunctionModel(model))

    async def read_a(round: int) -> str:
        return await state["probe"].read()

    async def read_b(round: int) -> str:
        return await state["probe"].read()

    async def read_c(round: int) -> str:
        return await state["probe"].read()

    async def write_d(round: int) -> str:
        return await state["probe"].write()

    for fn in (read_a, read_b, read_c):
        agent.tool_plain(fn)
    agent.tool_plain(write_d, sequential=schedule == "apart")  # its barrier

    async def run(probe: Probe, rounds: int) -> None:
        state.update(turn=0, rounds=rounds, probe=probe)
        result = await agent.run(PROMPT, usage_limits=UsageLimits(request_limit=rounds + 5))
        assert result.output == "done"

    return run


# ---- LangGraph --------------------------------------------------------------------------------


def langgraph_runner(schedule: str) -> Runner:
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.tools import StructuredTool
    from langgraph.prebuilt import create_react_agent

    state: dict[str, Any] = {"turn": 0, "rounds": 0, "probe": None}

    class FakeChatModel(BaseChatModel):
        """A chat model whose every turn is scripted (tool calls, then text), async."""

        @property
        def _llm_type(self) -> str:
            return "scripted"

        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

        def _reply(self) -> ChatResult:
            index = state["turn"]
            state["turn"] += 1
            usage = {"input_tokens": 100, "output_tokens": 20, "total_tokens": 120}
            if index >= state["rounds"] - 1:
                message = AIMessage(content="done", usage_metadata=usage)
            else:
                message = AIMessage(
                    content="",
                    tool_calls=[
                        {"name": name, "args": {"round": index}, "id": f"{name}-{index}"}
                        for name in (*READS, WRITE)
                    ],
                    usage_metadata=usage,
                )
            return ChatResult(generations=[ChatGeneration(message=message)])

        def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any):
            return self._reply()

        async def _agenerate(
            self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any
        ):
            return self._reply()

    def make(name: str) -> Any:
        async def fn(round: int) -> str:
            probe = state["probe"]
            return await (probe.write(barrier=True) if name == WRITE else probe.read())

        return StructuredTool.from_function(coroutine=fn, name=name, description=name)

    graph = create_react_agent(FakeChatModel(), [make(n) for n in (*READS, WRITE)])

    async def run(probe: Probe, rounds: int) -> None:
        state.update(turn=0, rounds=rounds, probe=probe)
        result = await graph.ainvoke(
            {"messages": [("user", PROMPT)]}, config={"recursion_limit": 2 * rounds + 10}
        )
        assert result["messages"][-1].content == "done"

    return run


# ---- the floor: the tools alone ---------------------------------------------------------------


def floor_runner(schedule: str) -> Runner:
    """No framework: the schedule's tool calls awaited directly, round after round. What
    every framework's CPU includes (the tools' tasks, their waits, the event loop waking),
    printed beside them for scale; not a contender."""

    async def run(probe: Probe, rounds: int) -> None:
        for _ in range(rounds - 1):
            if schedule == "apart":
                await asyncio.gather(*(probe.read() for _ in READS))
                await probe.write()
            else:
                await asyncio.gather(*(probe.read() for _ in READS), probe.write())

    return run


RUNNERS: dict[str, Callable[[str], Runner]] = {
    "nyla": nyla_runner,
    "pydantic-ai": pydantic_ai_runner,
    "langgraph": langgraph_runner,
    "tools-alone": floor_runner,
}
