"""Sweep nyla's search settings on a kept database: build once, query many times.

    .venv/bin/python bench/rag_sweep.py --large --ef 200,400,600,800
    .venv/bin/python bench/rag_sweep.py --large --adaptive       # what search() picks
    .venv/bin/python bench/rag_sweep.py --large --drop           # remove the database

A 1M-row HNSW build takes ~8 minutes on 2 cores; bench/rag.py builds (and drops) one per
contender and run. This keeps nyla's database (``sweep_<n>``) on the bench server between
runs, with the exact top-10 per query and filter cached next to the vectors, so each
``ef_search`` / path / filter variant costs only its queries. Prints p50/p95 and recall@10
per variant and filter.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from array import array
from typing import Any

from rag import (
    CACHE,
    DIMS,
    MODEL,
    SETTINGS,
    USERS,
    K,
    db_uri,
    drop_database,
    file_layout,
    filter_users,
    fresh_database,
    log,
    nyla_ingest,
    nyla_series,
    read_f32,
    start_server,
    vectors,
)


def database_ready(base: str, name: str, n: int) -> bool:
    """Whether ``name`` exists with ``n`` chunks and its HNSW index."""
    import psycopg

    from nyla.knowledge.vectors import hnsw_index_name

    with psycopg.connect(base, autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
            return False
    with psycopg.connect(db_uri(base, name), autocommit=True) as conn:
        exists = conn.execute(
            "SELECT to_regclass('knowledge_chunk') IS NOT NULL AND to_regclass(%s) IS NOT NULL",
            (hnsw_index_name(MODEL, DIMS),),
        ).fetchone()[0]
        if not exists:
            return False
        return conn.execute("SELECT count(*) FROM knowledge_chunk").fetchone()[0] == n


async def build(uri: str, docs: list[array], texts: list[str], per_file: int) -> None:
    from nyla.db import Database, to_sqlalchemy_url
    from nyla.kernel import Kernel
    from nyla.knowledge.indexing import build_lookups
    from nyla.knowledge.vectors import create_hnsw_index
    from nyla.plugins import PluginHost

    db = Database(to_sqlalchemy_url(uri))
    await db.ensure_ready()
    took = await nyla_ingest(db, docs, texts, per_file)
    log(f"  ingest {len(docs) / took:,.0f} rows/s")
    async with db.session() as s:
        await build_lookups(s)
    started = time.perf_counter()
    async with db.session() as s:
        await create_hnsw_index(s, MODEL, DIMS)
    log(f"  HNSW {time.perf_counter() - started:.0f} s")
    kernel = Kernel(plugins=PluginHost.from_plugins([], builtins=False), db=db)
    await kernel.knowledge.analyze()
    await db.dispose()


def chunk_rows(uri: str, n: int, per_file: int) -> dict[int, int]:
    """nyla chunk id -> the bench's row number."""
    import psycopg

    from nyla.knowledge.vectors import CHUNK_ID_BITS, MAX_CHUNKS_PER_FILE

    layout = file_layout(n, per_file)
    with psycopg.connect(uri) as conn:
        return {
            chunk: layout[int(file_id[5:])][chunk & (MAX_CHUNKS_PER_FILE - 1)]
            for chunk, file_id in conn.execute(
                "SELECT c.id, f.file_id FROM knowledge_chunk c JOIN knowledge_file_index f "
                f"ON f.file_no = c.id >> {CHUNK_ID_BITS}"
            )
        }


def truth(uri: str, queries: list[array], ids: dict[int, int], n: int) -> dict[str, Any]:
    """Exact top-10 row numbers per filter and query (cached; "+ 0" keeps HNSW out)."""
    import psycopg

    from nyla.knowledge.vectors import vector_literal

    path = CACHE / f"sweep-truth-{n}-q{len(queries)}.json"
    if path.exists():
        return json.loads(path.read_text())
    log("exact ground truth (once) …")
    out: dict[str, Any] = {}
    with psycopg.connect(uri) as conn:
        conn.execute("SET max_parallel_workers_per_gather = 2")
        for s in SETTINGS:
            rows = []
            for q, vec in enumerate(queries):
                users = filter_users(q, s) or [f"u{u}" for u in range(USERS)]
                keys = [f"personal:{u}" for u in users]
                rows.append(
                    [
                        ids[r[0]]
                        for r in conn.execute(
                            "SELECT id FROM knowledge_chunk WHERE owner_key = ANY(%s) "
                            f"ORDER BY (embedding::vector({DIMS}) <=> %s::vector) + 0 "
                            f"LIMIT {K}",
                            (keys, vector_literal(vec)),
                        )
                    ]
                )
            out[s] = rows
    path.write_text(json.dumps(out))
    return out


async def sweep(
    uri: str,
    queries: list[array],
    ids: dict[int, int],
    exact: dict[str, Any],
    variants: dict[str, Any],
    settings_list: tuple[str, ...],
) -> list[tuple[str, str, str, float, float, float, float]]:
    from nyla.db import Database, to_sqlalchemy_url

    db = Database(to_sqlalchemy_url(uri))
    known: set[tuple[str, int]] = set()
    table = []
    for label, settings in variants.items():
        for setting in settings_list:
            lat, recall, rows, paths = [], [], [], set()
            series = await nyla_series(db, queries, setting, settings, known)
            for q, (elapsed, result) in enumerate(series):
                lat.append(elapsed)
                got = {ids[h.chunk_id] for h in result.hits}
                want = exact[setting][q]
                recall.append(len(got & set(want)) / len(want) if want else 1.0)
                rows.append(len(result.hits))
                paths.add(result.path)
            lat.sort()
            table.append(
                (
                    label,
                    "/".join(sorted(paths)),
                    setting,
                    statistics.median(lat),
                    lat[int(0.95 * (len(lat) - 1))],
                    statistics.mean(rows),
                    statistics.mean(recall),
                )
            )
            log(f"  {label} {setting}: p50 {table[-1][3]:.1f} ms recall {table[-1][6]:.3f}")
    await db.dispose()
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--large", action="store_true", help="1M low-rank synthetic rows")
    parser.add_argument("--n", type=int, default=None)
    parser.add_argument("--synthetic", action="store_true", help="synthetic vectors at --n")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--chunks-per-file", type=int, default=100)
    parser.add_argument("--ef", default="", help="fixed hnsw.ef_search values (HNSW path)")
    parser.add_argument("--adaptive", action="store_true", help="search()'s own choice")
    parser.add_argument("--exact", action="store_true", help="the exact path (filtered)")
    parser.add_argument("--filters", default=",".join(SETTINGS), help="unfiltered,1%%,10%%")
    parser.add_argument("--drop", action="store_true", help="drop the kept database and stop")
    args = parser.parse_args()
    n = args.n or (1_000_000 if args.large else 100_000)
    name = f"sweep_{n}" + ("s" if args.large or args.synthetic else "")
    _server, base = start_server()
    if args.drop:
        drop_database(base, name)
        return
    from nyla.knowledge.settings import KnowledgeSettings

    docs_path, queries_path, texts = vectors(
        n, args.queries, synthetic=args.large or args.synthetic
    )
    queries = read_f32(queries_path, args.queries)
    uri = db_uri(base, name)
    if not database_ready(base, name, n):
        log(f"building {name} (kept for later sweeps) …")
        docs = read_f32(docs_path, n)
        if texts is None:
            texts = [f"synthetic row {i}" for i in range(n)]
        asyncio.run(build(fresh_database(base, name), docs, texts, args.chunks_per_file))
        del docs
    ids = chunk_rows(uri, n, args.chunks_per_file)
    exact = truth(uri, queries, ids, n)
    default = KnowledgeSettings()
    hnsw = default.model_copy(update={"exact_threshold": 0, "exact_cost_factor": 0})
    variants: dict[str, Any] = {}
    if args.adaptive:
        variants["auto"] = default
    if args.exact:
        variants["exact"] = default.model_copy(update={"exact_threshold": 10**9})
    for ef in (int(x) for x in args.ef.split(",") if x.strip()):
        variants[f"hnsw ef {ef}"] = hnsw.model_copy(
            update={"ef_search": ef, "adaptive_ef_search": False}
        )
    filters = tuple(s for s in args.filters.split(",") if s in SETTINGS)
    table = asyncio.run(sweep(uri, queries, ids, exact, variants, filters))
    print(f"\n{n:,} rows, {len(queries)} queries, k={K}\n")
    print("| variant | path | filter | p50 ms | p95 ms | rows | recall@10 |")
    print("|---|---|---|---:|---:|---:|---:|")
    for label, path, setting, p50, p95, rows, recall in table:
        print(
            f"| {label} | {path} | {setting} | {p50:.1f} | {p95:.1f} | {rows:.1f} | {recall:.3f} |"
        )


if __name__ == "__main__":
    main()
