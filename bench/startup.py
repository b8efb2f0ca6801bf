"""Startup benchmark: `nyla --help` and `nyla plugins list --json` beside `llm --help` and
`llm plugins` (the `llm` CLI also uses pluggy + entry points), medians over repeated runs.

The same work on both sides: `nyla --help` discovers the plugins to list the commands they
add, as `llm --help` loads every plugin; `nyla plugins list` and `llm plugins` both load and
list them.

    .venv/bin/python bench/startup.py [--runs N]

`llm` is installed into its own venv under bench/.venvs/llm on first use (from PyPI), so its
dependencies never mix with nyla's. The two commands of a pair run alternately, so a change in
the machine's load affects both alike; the load average is printed before and after.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VENVS = ROOT / "bench" / ".venvs"


def uv() -> str:
    found = shutil.which("uv") or str(ROOT / ".tools" / "bin" / "uv")
    if not Path(found).exists():
        sys.exit("uv not found: run `make setup` first")
    return found


def ensure_llm() -> Path:
    """A venv with the `llm` CLI; returns its bin directory."""
    venv = VENVS / "llm"
    llm = venv / "bin" / "llm"
    if not llm.exists():
        env = {**os.environ, "UV_PYTHON_DOWNLOADS": "never"}
        subprocess.run(
            [uv(), "venv", "--quiet", "--python", sys.executable, str(venv)], check=True, env=env
        )
        subprocess.run(
            [uv(), "pip", "install", "--quiet", "--python", str(venv / "bin" / "python"), "llm"],
            check=True,
            env=env,
        )
    return venv / "bin"


def _env() -> dict[str, str]:
    return {**os.environ, "NYLA_STRICT_PLUGINS": "0", "LLM_USER_PATH": str(VENVS / "llm-home")}


def _once(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, capture_output=True, env=_env(), check=True)
    return time.perf_counter() - start


def time_pair(first: list[str], second: list[str], runs: int) -> tuple[list[float], list[float]]:
    """Wall times (seconds) of ``runs`` executions of each command after one warm-up each,
    alternating the two so that a change in the machine's load hits both alike."""
    _once(first), _once(second)  # warm the OS cache
    a, b = [], []
    for i in range(runs):
        pair = (first, a), (second, b)
        for argv, out in pair if i % 2 == 0 else pair[::-1]:
            out.append(_once(argv))
    return a, b


def machine() -> str:
    """Cores, load average and Python of the measuring machine (for the README row)."""
    load = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    return f"{os.cpu_count()} cores, load {load} (1/5/15 min), Python {sys.version.split()[0]}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()

    nyla = str(ROOT / ".venv" / "bin" / "nyla")
    llm = str(ensure_llm() / "llm")
    pairs = [
        ("help", [nyla, "--help"], [llm, "--help"]),
        ("plugin listing", [nyla, "plugins", "list", "--json"], [llm, "plugins"]),
    ]
    rows = []
    print(f"machine: {machine()}")
    for label, n_cmd, l_cmd in pairs:
        n, m = time_pair(n_cmd, l_cmd, args.runs)
        rows.append(
            (
                label,
                " ".join(["nyla", *n_cmd[1:]]),
                statistics.median(n),
                statistics.quantiles(n, n=20)[-1],
                " ".join([Path(l_cmd[0]).name, *l_cmd[1:]]),
                statistics.median(m),
                statistics.quantiles(m, n=20)[-1],
            )
        )

    print(f"startup benchmark, {args.runs} runs each (median / p95 wall time, ms)")
    header = (
        f"{'what':<16} {'nyla command':<28} {'median':>8} {'p95':>8}   "
        f"{'llm command':<14} {'median':>8} {'p95':>8}   {'nyla/llm':>8}"
    )
    print(header)
    print("-" * len(header))
    for label, ncmd, nmed, np95, lcmd, lmed, lp95 in rows:
        print(
            f"{label:<16} {ncmd:<28} {nmed * 1000:8.1f} {np95 * 1000:8.1f}   "
            f"{lcmd:<14} {lmed * 1000:8.1f} {lp95 * 1000:8.1f}   {nmed / lmed:8.2f}"
        )
    print(f"machine after: {machine()}")
    print("\nratio < 1.00 means nyla is faster (goal: no slower than llm on both).")


if __name__ == "__main__":
    main()
