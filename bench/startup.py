"""Startup benchmark: `nyla --help` and `nyla plugins list --json` beside `llm --help` and
`llm plugins` (the `llm` CLI also uses pluggy + entry points), medians over repeated runs.

The same work on both sides: `nyla --help` lists the commands its plugins add, as `llm --help`
loads every plugin; `nyla plugins list` and `llm plugins` both list the installed plugins.

    .venv/bin/python bench/startup.py [--runs N]

Both environments are byte-compiled first (`compileall` over each interpreter's `sys.path`),
so neither pays for writing `.pyc` files. nyla is measured twice: as a user runs it (the
plugin cache filled by the warm-up run, see `nyla.plugin_cache`) and with
`NYLA_PLUGIN_CACHE=off`, the cost of the first command after an install, which discovers and
imports every plugin. The commands of a pair alternate, so a change in the machine's load
affects both alike; each row prints median wall and CPU time (user + system of the process)
and the load average it ran at.

`llm` is installed into its own venv under bench/.venvs/llm on first use (from PyPI), so its
dependencies never mix with nyla's.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VENVS = ROOT / "bench" / ".venvs"
TIMEOUT_S = 120


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
            [uv(), "venv", "--quiet", "--python", sys.executable, str(venv)],
            check=True,
            env=env,
            timeout=600,
        )
        subprocess.run(
            [uv(), "pip", "install", "--quiet", "--python", str(venv / "bin" / "python"), "llm"],
            check=True,
            env=env,
            timeout=600,
        )
    return venv / "bin"


def compile_environment(python: Path) -> None:
    """Byte-compile every directory on ``python``'s ``sys.path`` (site-packages, editable
    sources, the standard library), as an installer that compiles would."""
    listing = subprocess.run(
        [str(python), "-c", "import sys; print('\\n'.join(p for p in sys.path if p))"],
        capture_output=True,
        text=True,
        check=True,
        timeout=TIMEOUT_S,
    )
    dirs = [p for p in listing.stdout.splitlines() if Path(p).is_dir()]
    started = time.perf_counter()
    subprocess.run(
        [str(python), "-m", "compileall", "-q", "-j", "1", *dirs],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,  # the standard library's test data warns
        check=False,  # a test fixture with a syntax error must not stop the bench
        timeout=1800,
    )
    print(
        f"compiled {python.parent.parent.name}: {len(dirs)} dirs, {time.perf_counter() - started:.1f} s"
    )


def _env(cache_home: str, plugin_cache: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NYLA_LOCAL_EMBEDDINGS",)}
    env.update(
        NYLA_STRICT_PLUGINS="0",
        NYLA_PLUGIN_CACHE="on" if plugin_cache else "off",
        LLM_USER_PATH=str(VENVS / "llm-home"),
        XDG_CACHE_HOME=cache_home,
    )
    return env


def _once(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds (user + system of the child) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, env=env, timeout=TIMEOUT_S)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        tail = done.stderr.decode(errors="replace").strip().splitlines()[-3:]
        sys.exit(f"{' '.join(argv)} failed ({done.returncode}): {' / '.join(tail)}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def time_pair(
    first: tuple[list[str], dict[str, str]], second: tuple[list[str], dict[str, str]], runs: int
) -> tuple[list[tuple[float, float]], list[tuple[float, float]]]:
    """(wall, CPU) of ``runs`` executions of each command after one warm-up each (which also
    fills nyla's plugin cache), alternating the two so that load hits both alike."""
    _once(*first), _once(*second)
    a: list[tuple[float, float]] = []
    b: list[tuple[float, float]] = []
    for i in range(runs):
        pair = (first, a), (second, b)
        for (argv, env), out in pair if i % 2 == 0 else pair[::-1]:
            out.append(_once(argv, env))
    return a, b


def load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def machine() -> str:
    """Cores, load average and Python of the measuring machine (for the README row)."""
    return f"{os.cpu_count()} cores, load {load()} (1/5/15 min), Python {sys.version.split()[0]}"


def _med(samples: list[tuple[float, float]], i: int) -> float:
    return statistics.median(s[i] for s in samples) * 1000


def _p95(samples: list[tuple[float, float]], i: int) -> float:
    return statistics.quantiles([s[i] for s in samples], n=20)[-1] * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--no-compile", action="store_true", help="skip compileall")
    args = parser.parse_args()

    nyla = str(ROOT / ".venv" / "bin" / "nyla")
    llm_bin = ensure_llm()
    llm = str(llm_bin / "llm")
    if not args.no_compile:
        compile_environment(ROOT / ".venv" / "bin" / "python")
        compile_environment(llm_bin / "python")
    cache_home = tempfile.mkdtemp(prefix="nyla-startup-cache-")
    cached, uncached = _env(cache_home, True), _env(cache_home, False)
    cases = [
        ("help", "cache", ([nyla, "--help"], cached), [llm, "--help"]),
        ("help", "discovery", ([nyla, "--help"], uncached), [llm, "--help"]),
        (
            "plugin listing",
            "cache",
            ([nyla, "plugins", "list", "--json"], cached),
            [llm, "plugins"],
        ),
        (
            "plugin listing",
            "discovery",
            ([nyla, "plugins", "list", "--json"], uncached),
            [llm, "plugins"],
        ),
    ]
    print(f"machine: {machine()}")
    print(
        f"startup benchmark, {args.runs} alternating runs each (median wall / p95 / median CPU, ms)"
    )
    header = (
        f"{'what':<15} {'nyla':<10} {'wall':>7} {'p95':>7} {'cpu':>7}   "
        f"{'llm command':<12} {'wall':>7} {'p95':>7} {'cpu':>7}   "
        f"{'wall x':>6} {'cpu x':>6}   load 1/5/15"
    )
    print(header)
    print("-" * len(header))
    try:
        for label, mode, n_case, l_cmd in cases:
            n, m = time_pair(n_case, (l_cmd, cached), args.runs)
            print(
                f"{label:<15} {mode:<10} {_med(n, 0):7.1f} {_p95(n, 0):7.1f} {_med(n, 1):7.1f}   "
                f"{' '.join([Path(l_cmd[0]).name, *l_cmd[1:]]):<12} "
                f"{_med(m, 0):7.1f} {_p95(m, 0):7.1f} {_med(m, 1):7.1f}   "
                f"{_med(n, 0) / _med(m, 0):6.2f} {_med(n, 1) / _med(m, 1):6.2f}   {load()}",
                flush=True,
            )
    finally:
        shutil.rmtree(cache_home, ignore_errors=True)
    print(f"machine after: {machine()}")
    print(
        "\nnyla `cache`: the plugin cache filled (every command after the first since an install); "
        "`discovery`: NYLA_PLUGIN_CACHE=off (the first command after an install)."
        "\nratios < 1.00 mean nyla is faster (goal, issue 32: <= 0.50 wall and CPU with the cache)."
    )


if __name__ == "__main__":
    main()
