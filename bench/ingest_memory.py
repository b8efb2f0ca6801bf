"""Peak memory of indexing through the CLI, and how it grows with the number of files.

    .venv/bin/python bench/ingest_memory.py                        # 1k, 10k, 50k; 2 rounds
    .venv/bin/python bench/ingest_memory.py --sizes 1000,10000 --rounds 1 --json /tmp/m.json

The corpus of bench/ingest.py (small German and English notes, one chunk each) is indexed
into a fresh schema of one embedded PostgreSQL through the two paths a user calls:

- ``nyla index``: ``nyla knowledge index FOLDER --json`` (the README's command);
- ``nyla sync``: a localfs connection and a data source over it, then ``nyla sync run``.

For each run the peak RSS of the indexing process tree (``ru_maxrss`` of the waited child,
which covers its own children), wall and CPU seconds. A folder of one file gives the floor
(interpreter, imports, embedder, schema). Within a round the sizes and both paths alternate
(the order rotates between rounds). The table shows the largest peak of each size and path
and the growth per 1,000 files between the smallest and the largest size: flat is ~0. The
goal (issue 32, goal 5): at most 150 MiB at 10,000 files, flat up to 50,000. The embedder is
nyla's offline default (``NYLA_LOCAL_EMBEDDINGS`` is removed from the environment).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

from ingest import run_process, sql, steps
from ingest_corpus import make_corpus

SYSTEMS = ("nyla index", "nyla sync")
GOAL_MIB = 150
GOAL_FILES = 10_000


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def run_once(system: str, folder: Path, files: int, uri: str, home: Path) -> dict[str, Any]:
    """Index ``folder`` with ``system`` into a fresh schema; the indexing process's figures
    (the set-up steps of a sync, connection and data source, are not counted)."""
    schema = f"mem_{system.split()[-1]}_{uuid.uuid4().hex[:8]}"
    sql(uri, f"CREATE SCHEMA {schema}")
    found = {"CONNECTION": "", "SOURCE": ""}
    try:
        for cmd, env, parse in steps(
            system, folder, uri, schema, home, Path(sys.executable), files
        ):
            ran = run_process([found.get(part) or part for part in cmd], env)
            if parse is None:
                key = "SOURCE" if found["CONNECTION"] else "CONNECTION"
                found[key] = json.loads(ran["stdout"])["id"]
                continue
            counts = parse(ran["stdout"])
            if counts["files"] != files:
                raise RuntimeError(f"{system} indexed {counts['files']} of {files} files")
            return {
                "system": system,
                "files": files,
                "rss_mib": ran["rss_mb"],
                "wall_s": ran["wall_s"],
                "cpu_s": ran["cpu_s"],
                "load": os.getloadavg()[0],
            }
        raise AssertionError("no indexing step")
    finally:
        sql(uri, f"DROP SCHEMA {schema} CASCADE")


def summary(runs: list[dict[str, Any]], floor: dict[str, dict[str, Any]]) -> str:
    sizes = sorted({r["files"] for r in runs})
    rows = [
        "| path | floor (1 file) MiB | "
        + " | ".join(f"{n:,} files: peak MiB (wall s, CPU s)" for n in sizes)
        + " | MiB per 1k files | goal ≤ 150 MiB at 10k, flat |",
        "|---|---:|" + "---:|" * len(sizes) + "---:|---|",
    ]
    for system in SYSTEMS:
        mine = [r for r in runs if r["system"] == system]
        if not mine:
            continue
        cells, peaks = [], {}
        for n in sizes:
            at = [r for r in mine if r["files"] == n]
            peaks[n] = max(r["rss_mib"] for r in at)
            wall = statistics.median(r["wall_s"] for r in at)
            cpu = statistics.median(r["cpu_s"] for r in at)
            cells.append(f"{peaks[n]:.0f} ({wall:.1f}, {cpu:.1f})")
        lo, hi = sizes[0], sizes[-1]
        slope = (peaks[hi] - peaks[lo]) / ((hi - lo) / 1000) if hi > lo else 0.0
        at_goal = peaks.get(GOAL_FILES)
        flat = slope < 0.2  # under 10 MiB over 50,000 files
        met = (
            "–"
            if at_goal is None
            else ("met" if at_goal <= GOAL_MIB and flat else "not met")
            + f" ({at_goal:.0f} MiB, {'flat' if flat else 'grows'})"
        )
        rows.append(
            f"| {system} | {floor[system]['rss_mib']:.0f} | {' | '.join(cells)} | "
            f"{slope:.2f} | {met} |"
        )
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1000,10000,50000")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--systems", default=",".join(SYSTEMS))
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    systems = [s.strip() for s in args.systems.split(",")]
    from nyla.embedded import start_embedded

    base = Path(tempfile.mkdtemp(prefix="nyla-bench-memory-"))
    server = start_embedded(base / "server", cleanup_mode="delete")
    uri, home = server.get_uri(), base / "home"
    home.mkdir()
    try:
        folders = {n: base / f"corpus-{n}" for n in [1, *sizes]}
        for n, folder in folders.items():
            make_corpus(folder, n)
        log(f"corpora of {', '.join(map(str, folders))} files written; load {os.getloadavg()}")
        pairs = [(n, s) for n in sizes for s in systems]
        runs = []
        for round_ in range(args.rounds):
            shift = round_ % len(pairs)
            for n, system in pairs[shift:] + pairs[:shift]:
                record = run_once(system, folders[n], n, uri, home)
                record["round"] = round_
                runs.append(record)
                log(f"round {round_ + 1} {system} {n} files: {record['rss_mib']:.0f} MiB, "
                    f"{record['wall_s']:.1f} s (load {record['load']:.2f})")  # fmt: skip
        floor = {s: run_once(s, folders[1], 1, uri, home) for s in systems}
        loads = [r["load"] for r in runs]
        print(f"\nindexing memory, {args.rounds} rounds, {os.cpu_count()} CPUs, "
              f"load {min(loads):.2f}–{max(loads):.2f} (1-min average at the end of each run)"
              "\n")  # fmt: skip
        print(summary(runs, floor))
        if args.json:
            args.json.write_text(json.dumps({"runs": runs, "floor": floor}, indent=2))
    finally:
        server.cleanup()
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
