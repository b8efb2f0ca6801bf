"""Agent loop in instructions: the work each framework does a round, whatever the host does.

``bench/agent_loop.py`` measures CPU time, the issue's measure. On this kind of host (a
virtual CPU) CPU time also holds what the host charges for waking up after a wait
(``bench/host_wake.py``): the same code costs several times more right after a tool's
wait, and the leaner a framework's burst, the larger that share. This bench counts what a
process executes instead, which no host changes: the same workers, the same scripted
fixture and schedules, each worker run under ``valgrind --tool=callgrind`` with the
instrumentation off until its warm-up run is done; then for each measured run the counters
are zeroed, the run made, and the counters dumped, so a figure holds that run and nothing
else (its event loop, framework, driver and tools; not the database server, another process,
whose CPU ``bench/agent_loop.py`` prints).

Instructions are not time (a cache miss costs more than an add), so this complements the
CPU bench and does not replace it; it shows how much of a ratio is work and how much is the
host. nyla is measured through ``kernel.agent.run`` with traces persisted and the default
context, as in the CPU bench, and every run's trace, round memory and citations are checked.

Usage: ``env -u NYLA_LOCAL_EMBEDDINGS .venv/bin/python bench/agent_loop_instructions.py
[--rounds 40] [--repeat 2] [--tool-ms 20 0] [--schedule apart together]``. Under valgrind a
run is ~50x slower: the defaults take ~10 minutes. Never in the tests.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from agent_loop import (
    COMPETING,
    FLOOR,
    FRAMEWORKS,
    GOAL,
    Worker,
    ensure_bench_venv,
    start_database,
)
from agent_loop_runners import SCHEDULES

CONTROL_TIMEOUT_S = 120


class CountedWorker(Worker):
    """A worker under callgrind, its counters zeroed before and dumped after each run."""

    def __init__(self, name: str, python: str, env: dict[str, str], out: Path) -> None:
        self.out = out
        prefix = (
            "valgrind",
            "--tool=callgrind",
            "--instr-atstart=no",
            f"--callgrind-out-file={out}",
        )
        super().__init__(name, python, env, prefix)
        self.dumps = 0

    def _control(self, *args: str) -> None:
        subprocess.run(
            ["callgrind_control", *args, str(self.proc.pid)],
            check=True,
            capture_output=True,
            timeout=CONTROL_TIMEOUT_S,
        )

    def counted(self, rounds: int, schedule: str, tool_ms: float) -> dict[str, Any]:
        """One measured run with its instruction count (the first call also warms up)."""
        if not self.dumps:
            self.run(rounds, schedule, tool_ms)  # the warm-up, not instrumented
            self._control("--instr=on")
        self._control("--zero")
        result = self.run(rounds, schedule, tool_ms, verify=False)
        self.dumps += 1
        self._control(f"--dump=run{self.dumps}")
        self._control("--instr=off")
        result["verified"] = self.ask({"verifyLast": True})["verified"]
        self._control("--instr=on")
        dump = Path(f"{self.out}.{self.dumps}")
        totals = re.search(r"^(?:summary|totals): (\d+)", dump.read_text(), re.M)
        if totals is None:
            raise RuntimeError(f"no instruction total in {dump}")
        return {**result, "instructions": int(totals.group(1))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, nargs="+", default=[40])
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--tool-ms", type=float, nargs="+", default=[20.0, 0.0])
    parser.add_argument("--schedule", choices=SCHEDULES, nargs="+", default=list(SCHEDULES))
    args = parser.parse_args()
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        sys.exit("this bench needs valgrind (Debian: apt-get install valgrind)")
    os.environ.pop("NYLA_LOCAL_EMBEDDINGS", None)
    ensure_bench_venv()
    server, base, url, schema = start_database()
    env = {**os.environ, "NYLA_DATABASE_URL": url, "NYLA_BENCH_SCHEMA": schema}
    table = []
    try:
        for tool_ms in args.tool_ms:
            for schedule in args.schedule:
                for rounds in args.rounds:
                    table.append(measure((tool_ms, schedule, rounds), args.repeat, env, base))
                    print(table[-1], flush=True)
    finally:
        server.cleanup()
        shutil.rmtree(base, ignore_errors=True)
    print("\n## Summary (median instructions a round, millions; ratio = nyla / the fewer)")
    print(HEAD)
    print("\n".join(table))


HEAD = (
    f"{'rounds':>6} {'schedule':>8} {'tool ms':>7} "
    + " ".join(f"{n[:7]:>7}" for n in (*FRAMEWORKS, "alone"))
    + f" {'ratio':>6} {'<= ' + str(GOAL):>7}"
)


def measure(config: tuple[float, str, int], repeat: int, env: dict[str, str], base: Path) -> str:
    """One configuration, one fresh counted worker per framework (taking turns run by run)."""
    tool_ms, schedule, rounds = config
    competitor_python = str(ensure_bench_venv())
    names = (*FRAMEWORKS, FLOOR)
    workers = {
        name: CountedWorker(
            name,
            competitor_python if name in COMPETING else sys.executable,
            env,
            base / f"callgrind.{name}.{schedule}.{tool_ms:g}.{rounds}.out",
        )
        for name in names
    }
    counts: dict[str, list[int]] = {name: [] for name in names}
    try:
        for _ in range(repeat):
            for name in names:
                result = workers[name].counted(rounds, schedule, tool_ms)
                if result.get("verified"):
                    print(f"nyla's run left: {result['verified']}")
                counts[name].append(result["instructions"])
    finally:
        for worker in workers.values():
            worker.close()
    per_round = {n: statistics.median(c) / rounds / 1e6 for n, c in counts.items()}
    fewer = min(per_round[n] for n in COMPETING)
    ratio = per_round["nyla"] / fewer
    return (
        f"{rounds:>6} {schedule:>8} {tool_ms:>7g} "
        + " ".join(f"{per_round[n]:>7.2f}" for n in names)
        + f" {ratio:>6.3f} {'yes' if ratio <= GOAL else 'no':>7}"
    )


if __name__ == "__main__":
    main()
