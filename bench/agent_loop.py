"""Agent-loop overhead: nyla vs Pydantic AI vs LangGraph's prebuilt ReAct agent.

The same scripted conversation for each: N rounds, the first N-1 a model turn asking for three
read-only tool calls (each sleeps 20 ms) and one write tool call (sleeps 20 ms), the last a
final text turn. Each framework gets its idiomatic *async* test model, counting its own turns
(no re-scan of the history) and reporting a fixed usage, so what is left is framework time:

- nyla: ``ScriptedProvider`` through the real AI service (neutralization gate included);
- Pydantic AI: ``FunctionModel`` with an ``async`` function (awaited on the event loop, no
  executor; the usage it returns spares the model's per-turn estimate); the write tool is
  registered ``sequential=True``, Pydantic AI's barrier, so it schedules what nyla does;
- LangGraph: a ``BaseChatModel`` whose ``_agenerate`` answers (no executor). Its prebuilt
  ``ToolNode`` has no barrier: it runs the write *concurrently* with the reads, so each
  round has one wait for tools where nyla and Pydantic AI have two (reads, then the write).
  After a wait the first code to run is slower (cold caches on this kind of machine), so a
  second wait per round costs the other two some overhead LangGraph does not pay.

Measured per framework and round count, each in its own worker process:

- overhead per round = (wall time - time during which at least one tool was running) / N,
  median over ``--repeat`` runs after a warm-up run; and the process CPU time per round;
- the reads' start spread: from a round's first read starting to its last (work a framework
  does for the later reads while the first already runs is not overhead by the definition
  above, for every framework alike, but it delays the round's end);
- peak Python memory of one run (``tracemalloc`` peak, a separate run);
- whether the three reads ran concurrently (the most reads seen in flight at once).

Two ratios are printed: nyla's overhead against the faster competitor's at each round count
(goal <= 0.15 at 40 rounds and more, as issue 14 states it; at 10 rounds the per-run set-up
and closing weigh on few rounds and the ratio is shown without a goal), and nyla's overhead
at the most rounds against the fewest (goal <= 1.2: the cost of a round must not grow with
the conversation).

nyla runs the bare loop (``run_agent_loop``) with every installed plugin (providers whose
models it selects from, toolboxes whose policy hooks check each call) plus the scripted
provider, a cancel event as ``kernel.agent.run`` gives every run (each wait can be
cancelled), and trace persistence off, as the others persist nothing.

Why nyla's ratio is worse with waiting tools than in CPU alone: on this kind of machine the
CPU runs at about half speed for the first 1-2 ms after the process slept (a fixed Python loop
takes 21 us per chunk right after a 20 ms sleep, 12 us after 5 ms of work), so a short
stretch of work after each wait pays proportionally more than a long one. The caches are
cold then: a tool that evicts them instead of sleeping (copying 8 MB) slows nyla's path from
the write's end to the next reads' start as much as the sleep does (1.44 ms against 0.64 ms
warm, before the changes of 2026-12-01 afternoon). ``--tool-ms 0`` (tools that return at
once) measures the loops' pure CPU cost without that effect.

Usage: ``.venv/bin/python bench/agent_loop.py [--rounds 10 40 100] [--repeat 5]
[--tool-ms 20]``. The competitors are installed from PyPI on first use into ``bench/.venvs/agent_loop``
(git-ignored) with uv (or pip). Never part of the test suite. On a shared machine keep
``--repeat`` small and read the CPU column next to the wall-clock one.
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
#: nyla's overhead per round against the faster competitor's, from this many rounds on
COMPETITOR_GOAL = 0.15
COMPETITOR_GOAL_FROM_ROUNDS = 40
#: nyla's overhead per round at the most rounds against the fewest
GROWTH_GOAL = 1.2


class Probe:
    """Tool bookkeeping: busy intervals (for the overhead) and reads in flight."""

    def __init__(self) -> None:
        self.intervals: list[tuple[float, float]] = []
        self.read_starts: list[float] = []
        self.reads_in_flight = 0
        self.max_reads_in_flight = 0
        self.write_overlapped = False

    async def read(self) -> str:
        self.reads_in_flight += 1
        self.max_reads_in_flight = max(self.max_reads_in_flight, self.reads_in_flight)
        start = time.perf_counter()
        self.read_starts.append(start)
        await asyncio.sleep(TOOL_SLEEP_S)
        self.intervals.append((start, time.perf_counter()))
        self.reads_in_flight -= 1
        return "read ok"

    async def write(self) -> str:
        start = time.perf_counter()
        self.write_overlapped |= self.reads_in_flight > 0
        await asyncio.sleep(TOOL_SLEEP_S)
        self.intervals.append((start, time.perf_counter()))
        return "write ok"

    def read_spread(self) -> float:
        """Median time from the first to the last start of a round's reads: framework work
        done while one read already runs is not counted as overhead (for any framework),
        but the round's last read starts that much later."""
        starts = sorted(self.read_starts)
        n = len(READS)
        spreads = [starts[i + n - 1] - starts[i] for i in range(0, len(starts) - n + 1, n)]
        return statistics.median(spreads) if spreads else 0.0

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
    from nyla.models.ai import ChatResponse, ToolCall, Usage
    from nyla.models.tools import Tool
    from nyla.plugins import PluginHost
    from nyla.testing.scripted import ScriptedPlugin, ScriptedProvider

    turn = {"n": 0}

    def script(request, _index):
        index = turn["n"]
        turn["n"] += 1
        if index >= rounds - 1:
            return ChatResponse(content="done", finish_reason="stop", usage=USAGE)
        calls = [
            ToolCall(id=f"{name}-{index}", name=name, arguments=f'{{"round": {index}}}')
            for name in (*READS, WRITE)
        ]
        return ChatResponse(tool_calls=calls, finish_reason="tool_calls", usage=USAGE)

    USAGE = Usage(input_tokens=100, output_tokens=20)
    current: dict[str, Probe] = {}

    def make(name: str, read_only: bool) -> Tool:
        async def fn(ctx, round: int) -> str:
            probe = current["probe"]
            return await (probe.read() if read_only else probe.write())

        return Tool.from_function(fn, name=name, description=name, read_only=read_only)

    class BenchProvider(ScriptedProvider):
        """The scripted model without the test double's request log (which keeps every
        request and would be charged to nyla's memory)."""

        async def chat(self, request):
            self.requests.clear()
            return await super().chat(request)

    tools = [make(n, True) for n in READS] + [make(WRITE, False)]
    provider = BenchProvider(script)
    plugins = PluginHost.discover()  # every installed plugin, as `nyla run` loads them
    plugins.add_plugin(ScriptedPlugin(provider), "bench-scripted")
    kernel = Kernel(plugins=plugins, settings={"persist_traces": False})

    async def run(probe: Probe) -> None:
        current["probe"] = probe
        turn["n"] = 0
        final = None
        async for event in run_agent_loop(
            kernel,
            "go",
            config=AgentConfig(max_rounds=rounds, stream=False),
            context=RunContext(),
            tools=tools,
            cancel=asyncio.Event(),  # as ``kernel.agent.run`` gives every run
        ):
            final = event
        assert final is not None and final.data["status"] == "completed", final

    return run


# ---- Pydantic AI --------------------------------------------------------------------------


def pydantic_ai_runner(rounds: int) -> Callable[[Probe], Awaitable[None]]:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.usage import RequestUsage, UsageLimits

    turn = {"n": 0}

    async def model(messages: list, info: AgentInfo) -> ModelResponse:
        index = turn["n"]
        turn["n"] += 1
        usage = RequestUsage(input_tokens=100, output_tokens=20)
        if index >= rounds - 1:
            return ModelResponse(parts=[TextPart("done")], usage=usage)
        return ModelResponse(
            parts=[
                ToolCallPart(tool_name=name, args={"round": index}, tool_call_id=f"{name}-{index}")
                for name in (*READS, WRITE)
            ],
            usage=usage,
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

    for fn in (read_a, read_b, read_c):
        agent.tool_plain(fn)
    # the write is a barrier, as in nyla: it runs alone, after the reads before it
    agent.tool_plain(write_d, sequential=True)

    async def run(probe: Probe) -> None:
        current["probe"] = probe
        turn["n"] = 0
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

    turn = {"n": 0}

    class FakeChatModel(BaseChatModel):
        """A chat model whose every turn is scripted (tool calls, then text), async."""

        @property
        def _llm_type(self) -> str:
            return "scripted"

        def bind_tools(self, tools, **kwargs):
            return self

        def _reply(self) -> ChatResult:
            index = turn["n"]
            turn["n"] += 1
            usage = {"input_tokens": 100, "output_tokens": 20, "total_tokens": 120}
            if index >= rounds - 1:
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

        def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
            return self._reply()

        async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs):
            return self._reply()

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
        turn["n"] = 0
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
        overheads, walls, cpus, concurrency, overlapped, spreads = [], [], [], [], [], []
        for _ in range(repeat):
            wall, cpu, probe, _ = await once()
            walls.append(wall)
            cpus.append(cpu)
            overheads.append((wall - probe.busy()) / rounds)
            spreads.append(probe.read_spread())
            concurrency.append(probe.max_reads_in_flight)
            overlapped.append(probe.write_overlapped or probe.reads_in_flight > 0)
        _, _, _, peak = await once(trace_memory=True)
        return {
            "framework": name,
            "rounds": rounds,
            "overheadPerRoundMs": statistics.median(overheads) * 1000,
            "cpuPerRoundMs": statistics.median(cpus) / rounds * 1000,
            "wallPerRoundMs": statistics.median(walls) / rounds * 1000,
            "readSpreadMs": statistics.median(spreads) * 1000,
            "peakMemoryMiB": peak / 2**20,
            "readsInFlight": min(concurrency),
            "writeAlone": not any(overlapped),
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
        [
            python,
            __file__,
            *("--worker", name, "--rounds", str(rounds), "--repeat", str(repeat)),
            *("--tool-ms", str(TOOL_SLEEP_S * 1000)),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def report(results: list[dict]) -> None:
    """One table per round count, then the two ratios the goals are stated in."""
    from rich.console import Console
    from rich.table import Table

    console = Console(width=160)
    by_rounds: dict[int, list[dict]] = {}
    for r in results:
        by_rounds.setdefault(r["rounds"], []).append(r)
    columns = (
        "framework",
        "overhead/round ms",
        "cpu/round ms",
        "wall/round ms",
        "reads' start spread ms",
        "peak MiB",
        "reads in flight",
        "write alone",
    )
    for rounds, rows in sorted(by_rounds.items()):
        title = f"agent loop: {rounds} rounds, 3 reads + 1 write of {TOOL_SLEEP_S * 1000:g} ms each"
        table = Table(title=title)
        for col in columns:
            table.add_column(col, justify="left" if col == "framework" else "right")
        for r in rows:
            table.add_row(
                r["framework"],
                f"{r['overheadPerRoundMs']:.3f}",
                f"{r['cpuPerRoundMs']:.3f}",
                f"{r['wallPerRoundMs']:.2f}",
                f"{r.get('readSpreadMs', 0.0):.3f}",
                f"{r['peakMemoryMiB']:.2f}",
                f"{r['readsInFlight']} of 3",
                "yes" if r["writeAlone"] else "no (runs with the reads)",
            )
        console.print(table)
    for line in ratio_lines(by_rounds):
        print(line)


def ratio_lines(by_rounds: dict[int, list[dict]]) -> list[str]:
    """The competitor ratio per round count and nyla's growth ratio, with their goals."""
    lines = []
    nyla = {n: r for n, rows in by_rounds.items() for r in rows if r["framework"] == "nyla"}
    for rounds, rows in sorted(by_rounds.items()):
        others = [r for r in rows if r["framework"] != "nyla"]
        if rounds not in nyla or not others:
            continue
        fastest = min(others, key=lambda r: r["overheadPerRoundMs"])
        ratio = nyla[rounds]["overheadPerRoundMs"] / fastest["overheadPerRoundMs"]
        cpu = nyla[rounds]["cpuPerRoundMs"] / fastest["cpuPerRoundMs"]
        verdict = "met" if ratio <= COMPETITOR_GOAL else "NOT met"
        lines.append(
            f"ratio 1 ({rounds} rounds): nyla overhead/round = {ratio:.3f}x the faster competitor "
            f"({fastest['framework']}; CPU {cpu:.3f}x); "
            + (
                f"goal <= {COMPETITOR_GOAL}: {verdict}"
                if rounds >= COMPETITOR_GOAL_FROM_ROUNDS
                else f"no goal below {COMPETITOR_GOAL_FROM_ROUNDS} rounds (would be {verdict})"
            )
        )
        same = [r for r in others if r["writeAlone"]]
        if same and len(same) < len(others):
            peer = min(same, key=lambda r: r["overheadPerRoundMs"])
            lines.append(
                f"  against the same schedule (write alone: {peer['framework']}): "
                f"{nyla[rounds]['overheadPerRoundMs'] / peer['overheadPerRoundMs']:.3f}x"
            )
    if len(nyla) >= 2:
        low, high = min(nyla), max(nyla)
        growth = nyla[high]["overheadPerRoundMs"] / nyla[low]["overheadPerRoundMs"]
        cpu = nyla[high]["cpuPerRoundMs"] / nyla[low]["cpuPerRoundMs"]
        lines.append(
            f"ratio 2: nyla overhead/round at {high} rounds = {growth:.3f}x at {low} rounds "
            f"(CPU {cpu:.3f}x); goal <= {GROWTH_GOAL}: "
            + ("met" if growth <= GROWTH_GOAL else "NOT met")
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, nargs="+", default=[10, 40, 100])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--tool-ms",
        type=float,
        default=TOOL_SLEEP_S * 1000,
        help="how long each tool waits (0: tools return at once, the loops' pure CPU cost)",
    )
    parser.add_argument("--worker", choices=sorted(RUNNERS))
    parser.add_argument("--only", choices=sorted(RUNNERS), action="append")
    parser.add_argument("--json", action="store_true", help="print the raw results as JSON")
    args = parser.parse_args()
    if any(not 2 <= n <= 100 for n in args.rounds):
        parser.error("--rounds: each count must be between 2 and 100 (AgentConfig.max_rounds)")
    globals()["TOOL_SLEEP_S"] = args.tool_ms / 1000
    if args.worker:
        print(json.dumps(worker(args.worker, args.rounds[0], args.repeat)))
        return
    wanted = args.only or ["nyla", "pydantic-ai", "langgraph"]
    competitor_python = str(ensure_bench_venv()) if set(wanted) - {"nyla"} else ""
    results = []
    for rounds in args.rounds:
        for name in wanted:
            python = sys.executable if name == "nyla" else competitor_python
            print(f"measuring {name} at {rounds} rounds ...", file=sys.stderr)
            results.append(run_worker(python, name, rounds, args.repeat))
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        report(results)


if __name__ == "__main__":
    main()
