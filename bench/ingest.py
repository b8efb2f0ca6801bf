"""Indexing throughput: nyla's CLI and localfs sync against LlamaIndex's ingestion pipeline.

    .venv/bin/python bench/ingest.py                      # 10,000 files, 2 rounds
    .venv/bin/python bench/ingest.py --files 1000 --rounds 1 --json /tmp/ingest.json
    .venv/bin/python bench/ingest.py --profile index      # cProfile of one nyla CLI run

A deterministic corpus of small German and English notes (bench/ingest_corpus.py, 300-2,000
bytes each) is indexed, each time into a fresh database schema of one embedded PostgreSQL,
through the path each system's user calls, in a subprocess of its own:

- ``nyla index``: ``nyla knowledge index FOLDER``;
- ``nyla sync``: ``nyla connections add localfs --setting root=FOLDER`` then
  ``nyla sync run CONNECTION`` (both processes counted);
- ``llamaindex``: bench/ingest_llamaindex.py in ``bench/.venvs/ir`` (``SimpleDirectoryReader``
  + ``IngestionPipeline`` (SentenceSplitter, the same static embedder) into ``PGVectorStore``
  with hybrid search and HNSW).

All three embed with nyla's offline default, the WordLlama static model
(``local:wordllama-l2-256``; ``NYLA_LOCAL_EMBEDDINGS`` is removed from the environment). The
systems alternate within each round (the order rotates between rounds). For each run: wall
seconds, CPU seconds of the client process tree and of the PostgreSQL server (backends and
background processes), the client's peak RSS, files/s and chunks/s; the same command on a
folder of one file gives the fixed cost (process start, imports, schema set-up, model load),
reported apart. Prints a Markdown table; ``--json`` writes every run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from ingest_corpus import make_corpus

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
NYLA = REPO / ".venv" / "bin" / "nyla"
SYSTEMS = ("nyla index", "nyla sync", "llamaindex")
MODEL = "local:wordllama-l2-256"
USER = "local"  # the CLI's default user
TICK = os.sysconf("SC_CLK_TCK")


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def bench_venv(name: str = "ir") -> Path:
    """The python of ``bench/.venvs/NAME``, built by uv from bench/requirements/NAME.txt."""
    venv = HERE / ".venvs" / name
    python = venv / "bin" / "python"
    requirements = HERE / "requirements" / f"{name}.txt"
    stamp = venv / ".requirements"
    if python.exists() and stamp.exists() and stamp.read_text() == requirements.read_text():
        return python
    uv = REPO / ".tools" / "bin" / "uv"
    log(f"building {venv} from {requirements.relative_to(REPO)} …")
    subprocess.run([str(uv), "venv", "-q", "--clear", "-p", sys.executable, str(venv)], check=True)
    # copies, not hard links: nltk (under llama-index) refuses multiply-linked data files
    subprocess.run(
        [str(uv), "pip", "install", "-q", "--link-mode=copy", "-p", str(python),
         "-r", str(requirements)],
        check=True,
    )  # fmt: skip
    stamp.write_text(requirements.read_text())
    return python


# ---- the server and its CPU ---------------------------------------------------------------


def server_pid(pgdata: Path) -> int:
    return int((pgdata / "postmaster.pid").read_text().split()[0])


def _stat(pid: int) -> list[str]:
    raw = Path(f"/proc/{pid}/stat").read_text()
    return raw[raw.rindex(")") + 2 :].split()


def server_cpu(postmaster: int) -> float:
    """CPU seconds of the server so far: the postmaster, its live children, and (through the
    postmaster's cutime/cstime) every backend that has exited."""
    fields = _stat(postmaster)
    ticks = sum(int(fields[i]) for i in (11, 12, 13, 14))
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            child = _stat(int(entry.name))
        except (FileNotFoundError, ProcessLookupError, ValueError):
            continue
        if int(child[1]) == postmaster:
            ticks += int(child[11]) + int(child[12])
    return ticks / TICK


def sql(uri: str, statement: str) -> None:
    import psycopg

    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute(statement)


# ---- one run ------------------------------------------------------------------------------


def run_process(cmd: list[str], env: dict[str, str]) -> dict[str, Any]:
    """Run ``cmd``; its wall and CPU seconds (the whole process tree), peak RSS and stdout."""
    started = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - started
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode()
    if proc.returncode:
        raise RuntimeError(f"{' '.join(cmd[:4])} … failed ({proc.returncode}): {stderr[-2000:]}")
    return {
        "wall_s": wall,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "rss_mb": usage.ru_maxrss / 1024,
        "stdout": stdout,
    }


def nyla_env(uri: str, schema: str, home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "NYLA_LOCAL_EMBEDDINGS"}
    env.update(NYLA_HOME=str(home), NYLA_DATABASE_URL=uri, NYLA_DATABASE_SCHEMA=schema)
    return env


def steps(system: str, folder: Path, uri: str, schema: str, home: Path, python: Path,
          files: int) -> list:  # fmt: skip
    """The processes of one run of ``system``: (command, env, parser of its output)."""
    env = nyla_env(uri, schema, home)
    if system == "nyla index":
        return [([str(NYLA), "knowledge", "index", str(folder), "--json"], env, _index_counts)]
    if system == "nyla sync":
        add = [str(NYLA), "connections", "add", "localfs", "--setting", f"root={folder}"]
        source = [sys.executable, str(Path(__file__).resolve()), "--source-of", "CONNECTION"]
        return [
            ([*add, "--json"], env, None),
            ([*source, "--items", str(files * 2)], env, None),
            ([str(NYLA), "sync", "run", "SOURCE", "--json"], env, _sync_counts),
        ]
    out = home / f"{schema}.json"
    cmd = [str(python), str(HERE / "ingest_llamaindex.py"), str(folder), "--uri", uri]
    cmd += ["--schema", schema, "--out", str(out)]
    return [(cmd, dict(os.environ), lambda _stdout: json.loads(out.read_text()))]


async def add_source(connection: str, items: int) -> str:
    """A data source over the whole connection whose stored item limit is ``items`` (the
    default, 5,000, would stop a 10,000-file sync halfway; ``nyla sync run --max-items`` may
    only lower it): the ``ragLimits`` setting the web page's source settings write."""
    from nyla.kernel import Kernel

    kernel = Kernel()
    try:
        connection_row = await kernel.connections.get(connection, user_id=USER)
        source = f"ds-{uuid.uuid4().hex[:12]}"
        await kernel.knowledge.governance.add_data_source(
            source, connection_row.id, "/", user_id=USER, rag_index_enabled=True,
            settings={"ragLimits": {"maxItems": items}},
        )  # fmt: skip
        return source
    finally:
        await kernel.aclose()


def _index_counts(stdout: str) -> dict[str, Any]:
    results = json.loads(stdout)
    models = {r["embeddingModel"] for r in results if r["status"] == "indexed"}
    assert models <= {MODEL}, f"nyla embedded with {models}, not {MODEL}"
    return {
        "files": sum(1 for r in results if r["status"] == "indexed"),
        "chunks": sum(r["chunks"] for r in results),
    }


def _sync_counts(stdout: str) -> dict[str, Any]:
    result = json.loads(stdout)
    assert not result["errors"], result["errors"]
    return {"files": result["itemsIndexed"], "chunks": result["chunksWritten"]}


def run_once(system: str, folder: Path, uri: str, pgdata: Path, home: Path, python: Path,
             files: int) -> dict[str, Any]:  # fmt: skip
    """One run of ``system`` over ``folder`` into a fresh schema, with its measurements."""
    schema = f"ingest_{system.split()[-1]}_{uuid.uuid4().hex[:8]}"
    sql(uri, f"CREATE SCHEMA {schema}")
    sql(uri, "CHECKPOINT")  # no earlier run's dirty buffers to write back
    postmaster = server_pid(pgdata)
    server_before = server_cpu(postmaster)
    record: dict[str, Any] = {"system": system, "wall_s": 0.0, "cpu_client_s": 0.0, "rss_mb": 0.0}
    found = {"CONNECTION": "", "SOURCE": ""}
    for cmd, env, parse in steps(system, folder, uri, schema, home, python, files):
        ran = run_process([found.get(part) or part for part in cmd], env)
        record["wall_s"] += ran["wall_s"]
        record["cpu_client_s"] += ran["cpu_s"]
        record["rss_mb"] = max(record["rss_mb"], ran["rss_mb"])
        if parse is None:
            key = "SOURCE" if found["CONNECTION"] else "CONNECTION"
            found[key] = json.loads(ran["stdout"])["id"]
        else:
            record.update(parse(ran["stdout"]))
    record["cpu_server_s"] = server_cpu(postmaster) - server_before
    record["cpu_s"] = record["cpu_client_s"] + record["cpu_server_s"]
    sql(uri, f"DROP SCHEMA {schema} CASCADE")
    return record


# ---- report -------------------------------------------------------------------------------


def mean(values: list[float]) -> float:
    return sum(values) / len(values)


def summary(runs: list[dict[str, Any]], fixed: dict[str, dict[str, Any]]) -> str:
    rows = ["| system | files | chunks | wall s | files/s | chunks/s | CPU s (client + server) "
            "| peak RSS MB | fixed cost s (1 file) | wall vs LlamaIndex |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]  # fmt: skip
    li_wall = mean([r["wall_s"] for r in runs if r["system"] == "llamaindex"] or [float("nan")])
    for system in SYSTEMS:
        mine = [r for r in runs if r["system"] == system]
        if not mine:
            continue
        wall = mean([r["wall_s"] for r in mine])
        files, chunks = mine[0]["files"], mine[0]["chunks"]
        rows.append(
            f"| {system} | {files} | {chunks} | {wall:.1f} | {files / wall:.0f} | "
            f"{chunks / wall:.0f} | {mean([r['cpu_s'] for r in mine]):.1f} "
            f"({mean([r['cpu_client_s'] for r in mine]):.1f} + "
            f"{mean([r['cpu_server_s'] for r in mine]):.1f}) | "
            f"{max(r['rss_mb'] for r in mine):.0f} | {fixed[system]['wall_s']:.1f} | "
            f"{li_wall / wall:.2f}x |".replace("nanx", "–")
        )
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--systems", default=",".join(SYSTEMS))
    parser.add_argument("--json", type=Path)
    parser.add_argument("--profile", choices=("index", "sync"), help="cProfile one nyla run")
    parser.add_argument("--source-of", help=argparse.SUPPRESS)  # step of a "nyla sync" run
    parser.add_argument("--items", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.source_of:
        import asyncio

        print(json.dumps({"id": asyncio.run(add_source(args.source_of, args.items))}))
        return
    systems = [s.strip() for s in args.systems.split(",")]
    from nyla.embedded import start_embedded

    python = bench_venv() if "llamaindex" in systems else Path(sys.executable)
    base = Path(tempfile.mkdtemp(prefix="nyla-bench-ingest-"))
    server = start_embedded(base / "server", cleanup_mode="delete")
    uri, pgdata = server.get_uri(), base / "server" / "pgdata"
    home = base / "home"
    home.mkdir()
    try:
        started = time.perf_counter()
        folder, single = base / "corpus", base / "single"
        size = make_corpus(folder, args.files)
        make_corpus(single, 1)
        log(f"{args.files} files ({size / 1e6:.1f} MB) written in "
            f"{time.perf_counter() - started:.1f} s")  # fmt: skip
        if args.profile:
            profile(args.profile, folder, uri, home, args.files)
            return
        runs = []
        for round_ in range(args.rounds):
            order = systems[round_ % len(systems) :] + systems[: round_ % len(systems)]
            for system in order:
                record = run_once(system, folder, uri, pgdata, home, python, args.files)
                record["round"] = round_
                runs.append(record)
                log(f"round {round_ + 1} {system}: {record['files']} files, "
                    f"{record['chunks']} chunks in {record['wall_s']:.1f} s "
                    f"(CPU {record['cpu_s']:.1f} s)")  # fmt: skip
        # after the rounds: every interpreter's bytecode is compiled and the files are cached
        fixed = {s: run_once(s, single, uri, pgdata, home, python, 1) for s in systems}
        print(f"\n{args.files} files, {size / 1e6:.1f} MB, {args.rounds} rounds, "
              f"embedder {MODEL}, {os.cpu_count()} CPUs\n")  # fmt: skip
        print(summary(runs, fixed))
        if args.json:
            args.json.write_text(json.dumps({"files": args.files, "bytes": size, "runs": runs,
                                             "fixed": fixed}, indent=2))  # fmt: skip
    finally:
        server.cleanup()
        shutil.rmtree(base, ignore_errors=True)


def profile(which: str, folder: Path, uri: str, home: Path, files: int) -> None:
    """cProfile of one nyla CLI run (its main thread), the top functions by cumulative time."""
    import pstats

    schema = f"ingest_profile_{uuid.uuid4().hex[:8]}"
    env = nyla_env(uri, schema, home)
    out = home / "profile.out"
    head = [sys.executable, "-m", "cProfile", "-o", str(out), str(NYLA)]
    if which == "sync":
        *setup, (sync, _, _) = steps("nyla sync", folder, uri, schema, home, NYLA, files)
        found: dict[str, str] = {}
        for cmd, _, _ in setup:
            ran = run_process([found.get(part) or part for part in cmd], env)
            found["SOURCE" if found else "CONNECTION"] = json.loads(ran["stdout"])["id"]
        cmd = [*head, *[found.get(part) or part for part in sync[1:]]]
    else:
        cmd = [*head, "knowledge", "index", str(folder), "--json"]
    ran = run_process(cmd, env)
    print(f"{which}: {ran['wall_s']:.1f} s wall, {ran['cpu_s']:.1f} s CPU")
    stats = pstats.Stats(str(out))
    stats.sort_stats("cumulative").print_stats(40)
    stats.sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()
