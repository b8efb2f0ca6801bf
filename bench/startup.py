"""Startup benchmark: `nyla --help` and `nyla plugins list --json` beside `llm --help` and
`llm plugins` (the `llm` CLI also uses pluggy + entry points), medians over repeated runs.

The same work on both sides: `nyla --help` discovers the plugins to list the commands they
add, as `llm --help` loads every plugin; `nyla plugins list` and `llm plugins` both load and
list them.

    .venv/bin/python bench/startup.py [--runs N]

`llm` is installed into its own venv under bench/.venvs/llm on first use (from PyPI).
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


def time_command(argv: list[str], runs: int) -> list[float]:
    """Wall times (seconds) of ``runs`` executions after one warm-up."""
    env = {**os.environ, "NYLA_STRICT_PLUGINS": "0", "LLM_USER_PATH": str(VENVS / "llm-home")}
    subprocess.run(argv, capture_output=True, env=env, check=True)  # warm the OS cache
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, capture_output=True, env=env, check=True)
        out.append(time.perf_counter() - start)
    return out


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
    for label, n_cmd, l_cmd in pairs:
        n = time_command(n_cmd, args.runs)
        m = time_command(l_cmd, args.runs)
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
    print("\nratio < 1.00 means nyla is faster (goal: no slower than llm on both).")


if __name__ == "__main__":
    main()
