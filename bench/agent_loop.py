"""Agent-loop overhead: nyla vs Pydantic AI (FunctionModel) vs LangGraph's prebuilt ReAct agent.

The same scripted conversation for each: N rounds, each a model turn asking for three
read-only tool calls (each sleeps 20 ms) and one write tool call (sleeps 20 ms), then a final
text turn. The model is a local function in every framework (nyla: ``ScriptedProvider``
through the real AI service; Pydantic AI: ``FunctionModel``; LangGraph: a fake chat model),
so what is left is framework time.

Measured per framework, each in its own worker process:

- overhead per round = (wall time - time during which at least one tool was running) / N,
  median over ``--repeat`` runs after a warm-up run; and the process CPU time per round
  (steadier than wall time on a shared machine);
- peak Python memory of one run (``tracemalloc`` peak, a separate run);
- whether the three reads ran concurrently (the most reads seen in flight at once).

nyla runs the bare loop (``run_agent_loop``) with the kernel's built-in plugins (the
neutralization gate included) and trace persistence off, as the others persist nothing.

Usage: ``.venv/bin/python bench/agent_loop.py [--rounds 40] [--repeat 5]``. The competitors
are installed on first use into ``bench/.venvs/agent_loop`` (git-ignored) with uv (or pip).
Never part of the test suite.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Awaitable, Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH_VENV = ROOT / "bench" / ".venvs" / "agent_loop"
COMPETITORS = ["pydantic-ai-slim>=1.0", "langgraph>=1.0", "langchain-core>=1.0"]
TOOL_SLEEP_S = 0.020
READS = ("read_a", "read_b", "read_c")
WRITE = "write_d"


class Probe:
    """Tool bookkeeping: busy intervals (for the overhead) and reads in flight."""

    def __init__(self) -> None:
        self.intervals: list[tuple[float, float]] = []
        self.reads_in_flight = 0
        self.max_reads_in_flight = 0

    async def read(self) -> str:
        self.reads_in_flight += 1
        self.max_reads_in_flight = max(self.max_reads_in_flight, self.reads_in_flight)
        start = time.perf_counter()
        await asyncio.sleep(TOOL_SLEEP_S)
        self.intervals.append((start, time.perf_counter()))
        self.reads_in_flight -= 1
        return "read ok"

    async def write(self) -> str:
        start = time.perf_counter()
        await asyncio.sleep(TOOL_SLEEP_S)
        self.intervals.append((start, time.perf_counter()))
        return "write ok"

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


# ---- nyla ---------------------------------------------------------------------------------


def nyla_runner(rounds: int) -> Callable[[Probe], Awaitable[None]]:
    from nyla.agent.loop import run_agent_loop
    from nyla.kernel import Kernel
    from nyla.models.agent import AgentConfig, RunContext
    from nyla.models.ai import ToolCall
    from nyla.models.tools import Tool
    from nyla.plugins import PluginHost
    from nyla.testing.scripted import ScriptedPlugin, ScriptedProvider

    def script(request, index):  # one request per round (index counts this run's calls)
        if index >= rounds:
            return "done"
        calls = [
            ToolCall(id=f"{name}-{index}", name=name, arguments=f'{{"round": {index}}}')
            for name in (*READS, WRITE)
        ]
        return calls

    current: dict[str, Probe] = {}

    def make(name: str, read_only: bool) -> Tool:
        async def fn(ctx, round: int) -> str:
            probe = current["probe"]
            return await (probe.read() if read_only else probe.write())

        return Tool.from_function(fn, name=name, description=name, read_only=read_only)

    class BenchProvider(ScriptedProvider):
        """The scripted model without the test double's request log (which keeps every
        request's full history and would be charged to nyla's memory)."""

        calls = 0

        async def chat(self, request):
            self.requests.clear()
            response = await super().chat(request)
            self.calls += 1
            return response

    def script_for_run(request, _index):
        return script(request, provider.calls)

    tools = [make(n, True) for n in READS] + [make(WRITE, False)]
    provider = BenchProvider(script_for_run)
    kernel = Kernel(
        plugins=PluginHost.from_plugins([ScriptedPlugin(provider)], builtins=True),
        settings={"persist_traces": False},
    )

    async def run(probe: Probe) -> None:
        current["probe"] = probe
        provider.calls = 0  # the script counts this run's model calls
        final = None
        async for event in run_agent_loop(
            kernel,
            "go",
            config=AgentConfig(max_rounds=min(100, rounds + 1), stream=False),
            context=RunContext(),
            tools=tools,
        ):
            final = event
        assert final is not None and final.data["status"] == "completed", final

    return run


# ---- Pydantic AI --------------------------------------------------------------------------


def pydantic_ai_runner(rounds: int) -> Callable[[Probe], Awaitable[None]]:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.usage import UsageLimits

    def model(messages: list, info: AgentInfo) -> ModelResponse:
        turn = sum(isinstance(m, ModelResponse) for m in messages)
        if turn >= rounds:
            return ModelResponse(parts=[TextPart("done")])
        return ModelResponse(
            parts=[
                ToolCallPart(tool_name=name, args={"round": turn}, tool_call_id=f"{name}-{turn}")
                for name in (*READS, WRITE)
            ]
        )

    current: dict[str, Probe] = {}
    agent = Agent(FunctionModel(model))

    async def read_a(round: int) -> str:
        return await current["probe"].read()

    async def read_b(round: int) -> str:
        return await current["probe"].read()

    async def read_c(round: int) -> str:
        return await current["probe"].read()

    async def write_d(round: int) -> str:
        return await current["probe"].write()

    for fn in (read_a, read_b, read_c, write_d):
        agent.tool_plain(fn)

    async def run(probe: Probe) -> None:
        current["probe"] = probe
        result = await agent.run("go", usage_limits=UsageLimits(request_limit=rounds + 5))
        assert result.output == "done"

    return run


# ---- LangGraph ----------------------------------------------------------------------------


def langgraph_runner(rounds: int) -> Callable[[Probe], Awaitable[None]]:
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.tools import StructuredTool
    from langgraph.prebuilt import create_react_agent

    class FakeChatModel(BaseChatModel):
        """A chat model whose every turn is scripted (tool calls, then text)."""

        @property
        def _llm_type(self) -> str:
            return "scripted"

        def bind_tools(self, tools, **kwargs):
            return self

        def _reply(self, messages) -> ChatResult:
            turn = sum(isinstance(m, AIMessage) for m in messages)
            if turn >= rounds:
                message = AIMessage(content="done")
            else:
                message = AIMessage(
                    content="",
                    tool_calls=[
                        {"name": name, "args": {"round": turn}, "id": f"{name}-{turn}"}
                        for name in (*READS, WRITE)
                    ],
                )
            return ChatResult(generations=[ChatGeneration(message=message)])

        def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
            return self._reply(messages)

        async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs):
            return self._reply(messages)

    current: dict[str, Probe] = {}

    def make(name: str, read_only: bool):
        async def fn(round: int) -> str:
            probe = current["probe"]
            return await (probe.read() if read_only else probe.write())

        return StructuredTool.from_function(coroutine=fn, name=name, description=name)

    tools = [make(n, True) for n in READS] + [make(WRITE, False)]
    graph = create_react_agent(FakeChatModel(), tools)

    async def run(probe: Probe) -> None:
        current["probe"] = probe
        state = await graph.ainvoke(
            {"messages": [("user", "go")]}, config={"recursion_limit": 2 * rounds + 10}
        )
        assert state["messages"][-1].content == "done"

    return run


RUNNERS = {"nyla": nyla_runner, "pydantic-ai": pydantic_ai_runner, "langgraph": langgraph_runner}


# ---- worker -------------------------------------------------------------------------------


def worker(name: str, rounds: int, repeat: int) -> dict:
    """Measure one framework in this process; returns the numbers as a dict."""
    import logging

    logging.disable(logging.WARNING)
    runner = RUNNERS[name](rounds)

    async def once(trace_memory: bool = False) -> tuple[float, float, Probe, int]:
        probe = Probe()
        if trace_memory:
            tracemalloc.start()
        start, cpu = time.perf_counter(), time.process_time()
        await runner(probe)
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
        peak = 0
        if trace_memory:
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
        return wall, cpu, probe, peak

    async def main() -> dict:
        await once()  # warm-up: imports, caches, schema building
        overheads, walls, cpus, concurrency = [], [], [], []
        for _ in range(repeat):
            wall, cpu, probe, _ = await once()
            walls.append(wall)
            cpus.append(cpu)
            overheads.append((wall - probe.busy()) / rounds)
            concurrency.append(probe.max_reads_in_flight)
        _, _, _, peak = await once(trace_memory=True)
        return {
            "framework": name,
            "rounds": rounds,
            "overheadPerRoundMs": statistics.median(overheads) * 1000,
            "cpuPerRoundMs": statistics.median(cpus) / rounds * 1000,
            "wallPerRoundMs": statistics.median(walls) / rounds * 1000,
            "peakMemoryMiB": peak / 2**20,
            "readsInFlight": min(concurrency),
        }

    return asyncio.run(main())


# ---- orchestration ------------------------------------------------------------------------


def _uv() -> str | None:
    return shutil.which("uv") or next(
        (str(p) for p in [ROOT / ".tools" / "bin" / "uv"] if p.exists()), None
    )


def ensure_bench_venv() -> Path:
    """The competitors' venv (created and filled on first use)."""
    python = BENCH_VENV / "bin" / "python"
    marker = BENCH_VENV / ".installed"
    if marker.exists() and python.exists():
        return python
    env = {**os.environ, "UV_PYTHON_DOWNLOADS": "never"}
    uv = _uv()
    print(f"installing {', '.join(COMPETITORS)} into {BENCH_VENV} ...", file=sys.stderr)
    if uv:
        subprocess.run(
            [uv, "venv", "--python", sys.executable, str(BENCH_VENV)], check=True, env=env
        )
        subprocess.run(
            [uv, "pip", "install", "--python", str(python), *COMPETITORS], check=True, env=env
        )
    else:
        subprocess.run([sys.executable, "-m", "venv", str(BENCH_VENV)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", *COMPETITORS], check=True)
    marker.write_text(" ".join(COMPETITORS))
    return python


def run_worker(python: str, name: str, rounds: int, repeat: int) -> dict:
    out = subprocess.run(
        [python, __file__, "--worker", name, "--rounds", str(rounds), "--repeat", str(repeat)],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def report(results: list[dict]) -> None:
    from rich.console import Console
    from rich.table import Table

    nyla = next(r for r in results if r["framework"] == "nyla")
    others = [r for r in results if r["framework"] != "nyla"]
    fastest = min(others, key=lambda r: r["overheadPerRoundMs"]) if others else None
    table = Table(title=f"agent loop: {nyla['rounds']} rounds, 3 reads + 1 write of 20 ms each")
    columns = (
        "framework",
        "overhead/round ms",
        "cpu/round ms",
        "wall/round ms",
        "peak MiB",
        "reads in flight",
        "nyla overhead ratio",
        "nyla memory ratio",
    )
    for col in columns:
        table.add_column(col, justify="right" if col != "framework" else "left")
    for r in results:
        table.add_row(
            r["framework"],
            f"{r['overheadPerRoundMs']:.3f}",
            f"{r['cpuPerRoundMs']:.3f}",
            f"{r['wallPerRoundMs']:.2f}",
            f"{r['peakMemoryMiB']:.2f}",
            f"{r['readsInFlight']} of 3",
            "-" if r is nyla else f"{nyla['overheadPerRoundMs'] / r['overheadPerRoundMs']:.2f}",
            "-" if r is nyla else f"{nyla['peakMemoryMiB'] / r['peakMemoryMiB']:.2f}",
        )
    Console(width=160).print(table)
    if fastest:
        ratio = nyla["overheadPerRoundMs"] / fastest["overheadPerRoundMs"]
        goal = "met" if ratio <= 0.5 else "NOT met"
        print(
            f"nyla overhead per round is {ratio:.2f}x the faster competitor "
            f"({fastest['framework']}); goal <= 0.5x: {goal}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--worker", choices=sorted(RUNNERS))
    parser.add_argument("--only", choices=sorted(RUNNERS), action="append")
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.rounds, args.repeat)))
        return
    wanted = args.only or ["nyla", "pydantic-ai", "langgraph"]
    competitor_python = str(ensure_bench_venv()) if set(wanted) - {"nyla"} else ""
    results = []
    for name in wanted:
        python = sys.executable if name == "nyla" else competitor_python
        print(f"measuring {name} ...", file=sys.stderr)
        results.append(run_worker(python, name, args.rounds, args.repeat))
    if "nyla" in wanted:
        report(results)
    else:
        print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
