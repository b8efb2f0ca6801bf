"""Agent loop, the path a user calls: nyla's ``kernel.agent.run`` vs Pydantic AI vs LangGraph.

The same scripted conversation for each (a **scripted fixture** at the provider level, not a
vendor): N model turns, the first N-1 asking for three reads and one write, the last a text
answer; every tool waits ``--tool-ms`` (0: returns at once). The contenders are in
``bench/agent_loop_runners.py``:

- nyla: ``kernel.agent.run`` with every installed plugin, the embedded PostgreSQL (a server of
  the bench's own in a temporary directory, a schema with bench/retrieval/docs indexed),
  traces persisted, and the default context: the knowledge store's context builder (the
  prompt embedded with the default local model, the store searched, round memory read) and
  round recorder (each round written and embedded) — everything a user's run does;
- Pydantic AI: ``Agent`` with an async ``FunctionModel``; LangGraph: ``create_react_agent``
  with an async scripted ``BaseChatModel``. Neither persists or retrieves anything.

Every framework gets the same schedule: ``apart`` (the write after the round's reads) and
``together`` (the reads and the write at once); see the runners' docstring for how each is
told. Nobody streams.

Measured per run, in a worker process per framework that stays up (its first run of each
configuration is a warm-up); the frameworks take turns run by run (the order rotates each
pass), ``--repeat`` passes, medians printed:

- **CPU per round**: the worker's process CPU time over the whole run / N, including what a
  loop does while tools wait (the goal is stated in this: nyla <= 0.15x the faster of the
  other two at 40 and 100 rounds);
- **wall overhead per round**: (wall time - time during which at least one tool was
  running) / N. Work a loop does while a tool waits is not in it, which is why CPU is the
  goal's measure; it is printed for what it is;
- nyla's **database CPU per round**: the bench's PostgreSQL server (every process of it) over
  the run / N, from /proc (10 ms ticks). It is another process, so not in nyla's CPU column;
  a line prints the ratio with it added. The others have no database.

The load average (1 min) is printed at each configuration's start and end, and a closing
summary has one line per configuration (CPU and wall per round of each, the ratio, the load).

Two checks keep the comparison honest:

- after every measured nyla run (outside its measurement) the worker checks what the run
  left: its trace in the database with every round and tool call, one embedded round-memory
  row per round with tool calls, and files cited from its knowledge context; the line is
  printed per configuration (a run that skipped any of it fails the bench);
- a ``tools-alone`` row runs the same schedule with no framework at all (the tools' tasks
  awaited directly): the floor every framework's CPU includes — the tasks, the waits, the
  event loop waking — printed for scale, never a contender (``--no-floor`` leaves it out).

This host's part: a virtual CPU that idles while tools wait comes back slow, so the same
work costs more CPU after a wait, and the leaner a framework's burst, the larger that share
(``bench/host_wake.py``). Before each waiting configuration a line prints a fixed burst of
plain Python's CPU back to back and right after a wait as long as a tool's. ``--warm`` keeps
every core busy with nice-19 busy loops while measuring (no CPU is taken from the measured
processes; a high-load condition of its own, labelled in the output).

Usage: ``env -u NYLA_LOCAL_EMBEDDINGS .venv/bin/python bench/agent_loop.py [--rounds 40 100]
[--repeat 3] [--tool-ms 20 0] [--schedule apart together] [--warm]``. The competitors are installed
from PyPI on first use into ``bench/.venvs/agent_loop`` (git-ignored). Never in the tests.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

from agent_loop_runners import RUNNERS, SCHEDULES, Probe  # noqa: E402
from host_wake import WarmHost, wake_line, warm_bounds  # noqa: E402

BENCH_VENV = ROOT / "bench" / ".venvs" / "agent_loop"
COMPETITORS = ["pydantic-ai-slim>=1.0", "langgraph>=1.0", "langchain-core>=1.0"]
FRAMEWORKS = ("nyla", "pydantic-ai", "langgraph")
#: not a contender: the schedule's tools awaited with no framework (every row includes it)
FLOOR = "tools-alone"
COMPETING = ("pydantic-ai", "langgraph")
#: nyla's CPU per round against the faster competitor's
GOAL = 0.15


# ---- worker -------------------------------------------------------------------------------


def server_cpu_s() -> float:
    """CPU seconds of the bench's PostgreSQL (postmaster and its children), 0 without one."""
    pgdata = os.environ.get("NYLA_BENCH_PGDATA")
    if not pgdata:
        return 0.0
    root = int(Path(pgdata, "postmaster.pid").read_text().split()[0])
    ticks = 0
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            fields = Path(entry.path, "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(entry.name) == root or int(fields[1]) == root:
            ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


def worker(name: str) -> None:
    """Answer one JSON line per command line ``{rounds, schedule, toolMs}``: one measured run
    (after a warm-up run the first time a configuration is asked for). ``"verify": false``
    leaves the check of what the run left to a later ``{"verifyLast": true}`` line."""
    import logging

    logging.disable(logging.WARNING)
    runners: dict[str, Any] = {}
    warmed: set[tuple[str, int, float]] = set()
    last: list[Any] = [None]

    async def once(
        schedule: str, rounds: int, tool_ms: float, check: bool = True
    ) -> dict[str, Any]:
        runner = runners.get(schedule) or runners.setdefault(schedule, RUNNERS[name](schedule))
        probe = Probe(tool_ms / 1000, write_after_reads=schedule == "apart")
        db_cpu = server_cpu_s()
        start, cpu = time.perf_counter(), time.process_time()
        await runner(probe, rounds)
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
        verify = getattr(runner, "verify", None) if check else None
        last[0] = runner
        return {
            "verified": await verify() if verify is not None else None,
            "framework": name,
            "rounds": rounds,
            "schedule": schedule,
            "toolMs": tool_ms,
            "wall": wall,
            "cpu": cpu,
            "dbCpu": server_cpu_s() - db_cpu,
            "busy": probe.busy(),
            "readsInFlight": probe.max_reads_in_flight,
            "writeWithReads": probe.write_overlapped,
            "load": os.getloadavg()[0],
        }

    async def serve() -> None:
        for line in sys.stdin:
            cmd = json.loads(line)
            if cmd.get("verifyLast"):
                verify = getattr(last[0], "verify", None)
                print(json.dumps({"verified": await verify() if verify else None}), flush=True)
                continue
            key = (cmd["schedule"], cmd["rounds"], cmd["toolMs"])
            if key not in warmed:
                await once(*key)
                warmed.add(key)
            print(json.dumps(await once(*key, cmd.get("verify", True))), flush=True)

    asyncio.run(serve())


# ---- orchestration ------------------------------------------------------------------------


def _uv() -> str | None:
    return shutil.which("uv") or next(
        (str(p) for p in [ROOT / ".tools" / "bin" / "uv"] if p.exists()), None
    )


def ensure_bench_venv() -> Path:
    """The competitors' venv (created and filled on first use), compiled to bytecode as
    nyla's environment is (``uv sync`` compiles it): the same for all. The measured runs
    come after each worker's warm-up, so no import is in them either way."""
    python = BENCH_VENV / "bin" / "python"
    marker = BENCH_VENV / ".installed"
    if marker.exists() and python.exists():
        if "compiled" not in marker.read_text():
            _compile(python, marker)
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
    _compile(python, marker)
    return python


def _compile(python: Path, marker: Path) -> None:
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    subprocess.run([str(python), "-m", "compileall", "-q", site], check=False)
    marker.write_text(marker.read_text() + " compiled")


def start_database() -> tuple[Any, Path, str, str]:
    """The bench's own embedded PostgreSQL and a schema with the documents indexed."""
    from agent_loop_runners import index_documents

    from nyla.db import Database, to_sqlalchemy_url
    from nyla.embedded import start_embedded

    base = Path(tempfile.mkdtemp(prefix="nyla-bench-loop-"))
    server = start_embedded(base, cleanup_mode="delete")
    server.psql("CREATE EXTENSION IF NOT EXISTS vector;")
    url = to_sqlalchemy_url(server.get_uri())
    schema = f"bench_loop_{uuid.uuid4().hex[:8]}"

    async def prepare() -> None:
        db = Database(url, schema=schema)
        await db.ensure_ready()
        await index_documents(db)
        await db.dispose()

    asyncio.run(prepare())
    return server, base, url, schema


class Worker:
    """A worker process of one framework, driven line by line."""

    def __init__(
        self, name: str, python: str, env: dict[str, str], prefix: tuple[str, ...] = ()
    ) -> None:
        self.name = name
        self.proc = subprocess.Popen(
            [*prefix, python, __file__, "--worker", name],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )

    def run(
        self, rounds: int, schedule: str, tool_ms: float, verify: bool = True
    ) -> dict[str, Any]:
        cmd = {"rounds": rounds, "schedule": schedule, "toolMs": tool_ms, "verify": verify}
        return self.ask(cmd)

    def ask(self, cmd: dict[str, Any]) -> dict[str, Any]:
        """Send one command line, return the worker's answer line."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the {self.name} worker ended (exit {self.proc.wait()})")
        return json.loads(line)

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=60)


def summarize(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians of one framework's runs of one configuration, per round."""
    rounds = runs[0]["rounds"]

    def med(f: Any) -> float:
        return statistics.median(f(r) for r in runs) * 1000 / rounds

    return {
        **{k: runs[0][k] for k in ("framework", "rounds", "schedule", "toolMs")},
        "cpuMs": med(lambda r: r["cpu"]),
        "overheadMs": med(lambda r: r["wall"] - r["busy"]),
        "wallMs": med(lambda r: r["wall"]),
        "dbCpuMs": med(lambda r: r["dbCpu"]),
        "cpuSpread": (
            min(r["cpu"] for r in runs) * 1000 / rounds,
            max(r["cpu"] for r in runs) * 1000 / rounds,
        ),
        "readsInFlight": min(r["readsInFlight"] for r in runs),
        "writeWithReads": any(r["writeWithReads"] for r in runs),
        "runs": len(runs),
    }


def report(config: tuple[float, str, int], rows: list[dict[str, Any]], loads: list[float]) -> str:
    """Print one configuration's table and verdict; its line of the closing summary."""
    tool_ms, schedule, rounds = config
    print(
        f"\n## {rounds} rounds, schedule {schedule!r}, tools wait {tool_ms:g} ms "
        f"(scripted fixture; load {min(loads):.2f}-{max(loads):.2f})"
    )
    print(
        f"{'framework':<12} {'cpu/round ms':>13} {'(min-max)':>15} {'wall overhead/round ms':>23} "
        f"{'wall/round ms':>14} {'db cpu/round ms':>16} {'reads at once':>14} {'write':>13}"
    )
    for r in rows:
        spread = f"{r['cpuSpread'][0]:.2f}-{r['cpuSpread'][1]:.2f}"
        write = "with reads" if r["writeWithReads"] else "after reads"
        if not tool_ms:
            write = "- (instant)"
        print(
            f"{r['framework']:<12} {r['cpuMs']:>13.3f} {spread:>15} {r['overheadMs']:>23.3f} "
            f"{r['wallMs']:>14.2f} {r['dbCpuMs']:>16.2f} {r['readsInFlight']:>14} {write:>13}"
        )
    nyla = next((r for r in rows if r["framework"] == "nyla"), None)
    others = [r for r in rows if r["framework"] in COMPETING]
    floor = next((r for r in rows if r["framework"] == FLOOR), None)
    if floor is not None:
        print(f"({FLOOR}: no framework, the tools' tasks and waits alone; in every row above)")
    if nyla is None or not others:
        return ""
    fastest = min(others, key=lambda r: r["cpuMs"])
    ratio = nyla["cpuMs"] / fastest["cpuMs"]
    with_db = (nyla["cpuMs"] + nyla["dbCpuMs"]) / fastest["cpuMs"]
    quickest = min(others, key=lambda r: r["overheadMs"])
    print(
        f"CPU/round: nyla = {ratio:.3f}x {fastest['framework']} (the faster); goal <= {GOAL}: "
        + ("met" if ratio <= GOAL else "NOT met")
        + f". With nyla's database server CPU added: {with_db:.3f}x."
    )
    if tool_ms > 0:
        print(
            f"wall overhead/round (wall - tool time): nyla = "
            f"{nyla['overheadMs'] / quickest['overheadMs']:.3f}x {quickest['framework']}"
        )
    cpu = {r["framework"]: r["cpuMs"] for r in rows}
    wall = {r["framework"]: r["wallMs"] for r in rows}
    return (
        f"{rounds:>6} {schedule:>8} {tool_ms:>7g} "
        + " ".join(f"{cpu.get(n, float('nan')):>7.3f}" for n in (*FRAMEWORKS, FLOOR))
        + f" {ratio:>6.3f} {'met' if ratio <= GOAL else 'no':>4} "
        + " ".join(f"{wall.get(n, float('nan')):>7.2f}" for n in FRAMEWORKS)
        + f"  {min(loads):.1f}-{max(loads):.1f}"
    )


def measure(
    config: tuple[float, str, int],
    repeat: int,
    workers: dict[str, Worker],
    every: list[dict[str, Any]],
) -> str:
    """One configuration: ``repeat`` passes, the frameworks taking turns; its summary line."""
    tool_ms, schedule, rounds = config
    wanted = list(workers)
    loads = [os.getloadavg()[0]]
    runs: dict[str, list[dict[str, Any]]] = {n: [] for n in wanted}
    for rep in range(repeat):
        order = wanted[rep % len(wanted) :] + wanted[: rep % len(wanted)]
        for name in order:
            runs[name].append(workers[name].run(rounds, schedule, tool_ms))
    loads.append(os.getloadavg()[0])
    every += [r for rs in runs.values() for r in rs]
    line = report(config, [summarize(runs[n]) for n in wanted], loads)
    verified = {r["verified"] for r in runs.get("nyla", []) if r["verified"]}
    for note in sorted(verified):
        print(f"nyla's runs left: {note}")
    return line


SUMMARY_HEAD = (
    f"{'rounds':>6} {'schedule':>8} {'tool ms':>7} "
    + " ".join(f"{n[:7]:>7}" for n in (*FRAMEWORKS, "alone"))
    + f" {'ratio':>6} {'goal':>4} "
    + " ".join(f"{'wall ' + n[:2]:>7}" for n in FRAMEWORKS)
    + "  load"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, nargs="+", default=[40, 100])
    parser.add_argument("--repeat", type=int, default=3, help="passes (frameworks alternating)")
    parser.add_argument("--tool-ms", type=float, nargs="+", default=[20.0, 0.0])
    parser.add_argument("--schedule", choices=SCHEDULES, nargs="+", default=list(SCHEDULES))
    parser.add_argument("--only", choices=FRAMEWORKS, action="append")
    parser.add_argument("--no-floor", action="store_true", help="leave out the tools-alone row")
    parser.add_argument("--worker", choices=(*FRAMEWORKS, FLOOR))
    parser.add_argument("--json", type=Path, help="also write every run to this file")
    parser.add_argument(
        "--warm",
        action="store_true",
        help="keep every core busy with nice-19 busy loops while measuring (a load condition)",
    )
    args = parser.parse_args()
    if args.worker:
        worker(args.worker)
        return
    if any(not 2 <= n <= 100 for n in args.rounds):
        parser.error("--rounds: each count must be between 2 and 100 (AgentConfig.max_rounds)")
    # the default embedding model, not the test suite's hash embedder
    os.environ.pop("NYLA_LOCAL_EMBEDDINGS", None)
    wanted = (args.only or list(FRAMEWORKS)) + ([] if args.no_floor else [FLOOR])
    competitor_python = str(ensure_bench_venv()) if set(wanted) - {"nyla", FLOOR} else ""
    server, base, url, schema = start_database() if "nyla" in wanted else (None, None, "", "")
    env = {**os.environ, "NYLA_DATABASE_URL": url, "NYLA_BENCH_SCHEMA": schema}
    if base is not None:
        env["NYLA_BENCH_PGDATA"] = str(base / "pgdata")
    workers = {
        name: Worker(name, competitor_python if name in COMPETING else sys.executable, env)
        for name in wanted
    }
    every: list[dict[str, Any]] = []
    table: list[str] = []
    host: list[str] = []
    if args.warm:
        print("# host kept warm: one busy loop per CPU at nice 19 while measuring")
    try:
        with WarmHost() if args.warm else contextlib.nullcontext():
            for tool_ms in args.tool_ms:
                if tool_ms > 0:
                    host.append(wake_line(tool_ms))
                    print(host[-1])
                for schedule in args.schedule:
                    for rounds in args.rounds:
                        table.append(
                            measure((tool_ms, schedule, rounds), args.repeat, workers, every)
                        )
    finally:
        for w in workers.values():
            w.close()
        if server is not None:
            server.cleanup()
            shutil.rmtree(base, ignore_errors=True)
    print("\n## Summary (medians per round; ratio = nyla / the faster competitor, CPU)")
    print(SUMMARY_HEAD)
    print("\n".join(line for line in table if line))
    print("\n".join(host + warm_bounds(every, "nyla", FLOOR, COMPETING)))
    if args.warm:
        print("(measured with the host kept warm: nice-19 busy loops on every core)")
    if args.json:
        args.json.write_text(json.dumps(every, indent=1))


if __name__ == "__main__":
    main()
