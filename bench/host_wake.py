"""What this host charges for waking up: the same Python burst's CPU hot and after a wait.

A virtual CPU that idles (the agent bench's tools wait 20 ms) can come back slow: caches
cold, the core clocked down or shared by the host. CPU time then stops measuring work, and
the leaner a burst, the larger the share of it that runs slow. The agent bench prints this
calibration beside its rows so a reader can tell the host's share from a framework's: a
fixed burst of plain Python (no framework, no I/O) timed back to back, and timed right
after sleeping as long as a tool waits.

``--warm`` in ``bench/agent_loop.py`` keeps every core busy with busy loops at the lowest
priority (nice 19) while it measures, which takes the idle away without taking CPU time from
the processes measured; it is a load condition of its own and labelled as such.
"""

from __future__ import annotations

import math
import os
import random
import statistics
import subprocess
import sys
import time
from typing import Any

_SIZE = 4096
_DATA = [{"key": i, "text": str(i) * 3} for i in range(_SIZE)]
_ORDER = random.Random(7).sample(range(_SIZE), _SIZE)


def _burst(n: int) -> int:
    total = 0
    for i in _ORDER[:n]:
        total += len(_DATA[i]["text"])
    return total


def burst_us(wait_s: float, n: int = 2000, reps: int = 60) -> float:
    """Median thread CPU (us) of one burst of ``n`` lookups, each after sleeping ``wait_s``."""
    times = []
    for _ in range(reps):
        if wait_s:
            time.sleep(wait_s)
        start = time.thread_time_ns()
        _burst(n)
        times.append(time.thread_time_ns() - start)
    return statistics.median(times) / 1000


def wake_line(wait_ms: float) -> str:
    """One printed line: the burst hot and after a ``wait_ms`` wait, alternating blocks."""
    hot, cold = [], []
    for _ in range(3):
        hot.append(burst_us(0.0))
        cold.append(burst_us(wait_ms / 1000))
    h, c = statistics.median(hot), statistics.median(cold)
    return (
        f"host: a fixed burst of plain Python costs {h:.0f} us CPU back to back and {c:.0f} us "
        f"right after a {wait_ms:g} ms wait ({c / h:.1f}x): the share of every row's CPU that is "
        f"this host waking up, not a framework (load {os.getloadavg()[0]:.2f})"
    )


class WarmHost:
    """One busy loop per CPU at nice 19 for the duration of a ``with`` block."""

    def __init__(self) -> None:
        self.procs: list[subprocess.Popen[bytes]] = []

    def __enter__(self) -> WarmHost:
        code = "import os; os.nice(19)\nwhile True: pass"
        for _ in range(os.cpu_count() or 1):
            self.procs.append(subprocess.Popen([sys.executable, "-c", code]))
        time.sleep(1.0)  # let the loops start and reach their priority
        return self

    def __exit__(self, *exc: object) -> None:
        for proc in self.procs:
            proc.kill()
        for proc in self.procs:
            proc.wait(timeout=10)


def warm_bounds(
    runs: list[dict[str, Any]], framework: str, floor: str, competing: tuple[str, ...]
) -> list[str]:
    """Lines bounding what the waiting rows would give if nothing ran slow after a wait: the
    tools' own cost when they wait (``floor``, measured) plus ``framework``'s work as it costs
    with tools that return at once (its instant row less the floor's), against the faster
    competitor's waiting CPU. Computed from the rows, not measured; a bound only on this host."""

    def median_ms(name: str, rounds: int, schedule: str, waiting: bool) -> float:
        cpu = [
            r["cpu"] * 1000 / rounds
            for r in runs
            if r["framework"] == name
            and r["rounds"] == rounds
            and r["schedule"] == schedule
            and (r["toolMs"] > 0) == waiting
        ]
        return statistics.median(cpu) if cpu else math.nan

    lines = []
    for rounds, schedule in sorted({(r["rounds"], r["schedule"]) for r in runs}):
        wait_floor = median_ms(floor, rounds, schedule, True)
        work = median_ms(framework, rounds, schedule, False) - median_ms(
            floor, rounds, schedule, False
        )
        fastest = min(median_ms(n, rounds, schedule, True) for n in competing)
        bound = wait_floor + work
        if math.isnan(bound + fastest):
            continue
        lines.append(
            f"warm bound, {rounds} rounds {schedule}: {floor} waiting {wait_floor:.3f} + "
            f"{framework}'s instant work {work:.3f} = {bound:.3f} ms a round, {bound / fastest:.3f}x"
            " the faster competitor waiting (computed from the rows, not measured)"
        )
    return lines
