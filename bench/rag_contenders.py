"""The third-party contenders of bench/rag.py, each run in its own venv (their pins conflict):

    bench/.venvs/langchain/bin/python bench/rag_contenders.py langchain --phase ingest \
        --uri ... --out record.json
    bench/.venvs/llamaindex/bin/python bench/rag_contenders.py llamaindex --phase query \
        --uri ... --out sweep.json

``--phase ingest`` loads a fresh database and settles it, ``query`` sweeps a database loaded
before (bench/rag.py's ``--keep``/``--reuse`` run them apart), ``all`` does both.

Each ingests the same precomputed vectors through the library's own write API (batches of
1000) with an HNSW index (m=16, ef_construction=64; cosine) in place when it returns:
llama-index creates it itself (``hnsw_kwargs``, before the load); langchain-postgres'
``PGVector`` has no index API, so it is built with SQL after the load, as its users do.
Queries go through the library's own query API with its metadata filter for the owner
groups, once per ``hnsw.ef_search`` of the sweep, set the library's way (llama-index: the
``hnsw_ef_search`` query argument; langchain: its engine's connect event). Between the timed
ingest and the first query, bench/rag.py's settle step (rag_settle.py). Prints nothing but
progress; writes JSON.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
from rag import load  # stdlib-only at import time
from rag_settle import settle

DIMS = 384
USERS = 100
K = 10
BATCH = 1000
SETTINGS = ("unfiltered", "1%", "10%")


def owner(i: int) -> str:
    return f"u{i % USERS}"


def filter_users(q: int, setting: str) -> list[str] | None:
    if setting == "unfiltered":
        return None
    return [f"u{j}" for j in range(1 if setting == "1%" else 10)]


def sa_uri(uri: str, driver: str) -> str:
    return uri.replace("postgresql://", f"postgresql+{driver}://", 1).replace(
        f"postgresql+{driver}://postgres:@", f"postgresql+{driver}://postgres@"
    )


def timed(fn: Any, queries: np.ndarray, settings: list[str]) -> dict[str, list]:
    """(ms, ids) per query and filter, after one untimed pass (as bench/rag.py times)."""
    out: dict[str, list] = {}
    for setting in settings:
        for q, vec in enumerate(queries):
            fn(q, vec, setting)
        runs = []
        for q, vec in enumerate(queries):
            started = time.perf_counter()
            ids = fn(q, vec, setting)
            runs.append(((time.perf_counter() - started) * 1000, [int(i) for i in ids]))
        out[setting] = runs
    return out


def hnsw(uri: str, table: str, driver: str) -> tuple[float, int]:
    """Build the HNSW index on the library's table after the load; (seconds, bytes)."""
    import sqlalchemy as sa

    engine = sa.create_engine(sa_uri(uri, driver))
    started = time.perf_counter()
    with engine.begin() as conn:
        conn.execute(
            sa.text(
                f"CREATE INDEX bench_hnsw ON {table} USING hnsw (embedding "
                "vector_cosine_ops) WITH (m = 16, ef_construction = 64)"
            )
        )
    took = time.perf_counter() - started
    with engine.begin() as conn:
        conn.execute(sa.text(f"ANALYZE {table}"))
        size = conn.execute(sa.text("SELECT pg_relation_size('bench_hnsw')")).scalar_one()
    engine.dispose()
    return took, int(size)


class Langchain:
    """langchain-postgres' ``PGVector``: ``add_embeddings`` in batches, the HNSW index built
    with SQL after the load (the library has no index API), ``hnsw.ef_search`` set in its
    engine's connect event."""

    name = "langchain-postgres"

    def __init__(self, args: argparse.Namespace, fresh: bool) -> None:
        import sqlalchemy as sa
        from langchain_core.embeddings import Embeddings
        from langchain_postgres import PGVector

        class Precomputed(Embeddings):
            def embed_documents(self, texts: list[str]) -> list[list[float]]:
                raise NotImplementedError("vectors are precomputed")

            def embed_query(self, text: str) -> list[float]:
                raise NotImplementedError("vectors are precomputed")

        self.uri = args.uri
        self.ef = 40
        self.engine = sa.create_engine(sa_uri(args.uri, "psycopg"))

        @sa.event.listens_for(self.engine, "connect")
        def _ef_search(dbapi_connection: Any, _record: Any) -> None:
            with dbapi_connection.cursor() as cur:
                cur.execute(f"SET hnsw.ef_search = {int(self.ef)}")
            # the SET ran in the driver's implicit transaction: without a commit the pool's
            # first rollback undid it, and every query ran at the default ef_search of 40
            # (until 2026-12-01 19:25: langchain's recall was the same at every ef)
            dbapi_connection.commit()

        self.store = PGVector(
            embeddings=Precomputed(),
            collection_name="bench",
            connection=self.engine,
            embedding_length=DIMS,
            use_jsonb=True,
            pre_delete_collection=fresh,
        )

    def ingest(self, docs: np.ndarray, texts: list[str]) -> dict:
        started = time.perf_counter()
        for start in range(0, len(docs), BATCH):
            stop = min(start + BATCH, len(docs))
            self.store.add_embeddings(
                texts=texts[start:stop],
                embeddings=docs[start:stop].tolist(),
                metadatas=[{"owner": owner(i)} for i in range(start, stop)],
                ids=[str(i) for i in range(start, stop)],
            )
        added = time.perf_counter() - started
        build, size = hnsw(self.uri, "langchain_pg_embedding", "psycopg")
        return {
            "steps": {"add_embeddings": added, "HNSW build (SQL)": build},
            "ingest_s": added + build,
            "index_bytes": size,
        }

    def query(self, q: int, vec: np.ndarray, setting: str) -> list[int]:
        users = filter_users(q, setting)
        flt = None if users is None else {"owner": {"$in": users}}
        hits = self.store.similarity_search_with_score_by_vector(vec.tolist(), k=K, filter=flt)
        return [int(doc.id) for doc, _ in hits]

    def set_ef(self, value: int) -> None:
        self.ef = value
        self.engine.dispose()  # new connections run the connect event with this ef_search

    path = "PGVector.similarity_search_with_score_by_vector, JSONB filter"


class Llamaindex:
    """llama-index's ``PGVectorStore``: the HNSW index created by the store itself
    (``hnsw_kwargs``, before the load) and maintained by ``add``; ``hnsw_ef_search`` passed
    as the query argument."""

    name = "llama-index-vector-stores-postgres"
    path = "PGVectorStore.query (hnsw_ef_search=), JSONB filter"

    def __init__(self, args: argparse.Namespace, fresh: bool) -> None:
        from llama_index.vector_stores.postgres import PGVectorStore

        # the table is made by the first add (fresh database) or found (a kept one)
        self.ef = 40
        self.started = time.perf_counter()
        self.store = PGVectorStore.from_params(
            connection_string=sa_uri(args.uri, "psycopg2"),
            async_connection_string=sa_uri(args.uri, "asyncpg"),
            table_name="bench",
            embed_dim=DIMS,
            hnsw_kwargs={
                "hnsw_m": 16,
                "hnsw_ef_construction": 64,
                "hnsw_ef_search": 40,
                "hnsw_dist_method": "vector_cosine_ops",
            },
        )

    def ingest(self, docs: np.ndarray, texts: list[str]) -> dict:
        from llama_index.core.schema import TextNode

        for start in range(0, len(docs), BATCH):
            stop = min(start + BATCH, len(docs))
            self.store.add(
                [
                    TextNode(
                        id_=str(i),
                        text=texts[i],
                        embedding=docs[i].tolist(),
                        metadata={"owner": owner(i)},
                    )
                    for i in range(start, stop)
                ]
            )
        took = time.perf_counter() - self.started
        return {"steps": {"add (HNSW index maintained)": took}, "ingest_s": took}

    def query(self, q: int, vec: np.ndarray, setting: str) -> list[int]:
        from llama_index.core.vector_stores.types import (
            FilterOperator,
            MetadataFilter,
            MetadataFilters,
            VectorStoreQuery,
        )

        users = filter_users(q, setting)
        filters = None
        if users is not None:
            filters = MetadataFilters(
                filters=[MetadataFilter(key="owner", value=users, operator=FilterOperator.IN)]
            )
        result = self.store.query(
            VectorStoreQuery(query_embedding=vec.tolist(), similarity_top_k=K, filters=filters),
            hnsw_ef_search=self.ef,
        )
        return [int(i) for i in result.ids]

    def set_ef(self, value: int) -> None:
        self.ef = value


CONTENDERS = {"langchain": Langchain, "llamaindex": Llamaindex}


def ingest(args: argparse.Namespace, docs: np.ndarray, texts: list[str]) -> dict:
    """The timed ingest until searchable, then the settle step; the record of both."""
    contender = CONTENDERS[args.contender](args, fresh=True)
    record = contender.ingest(docs, texts)
    loaded = load()
    return {
        "name": contender.name,
        "path": contender.path,
        **record,
        "settle_s": settle(args.uri),
        "load_ingest": loaded,
    }


def sweep(args: argparse.Namespace, queries: np.ndarray) -> dict:
    """The ef_search sweep over the ingested rows, through the library's query API."""
    contender = CONTENDERS[args.contender](args, fresh=False)
    out = {}
    for value in args.efs:
        contender.set_ef(value)
        out[value] = timed(contender.query, queries, args.settings)
    return {"name": contender.name, "path": contender.path, "sweep": out}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("contender", choices=sorted(CONTENDERS))
    parser.add_argument(
        "--phase",
        choices=["ingest", "query", "all"],
        default="all",
        help="ingest into a fresh database, query a database ingested before, or both",
    )
    parser.add_argument("--uri", required=True)
    parser.add_argument("--docs", type=Path, required=True)
    parser.add_argument("--queries", type=Path, required=True)
    parser.add_argument("--corpus", type=Path, default=None)
    parser.add_argument("--n", type=int, required=True)
    parser.add_argument("--q", type=int, required=True)
    parser.add_argument("--efs", default="40", help="hnsw.ef_search values to sweep")
    parser.add_argument("--settings", default=",".join(SETTINGS), help="filters to query")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    args.efs = [int(x) for x in args.efs.split(",") if x.strip()]
    args.settings = [s for s in SETTINGS if s in args.settings.split(",")]
    result: dict[str, Any] = {}
    if args.phase in ("ingest", "all"):
        docs = np.fromfile(args.docs, dtype="<f4", count=args.n * DIMS).reshape(args.n, DIMS)
        if args.corpus is not None:
            lines = args.corpus.read_text(encoding="utf-8").splitlines()
            rows = [json.loads(line) for line in lines]
            texts = [r["text"].replace("\x00", "") for r in rows if r["kind"] == "doc"][: args.n]
        else:
            texts = [f"synthetic row {i}" for i in range(args.n)]
        result.update(ingest(args, docs, texts))
        del docs
    if args.phase in ("query", "all"):
        queries = np.fromfile(args.queries, dtype="<f4", count=args.q * DIMS)
        result.update(sweep(args, queries.reshape(args.q, DIMS)))
    args.out.write_text(json.dumps(result))


if __name__ == "__main__":
    main()
