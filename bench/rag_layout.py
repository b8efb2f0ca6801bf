"""What a chunk table's layout costs a binary COPY: the measurements behind the layout of
``knowledge_chunk`` (see ``nyla/tables/knowledge.py``).

    .venv/bin/python bench/rag_layout.py            # 100k real MiniLM rows, 3 rounds

Each variant is a table on the bench's embedded PostgreSQL (``bench/rag.py`` settings); the
same rows (the 100k corpus vectors and texts of ``bench/rag.py``) are copied into each with
one binary COPY, the variants taking turns for ``--rounds`` rounds; the median rows/s is
printed next to the plain four-column table's.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import rag  # the bench's data and server

NYLA_COLUMNS = [
    ("id", "bigint PRIMARY KEY", "int8"),
    ("data", "text NOT NULL", "text"),
    ("context_ref", "text NOT NULL", "text"),
    ("content_type", "text NOT NULL", "text"),
    ("token_count", "int4 NOT NULL", "int4"),
    ("content_hash", "bytea NOT NULL", "bytea"),
    ("owner_key", "text NOT NULL", "text"),
    ("embedding_model", "text NOT NULL", "text"),
    ("embedding", "vector NOT NULL", "bytea"),
]
WHOLE_ROWS = (
    "ALTER TABLE t ALTER COLUMN embedding SET STORAGE MAIN, SET (toast_tuple_target = 8160)"
)


def variants() -> dict[str, list[str]]:
    """Variant name -> DDL (after ``CREATE TABLE t``)."""
    columns = ", ".join(f"{name} {kind}" for name, kind, _ in NYLA_COLUMNS)
    nyla = [f"CREATE TABLE t ({columns})", WHOLE_ROWS]
    return {
        "plain (id, owner, data, vector(384))": [],
        "nyla's chunk table": nyla,
        "  with default vector storage (EXTERNAL)": [f"CREATE TABLE t ({columns})"],
        "  with STORAGE MAIN, default toast_tuple_target": [
            f"CREATE TABLE t ({columns})",
            "ALTER TABLE t ALTER COLUMN embedding SET STORAGE MAIN",
        ],
        "  + btree (owner_key, content_hash)": [
            *nyla,
            "CREATE INDEX ON t (owner_key, content_hash)",
        ],
        "  + stored tsvector": [
            *nyla,
            "ALTER TABLE t ADD COLUMN tsv tsvector "
            "GENERATED ALWAYS AS (to_tsvector('simple', data)) STORED",
        ],
        "  + stored tsvector + GIN": [
            *nyla,
            "ALTER TABLE t ADD COLUMN tsv tsvector "
            "GENERATED ALWAYS AS (to_tsvector('simple', data)) STORED",
            "CREATE INDEX ON t USING gin (tsv)",
        ],
    }


def copy_rows(
    conn: Any, plain: bool, docs: list[Any], texts: list[str], blobs: list[bytes]
) -> float:
    started = time.perf_counter()
    with conn.cursor() as cur:
        if plain:
            with cur.copy("COPY t (id, owner, data, embedding) FROM STDIN (FORMAT BINARY)") as cp:
                cp.set_types(["int8", "text", "text", "bytea"])
                for i in range(len(docs)):
                    cp.write_row((i, rag.owner(i), texts[i], blobs[i]))
        else:
            names = ", ".join(name for name, _, _ in NYLA_COLUMNS)
            with cur.copy(f"COPY t ({names}) FROM STDIN (FORMAT BINARY)") as cp:
                cp.set_types([kind for _, _, kind in NYLA_COLUMNS])
                for i in range(len(docs)):
                    cp.write_row(
                        (
                            ((i // 100 + 1) << 20) | (i % 100),
                            texts[i],
                            "",
                            "text",
                            0,
                            i.to_bytes(16, "big"),
                            f"personal:{rag.owner(i)}",
                            rag.MODEL,
                            blobs[i],
                        )
                    )
    conn.commit()
    return time.perf_counter() - started


def main() -> None:
    import psycopg

    from nyla.knowledge.vectors import vector_binary

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    docs_path, _, texts = rag.vectors(args.n, 200, False)
    docs = rag.read_f32(docs_path, args.n)
    blobs = [vector_binary(v) for v in docs]  # the same bytes for every variant
    _server, base = rag.start_server()
    uri = rag.fresh_database(base, "bench_layout")
    times: dict[str, list[float]] = {name: [] for name in variants()}
    try:
        for _ in range(args.rounds):
            for name, ddl in variants().items():
                with psycopg.connect(uri) as conn:
                    conn.execute("DROP TABLE IF EXISTS t")
                    if not ddl:
                        conn.execute(
                            "CREATE TABLE t (id bigint PRIMARY KEY, owner text, data text, "
                            "embedding vector(384))"
                        )
                    for statement in ddl:
                        conn.execute(statement)
                    conn.commit()
                    conn.execute("CHECKPOINT")
                    times[name].append(copy_rows(conn, not ddl, docs, texts, blobs))
    finally:
        rag.drop_database(base, "bench_layout")
    plain = statistics.median(next(iter(times.values())))
    print(f"# COPY of {args.n:,} rows into each layout (median of {args.rounds} rounds)\n")
    print("| layout | rows/s | vs plain |")
    print("|---|---:|---:|")
    for name, runs in times.items():
        median = statistics.median(runs)
        print(f"| {name} | {args.n / median:,.0f} | {plain / median:.2f} |")


if __name__ == "__main__":
    main()
