"""nyla's unfiltered vector search next to raw pgvector's, interleaved query by query.

    .venv/bin/python bench/rag_profile.py --n 10000 [--synthetic [--clustered]] [--keep] [--profile]
    .venv/bin/python bench/rag_profile.py --n 1000000 --synthetic --clustered --kept --block

Builds (or reuses with ``--keep``) one database on the bench server holding nyla's store
(``index_paths`` with the precomputed vectors, as bench/rag.py ingests) and bench/rag.py's
raw pgvector table (``items``: vector(384), HNSW m=16/ef_construction=64, cosine), then
times the same queries alternately: raw pgvector exactly as bench/rag.py queries it (one
synchronous psycopg call, ``hnsw.ef_search`` and ``iterative_scan`` set on the session;
its fair query returning id, text and distance, then its ids-only one), and
``KnowledgeService.search_vector``, all at ``--ef``. ``--kept`` measures on the two
databases ``bench/rag.py --keep`` left instead (raw pgvector's and nyla's, built once: the
way to repeat the 1M measurements). On a machine shared with other
jobs this is the steadier ratio: both sides see the same load at the same moment, which
bench/rag.py's one-contender-after-the-other phases cannot promise. ``--profile`` adds a
cProfile of nyla's side.

``--block`` alternates whole passes over the queries (raw, nyla, raw, ...) instead of single
queries. Alternating single queries switches between two server backends and two indexes
every query, which slows both sides (measured at 10k: raw pgvector's p50 1.2 ms in
passes of its own, 2.2 ms alternating query by query), so its ratio says little about
either side's steady state; passes keep each side's caches warm and still share the load
of the moment. It also prints each side's client CPU per query.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import pstats
import statistics
import time
from typing import Any

from rag import USERS, db_uri, fresh_database, read_f32, start_server, vectors
from rag_settle import settle

from nyla.models.knowledge import SearchQuery

K = 10


async def build(uri: str, texts: list[str], docs: list[Any]) -> None:
    import psycopg
    import rag_nyla

    from nyla.knowledge.vectors import vector_binary

    kernel = kernel_for(uri)
    try:
        out = await rag_nyla.ingest(kernel, texts, docs, USERS)
        print(f"nyla ingest until searchable: {out['ingest_s']:.1f} s")
    finally:
        await kernel.aclose()
    with psycopg.connect(uri) as conn:
        conn.execute(
            "CREATE TABLE items (id bigint PRIMARY KEY, owner text, data text, "
            "embedding vector(384))"
        )
        with (
            conn.cursor() as cur,
            cur.copy("COPY items (id, owner, data, embedding) FROM STDIN (FORMAT BINARY)") as cp,
        ):
            cp.set_types(["int8", "text", "text", "bytea"])
            for i, vec in enumerate(docs):
                cp.write_row((i, f"u{i % USERS}", texts[i], vector_binary(vec)))
        conn.execute("CREATE INDEX items_owner ON items (owner)")
        conn.execute(
            "CREATE INDEX items_hnsw ON items USING hnsw (embedding vector_cosine_ops) "
            "WITH (m = 16, ef_construction = 64)"
        )
        conn.execute("ANALYZE items")
        conn.commit()
    settle(uri)  # bench/rag.py's settle step, before any query


def kernel_for(uri: str) -> Any:
    from nyla.db import Database, to_sqlalchemy_url
    from nyla.kernel import Kernel
    from nyla.plugins import PluginHost

    return Kernel(
        plugins=PluginHost.from_plugins([], builtins=False), db=Database(to_sqlalchemy_url(uri))
    )


async def measure(
    uri: str,
    queries: list[Any],
    ef: int,
    rounds: int,
    profile: bool,
    block: bool,
    nyla_uri: str | None = None,
    raw_ef: int | None = None,
) -> None:
    import psycopg
    import rag_nyla
    from pgvector.psycopg import register_vector

    from nyla.models.agent import RunContext

    kernel = kernel_for(nyla_uri or uri)
    kernel.knowledge.settings.ef_search = ef
    kernel.knowledge.settings.adaptive_ef_search = False
    context = RunContext(user_id="reader", mandate_id="m", feature_instance_id="inst")
    raw = psycopg.connect(uri, autocommit=True)
    register_vector(raw)
    # each side at its own ef_search when given (the smallest reaching the recall target)
    raw.execute(f"SET hnsw.ef_search = {raw_ef or ef}")
    raw.execute("SET hnsw.iterative_scan = relaxed_order")
    # bench/rag.py's raw queries, unfiltered: id, text and distance; and ids only
    from rag import RAW_IDS_SQL, RAW_SQL, raw_params

    async def nyla_one(vec: Any) -> None:
        await kernel.knowledge.search(
            SearchQuery(
                text="",
                vector=vec.tolist(),
                model=rag_nyla.MODEL,
                context=context,
                k=K,
                hybrid=False,
            )
        )

    async def raw_one(vec: Any) -> None:
        raw.execute(RAW_SQL, raw_params(None, vec, ids_only=False)).fetchall()

    async def raw_ids_one(vec: Any) -> None:
        raw.execute(RAW_IDS_SQL, raw_params(None, vec, ids_only=True)).fetchall()

    for vec in queries:  # warm-up
        await nyla_one(vec)
        await raw_one(vec)
        await raw_ids_one(vec)
    prof = cProfile.Profile() if profile else None
    sides = (("raw", raw_one), ("raw_ids", raw_ids_one), ("nyla", nyla_one))
    timings: dict[str, list[float]] = {name: [] for name, _ in sides}
    blocks: dict[str, list[float]] = {name: [] for name, _ in sides}
    cpu: dict[str, float] = dict.fromkeys(timings, 0.0)
    for _ in range(rounds):
        # per query (raw, nyla, raw, ...) or per block (all queries raw, then all nyla)
        order = (
            [(name, fn, queries) for name, fn in sides]
            if block
            else [(name, fn, [vec]) for vec in queries for name, fn in sides]
        )
        for name, fn, vecs in order:
            if prof and name == "nyla":
                prof.enable()
            took = []
            cpu_started = time.process_time()
            for vec in vecs:
                started = time.perf_counter()
                await fn(vec)
                took.append((time.perf_counter() - started) * 1000)
            cpu[name] += time.process_time() - cpu_started
            if prof and name == "nyla":
                prof.disable()
            timings[name] += took
            if block:
                blocks[name].append(statistics.median(took))
    for name, t in timings.items():
        print(
            f"{name:7} p50 {statistics.median(t):.2f} ms  mean {statistics.mean(t):.2f}  "
            f"client CPU {cpu[name] * 1000 / len(t):.3f} ms/query"
        )
    nyla_p50 = statistics.median(timings["nyla"])
    print(
        f"ratio {nyla_p50 / statistics.median(timings['raw']):.2f} "
        f"(to ids only {nyla_p50 / statistics.median(timings['raw_ids']):.2f})"
    )
    if block:
        ratios = [n / r for r, n in zip(blocks["raw"], blocks["nyla"], strict=True)]
        print("block ratios " + " ".join(f"{x:.2f}" for x in ratios))
    print(f"load {os.getloadavg()[0]:.1f}/{os.getloadavg()[1]:.1f} on {os.cpu_count()} cores")
    raw.close()
    await kernel.aclose()
    if prof:
        pstats.Stats(prof).sort_stats("cumulative").print_stats(40)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--synthetic", action="store_true")
    parser.add_argument("--clustered", action="store_true", help="with --synthetic")
    parser.add_argument("--keep", action="store_true", help="reuse the database")
    parser.add_argument(
        "--kept",
        action="store_true",
        help="query the databases bench/rag.py --keep left (raw pgvector's and nyla's)",
    )
    parser.add_argument("--ef", type=int, default=40)
    parser.add_argument("--raw-ef", type=int, default=None, help="raw pgvector's (default --ef)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument(
        "--block", action="store_true", help="alternate whole passes, not single queries"
    )
    args = parser.parse_args()
    docs_path, queries_path, texts = vectors(args.n, 200, args.synthetic, args.clustered)
    queries = read_f32(queries_path, 100)
    _server, base = start_server()
    if args.kept:
        kind = ("clustered" if args.clustered else "synthetic") if args.synthetic else "minilm"
        asyncio.run(
            measure(
                db_uri(base, f"kept_raw_{args.n}_{kind}"),
                queries,
                args.ef,
                args.rounds,
                args.profile,
                args.block,
                nyla_uri=db_uri(base, f"kept_nyla_{args.n}_{kind}"),
                raw_ef=args.raw_ef,
            )
        )
        return
    kind = ("c" if args.clustered else "s") if args.synthetic else "r"
    name = f"ab_{args.n}_{kind}"
    if not args.keep:
        docs = read_f32(docs_path, args.n)
        texts = (texts or [f"synthetic row {i}" for i in range(args.n)])[: args.n]
        uri = fresh_database(base, name)
        asyncio.run(build(uri, texts, docs))
    uri = db_uri(base, name)
    asyncio.run(
        measure(uri, queries, args.ef, args.rounds, args.profile, args.block, raw_ef=args.raw_ef)
    )


if __name__ == "__main__":
    main()
