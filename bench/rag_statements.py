"""Server execution time of the unfiltered ranking statements, nyla's and raw pgvector's, on
the databases ``bench/rag.py --keep`` left:

    .venv/bin/python bench/rag_statements.py --n 100000 --ef 20 --rounds 3

``EXPLAIN (ANALYZE, TIMING OFF)`` of each prepared statement (generic plan, as the search
path runs it), rotated query by query so that each statement follows every other equally
often (the first statement after a switch of backend pays for the other's caches). It
measures what the server does, without the client, the wire or the rows' output: nyla's
ranking as it was before the second session of 2026-12-01 (a MATERIALIZED CTE carrying the
embedding model) and as it is now (a LIMIT subquery), raw pgvector's fair statement and its
ids-only one.
"""

from __future__ import annotations

import argparse
import os
import statistics

import psycopg
from rag import CACHE, db_uri, read_f32, start_server

from nyla.knowledge.search import _scope_where
from nyla.knowledge.search_sql import ranking_sql as _ranking_sql
from nyla.knowledge.vectors import vector_literal

MODEL = "bench:all-minilm-l6-v2"
KEYS = "{featureInstance:inst,personal:reader,mandate:m,global}"


def statements() -> dict[str, tuple[str, bool]]:
    """name -> (SQL with $1 the query vector and $2 the keys, runs on nyla's database)."""
    file_where, where = _scope_where(MODEL)
    now = _ranking_sql(file_where, where, 384, 10, False)
    inner = now[now.index("FROM (") + 6 : now.index(") n JOIN")]
    before_inner = inner.replace(
        "c.owner_key, (c.embedding", "c.owner_key, c.embedding_model, (c.embedding"
    )
    before = (
        f"WITH nearest AS MATERIALIZED ({before_inner}) SELECT n.id, f.file_id, f.name, "
        "(n.id & 1048575)::int, n.data, n.context_ref, n.content_type, "
        "split_part(n.owner_key, ':', 1), n.embedding_model, n.distance FROM nearest n "
        "JOIN knowledge_file_index f ON f.file_no = (n.id >> 20) ORDER BY n.distance"
    )

    def pg(sql: str) -> str:
        return sql.replace(":q", "$1").replace(":keys", "$2")

    return {
        "nyla before (CTE, model column)": (pg(before), True),
        "nyla now (LIMIT subquery)": (pg(now), True),
        "raw pgvector (id, text, distance)": (
            "SELECT id, data, embedding <=> $1::vector AS distance FROM items "
            "ORDER BY embedding <=> $1::vector LIMIT 10",
            False,
        ),
        "raw pgvector, ids only": (
            "SELECT id FROM items ORDER BY embedding <=> $1::vector LIMIT 10",
            False,
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--ef", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    _server, base = start_server()
    conns = {
        nyla: psycopg.connect(
            db_uri(base, f"kept_{'nyla' if nyla else 'raw'}_{args.n}_clustered"),
            autocommit=True,
        )
        for nyla in (True, False)
    }
    for conn in conns.values():
        conn.execute(f"SET hnsw.ef_search = {args.ef}")
        conn.execute("SET hnsw.iterative_scan = relaxed_order")
        conn.execute("SET plan_cache_mode = force_generic_plan")
    items = list(enumerate(statements().items()))
    for i, (_, (sql, nyla)) in items:
        conns[nyla].execute(f"PREPARE v{i} AS {sql}")
    queries = [
        vector_literal(v) for v in read_f32(CACHE / "clustered-100000-q200.queries.f32", 100)
    ]

    def run(i: int, nyla: bool, q: str) -> float:
        args_sql = f"'{q}', '{KEYS}'" if nyla else f"'{q}'"
        out = conns[nyla].execute(
            f"EXPLAIN (ANALYZE, TIMING OFF, COSTS OFF, SUMMARY ON) EXECUTE v{i}({args_sql})"
        )
        line = next(r[0] for r in out if r[0].startswith("Execution Time"))
        return float(line.split()[2])

    times: dict[str, list[float]] = {name: [] for _, (name, _) in items}
    for rnd in range(args.rounds):
        for j, q in enumerate(queries):
            rot = (j + rnd) % len(items)
            for i, (name, (_, nyla)) in items[rot:] + items[:rot]:
                run(i, nyla, q)  # untimed: the same query once before
                times[name].append(run(i, nyla, q))
    for name, t in times.items():
        print(f"{name:36} server p50 {statistics.median(t) * 1000:.0f} µs")
    one, five, _ = os.getloadavg()
    print(f"load {one:.1f}/{five:.1f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
