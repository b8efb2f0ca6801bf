"""nyla's added cost per search over raw pgvector on the same index and the same client
(issue 32 goal 2).

    env -u NYLA_LOCAL_EMBEDDINGS .venv/bin/python bench/retrieval_latency.py --n 10000
    env -u NYLA_LOCAL_EMBEDDINGS .venv/bin/python bench/retrieval_latency.py --n 100000 --rounds 3

One database per size on the bench's embedded PostgreSQL (bench/.cache/pgdata, as
bench/rag.py). nyla indexes ``--n`` one-passage files through its public API
(``indexing.index_paths`` with precomputed vectors, see rag_nyla.py: owner group 0 is the
reader's personal files = 1 %, groups 1-9 its feature instance = 9 %, the rest the mandate).
The vectors are synthetic and clustered (384 dimensions, made here with numpy).

Like for like:
- **Same index.** Unfiltered, raw pgvector's statement runs on nyla's own chunk table and
  its HNSW index (half precision, m=16, ef_construction=64): the same graph, so both see the
  same candidates at every ``ef_search``; raw returns what a RAG user's query returns (id,
  text, distance), nyla its hits (that plus the file's id, name and provenance).
- **Held file details.** nyla ranks the chunk table alone and takes its hits' file details
  from what the process holds (kept fresh by LISTEN/NOTIFY: nyla/knowledge/file_rows.py).
  The timed rounds follow a warm-up pass of the same queries, so they find them held; one
  row times every search with nothing held (after a few such searches nyla joins the files
  in the ranking statement instead of reading them in a second one).
- **Same client.** Both run on a psycopg ``AsyncConnection`` in this process, statements
  prepared, the query vector in binary (each made inside the timed call from the list of
  floats an embedding API returns). raw uses one cursor, as pgvector's documentation
  shows; nyla's read pool sends a search it has planned before as a prepared statement by
  name with its parameters dumped and its rows asked for in binary
  (``nyla.read_pool.ReadConnection.run``), which costs less Python than a cursor's
  ``execute``. One row gives raw that same path too, so that nyla's own Python around
  the statement shows apart from the driver path.
- **Same server state.** raw's connection runs the statement nyla's read pool runs on each
  new connection (``nyla.read_pool.KEEP_FREED_MEMORY``), so that neither backend's allocator
  returns an HNSW scan's memory to the system and faults it in again every search (which
  costs 0.2-0.4 ms at 100k rows, ef 250-400: whichever backend's history had not raised
  glibc's threshold paid it).
- **Side by side.** Every query is run by both, in alternating order, round after round;
  wall time and this process's CPU time (``time.process_time``) are taken per query, the
  server's CPU per block from each side's backends (``/proc/PID/schedstat``), and the
  load before and after each block is printed.

Scoped searches (1 % and 10 % of the rows readable) are held against the best plan
PostgreSQL can be given for the same filter, each measured: an exact scan (a plain copy of
the rows with a btree on the owner, ranked by distance: recall 1.0) and an iterative HNSW
scan (``hnsw.iterative_scan = relaxed_order`` on nyla's index) at rising ``ef_search``.
nyla chooses its path itself from the file index's counts and the table's statistics. They
are compared at equal recall (bench/retrieval_scoped.py): at the target recall 0.95 (each
at the smallest ``ef_search`` reaching it) and at the recall nyla's defaults give.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from array import array
from pathlib import Path
from typing import Any

import numpy as np
from pgvector import HalfVector, Vector

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

DIMS = 384
K = 10
USERS = 100
TARGET = 0.95
EFS = (10, 20, 40, 64, 100, 160, 250, 400)
MODEL = "bench:all-minilm-l6-v2"
#: the server backend pids of each contender's connections (nyla: every connection of its
#: database but raw's, its read pool's and its engine's, asked again before each block)
BACKENDS: dict[str, list[int]] = {}
SCOPED = {"1%": (["personal"], ["personal:reader"]),
          "10%": (["personal", "featureInstance"], ["personal:reader", "featureInstance:inst"])}  # fmt: skip
WORDS = ["invoice", "budget", "ferry", "harbour", "payroll", "salary", "vacation", "contract",
         "audit", "meeting", "project", "ticket", "deadline", "report", "offsite", "policy"]  # fmt: skip


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def corpus(
    n: int, queries: int, seed: int = 32
) -> tuple[np.ndarray, np.ndarray, list[str], np.ndarray]:
    """Clustered unit vectors (docs, queries), a short text per doc, and as many other
    queries from the same generator (drawn last, so the others do not change): the scoped
    blocks' warm-up, so that what nyla learns from a reader's queries is learned out of
    sample."""
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((max(16, n // 200), DIMS)).astype(np.float32)
    docs = centers[rng.integers(0, len(centers), n)] + 0.6 * rng.standard_normal((n, DIMS))
    qs = centers[rng.integers(0, len(centers), queries)] + 0.6 * rng.standard_normal(
        (queries, DIMS)
    )
    warm = centers[rng.integers(0, len(centers), queries)] + 0.6 * rng.standard_normal(
        (queries, DIMS)
    )
    docs = (docs / np.linalg.norm(docs, axis=1, keepdims=True)).astype(np.float32)
    qs = (qs / np.linalg.norm(qs, axis=1, keepdims=True)).astype(np.float32)
    warm = (warm / np.linalg.norm(warm, axis=1, keepdims=True)).astype(np.float32)
    texts = [
        f"passage {i}: " + " ".join(WORDS[(i * 7 + j * 13) % len(WORDS)] for j in range(30))
        for i in range(n)
    ]
    return docs, qs, texts, warm


def truth(docs: np.ndarray, qs: np.ndarray, rows: np.ndarray | None) -> list[set[int]]:
    """Exact top-k doc numbers per query among ``rows`` (all when None)."""
    pool = docs if rows is None else docs[rows]
    out = []
    for q in qs:
        best = np.argpartition(-(pool @ q), K)[:K]
        out.append({int(i) for i in (best if rows is None else rows[best])})
    return out


def recall(found: list[list[int]], exact: list[set[int]]) -> float:
    return statistics.mean(len(exact[i] & set(f)) / K for i, f in enumerate(found))


def backend_ns(pid: int) -> int:
    """CPU nanoseconds a server backend has run (``/proc/PID/schedstat``): the server's
    side of a contender's queries, exact to the nanosecond whatever the load."""
    return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0])


class Timed:
    """Per-query wall and CPU milliseconds of one contender (``cpu``: this process; the
    server's CPU is added up per block from its backend, ``server_ms`` per query)."""

    def __init__(self, backends: list[int]) -> None:
        self.wall: list[float] = []
        self.cpu: list[float] = []
        self.backends = backends
        self.server_ns = 0

    async def run(self, fn: Any, *args: Any) -> Any:
        c, w = time.process_time(), time.perf_counter()
        out = await fn(*args)
        self.wall.append((time.perf_counter() - w) * 1000)
        self.cpu.append((time.process_time() - c) * 1000)
        return out

    def median(self) -> tuple[float, float]:
        return statistics.median(self.wall), statistics.median(self.cpu)

    def cpu_ms(self) -> tuple[float, float]:
        """(client, server) CPU ms per query, means."""
        return statistics.mean(self.cpu), self.server_ns / 1e6 / len(self.cpu)


class Raw:
    """Raw pgvector on one psycopg AsyncConnection: prepared statements, one cursor, the
    query vector in binary (pgvector-python)."""

    def __init__(self, conn: Any, ids: dict[int, int]) -> None:
        self.conn = conn
        self.cur = conn.cursor()
        self.ids = ids  # chunk id -> doc number
        self.ef: int | None = None
        self.lean_conn: Any = None
        self.lean_sql: Any = None

    async def set(self, ef: int, iterative: bool) -> None:
        mode = "relaxed_order" if iterative else "off"
        await self.cur.execute(f"SET hnsw.ef_search = {ef}")
        await self.cur.execute(f"SET hnsw.iterative_scan = {mode}")

    async def hnsw(self, q: Any, keys: list[str] | None) -> list[int]:
        from nyla.knowledge.vectors import index_expr

        expr = index_expr(DIMS, "embedding")
        where = " AND owner_key = ANY(%(k)s)" if keys else ""
        # relaxed order may return rows out of order: sorted again (pgvector's own advice)
        sql = (
            f"SELECT id, data, distance FROM (SELECT id, data, {expr} <=> %(q)s AS distance "
            f"FROM knowledge_chunk WHERE embedding_model = '{MODEL}'{where} "
            f"ORDER BY {expr} <=> %(q)s LIMIT {K}) r ORDER BY distance"
            if keys
            else f"SELECT id, data, {expr} <=> %(q)s AS distance FROM knowledge_chunk "
            f"WHERE embedding_model = '{MODEL}' ORDER BY {expr} <=> %(q)s LIMIT {K}"
        )
        # the vector from the list an embedding API returns, as nyla gets it
        await self.cur.execute(sql, {"q": HalfVector(q), "k": keys}, prepare=True)
        return [self.ids[r[0]] for r in await self.cur.fetchall()]

    async def lean(self, q: Any, keys: list[str] | None) -> list[int]:
        """:meth:`hnsw` unfiltered through nyla's driver path (a prepared statement sent
        by name, no cursor, its rows in binary: ``ReadConnection.run``)."""
        from psycopg.pq import Format

        from nyla.knowledge.vectors import index_expr
        from nyla.read_pool import ReadConnection, Statement

        if self.lean_conn is None:
            expr = index_expr(DIMS, "embedding")
            self.lean_conn = ReadConnection(self.conn)
            self.lean_sql = Statement(
                f"SELECT id, data, {expr} <=> $1 AS distance FROM knowledge_chunk "
                f"WHERE embedding_model = '{MODEL}' ORDER BY {expr} <=> $1 LIMIT {K}",
                [Format.BINARY],
                Format.BINARY,
            )
        rows = await self.lean_conn.run(self.lean_sql, [HalfVector(q).to_binary()])
        return [self.ids[r[0]] for r in rows]

    async def exact(self, q: Any, keys: list[str]) -> list[int]:
        await self.cur.execute(
            "SELECT id, data, embedding <=> %(q)s AS distance FROM raw_items "
            f"WHERE owner = ANY(%(k)s) ORDER BY distance LIMIT {K}",
            {"q": Vector(q), "k": keys},
            prepare=True,
        )
        return [self.ids[r[0]] for r in await self.cur.fetchall()]


async def build(n: int, docs: np.ndarray, texts: list[str], reuse: bool) -> tuple[Any, str]:
    """A database with the corpus indexed by nyla and the raw copy for exact scans: fresh,
    or with ``reuse`` the one a previous run of this size left (same seed, same rows)."""
    import psycopg
    import rag_nyla
    from rag import db_uri, fresh_database, start_server
    from rag_settle import settle

    from nyla.db import Database, to_sqlalchemy_url
    from nyla.kernel import Kernel
    from nyla.plugins import PluginHost

    (HERE / ".cache").mkdir(exist_ok=True)
    _, base = start_server()
    name = f"nyla_latency_{n}"
    with psycopg.connect(base, autocommit=True) as conn:
        kept = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
    if kept:
        # complete only once the raw copy's btree, the build's last step, exists (a build
        # stopped halfway, e.g. the hours a 1M build takes, is built again)
        with psycopg.connect(db_uri(base, name), autocommit=True) as conn:
            kept = conn.execute("SELECT to_regclass('raw_items_owner')").fetchone()[0]
    uri = db_uri(base, name) if reuse and kept else fresh_database(base, name)
    kernel = Kernel(
        plugins=PluginHost.from_plugins([], builtins=False), db=Database(to_sqlalchemy_url(uri))
    )
    if reuse and kept:
        print(f"# reusing the database of an earlier run ({name})")
        return kernel, uri
    vecs = [array("f", v.tobytes()) for v in docs]
    started = time.perf_counter()
    await rag_nyla.ingest(kernel, texts, vecs, USERS)
    print(f"# {n} passages indexed through nyla in {time.perf_counter() - started:.0f} s")
    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE raw_items AS SELECT id, owner_key AS owner, data, "
            f"embedding::vector({DIMS}) AS embedding FROM knowledge_chunk"
        )
        conn.execute("CREATE INDEX raw_items_owner ON raw_items (owner)")
    settle(uri)
    return kernel, uri


async def doc_numbers(conn: Any) -> dict[int, int]:
    cur = await conn.execute(
        "SELECT c.id, f.name FROM knowledge_chunk c "
        "JOIN knowledge_file_index f ON f.file_no = c.id >> 20"
    )
    return {cid: int(name[4:-4]) for cid, name in await cur.fetchall()}


def owner_rows(n: int, scopes: list[str]) -> np.ndarray:
    import rag_nyla

    return np.array([i for i in range(n) if rag_nyla.scope_of(i, USERS) in scopes])


async def main(n: int, queries: int, rounds: int, efs: tuple[int, ...], reuse: bool) -> None:
    import psycopg
    from pgvector.psycopg import register_vector_async

    from nyla.models.agent import RunContext
    from nyla.models.knowledge import SearchQuery

    docs, qs, texts, warm = corpus(n, queries)
    kernel, uri = await build(n, docs, texts, reuse)
    from nyla.read_pool import KEEP_FREED_MEMORY

    conn = await psycopg.AsyncConnection.connect(uri, autocommit=True)
    await conn.execute(KEEP_FREED_MEMORY)
    await register_vector_async(conn)
    raw = Raw(conn, await doc_numbers(conn))
    knowledge = kernel.knowledge
    context = RunContext(user_id="reader", mandate_id="m", feature_instance_id="inst")
    qvecs = [q.tolist() for q in qs]  # what an embedding API returns

    paths: list[str] = []

    async def nyla(q: Any, scopes: list[str] | None) -> list[int]:
        result = await knowledge.search(
            SearchQuery(text="", vector=q, model=MODEL, context=context, scopes=scopes,
                        k=K, hybrid=False)
        )  # fmt: skip
        paths.append(result.path)
        return [int(h.file_name[4:-4]) for h in result.hits]

    await nyla(qvecs[0], None)  # opens the read pool's connection, which every search reuses

    BACKENDS["raw"] = [conn.info.backend_pid]
    NYLA_PIDS.append(conn)
    print(f"# n={n}, {queries} queries x {rounds} rounds, k={K}, load {load()}")
    exact_all = truth(docs, qs, None)
    print("\n## Unfiltered, same index: per-query medians (ms)")
    print("CPU: client (this process) + server (each side's backends), mean per query; "
          "wall: median per query")  # fmt: skip
    print("| ef_search | recall raw / nyla | raw wall | nyla wall | added wall | wall ratio "
          "| raw CPU | nyla CPU | added CPU | CPU ratio | load |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    knowledge.settings.adaptive_ef_search = False
    for ef in efs:
        knowledge.settings.ef_search = ef
        await raw.set(ef, iterative=False)
        await _pair(raw.hnsw, nyla, qvecs, None, None, 1)  # warm: prepare, read pages
        before = load()
        t_raw, t_nyla, f_raw, f_nyla = await _pair(raw.hnsw, nyla, qvecs, None, None, rounds)
        rw, nw = t_raw.median()[0], t_nyla.median()[0]
        rc, nc = _cpu(t_raw), _cpu(t_nyla)
        print(f"| {ef} | {recall(f_raw, exact_all):.3f} / {recall(f_nyla, exact_all):.3f} "
              f"| {rw:.3f} | {nw:.3f} | {nw - rw:+.3f} | {nw / rw:.2f}x | {rc} | {nc} "
              f"| {_total(t_nyla) - _total(t_raw):+.3f} | {_total(t_nyla) / _total(t_raw):.2f}x "
              f"| {before} -> {load()} |")  # fmt: skip
    await _cold(raw, nyla, knowledge, qvecs, efs[0], rounds)
    await _lean(raw, nyla, knowledge, qvecs, efs[0], rounds)
    knowledge.settings.adaptive_ef_search = True
    knowledge.settings.ef_search = 100
    from retrieval_scoped import scoped

    warm_vecs = [q.tolist() for q in warm]
    await scoped(raw, nyla, paths, knowledge, (qvecs, warm_vecs), docs, qs, n, rounds, efs)
    await conn.close()
    await kernel.aclose()


async def _cold(
    raw: Raw, nyla: Any, knowledge: Any, qvecs: list[Any], ef: int, rounds: int
) -> None:
    """The unfiltered row again with nothing held of the hits' files (what a search of
    files no search of this process has shown since their last change costs): the warm-up
    pass's first searches read their files' details in a second statement, and once most
    found nothing held nyla joins them in the ranking (``FileRows.worth_holding``), as
    every timed search does."""
    files = knowledge.indexes.files

    async def cold(q: Any, scopes: Any) -> list[int]:
        files.invalidate()
        return await nyla(q, scopes)

    knowledge.settings.ef_search = ef
    await raw.set(ef, iterative=False)
    await _pair(raw.hnsw, cold, qvecs, None, None, 1)
    before = load()
    t_raw, t_nyla, _, _ = await _pair(raw.hnsw, cold, qvecs, None, None, rounds)
    rw, nw = t_raw.median()[0], t_nyla.median()[0]
    print(f"\nFile details not held (ef {ef}): wall {rw:.3f} / {nw:.3f} ms ({nw / rw:.2f}x), "
          f"CPU {_cpu(t_raw)} / {_cpu(t_nyla)} ms ({_total(t_nyla) - _total(t_raw):+.3f} ms, "
          f"{_total(t_nyla) / _total(t_raw):.2f}x), load {before} -> {load()}")  # fmt: skip


async def _lean(
    raw: Raw, nyla: Any, knowledge: Any, qvecs: list[Any], ef: int, rounds: int
) -> None:
    """The unfiltered row again with raw on nyla's driver path (no cursor): what is left
    of the added cost is nyla's own Python around the statement and its longer rows."""
    knowledge.settings.ef_search = ef
    await raw.set(ef, iterative=False)
    await _pair(raw.lean, nyla, qvecs, None, None, 1)
    before = load()
    t_raw, t_nyla, _, _ = await _pair(raw.lean, nyla, qvecs, None, None, rounds)
    rw, nw = t_raw.median()[0], t_nyla.median()[0]
    print(f"Raw on nyla's driver path too (ef {ef}): wall {rw:.3f} / {nw:.3f} ms "
          f"({nw / rw:.2f}x), CPU {_cpu(t_raw)} / {_cpu(t_nyla)} ms "
          f"({_total(t_nyla) - _total(t_raw):+.3f} ms, {_total(t_nyla) / _total(t_raw):.2f}x), "
          f"load {before} -> {load()}")  # fmt: skip


#: raw's connection, which asks for nyla's backends (set by main)
NYLA_PIDS: list[Any] = []


async def _nyla_backends() -> None:
    """Every backend of the database but raw's: nyla's read pool (a search's and, after a
    scope's first search, the one that measured its ef_search) and its engine's."""
    cur = await NYLA_PIDS[0].execute(
        "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
        "AND backend_type = 'client backend' AND pid <> pg_backend_pid()"
    )
    BACKENDS["nyla"] = [int(r[0]) for r in await cur.fetchall()]


def _total(t: Timed) -> float:
    return sum(t.cpu_ms())


def _cpu(t: Timed) -> str:
    client, server = t.cpu_ms()
    return f"{client:.3f} + {server:.3f}"


async def _pair(
    raw_fn: Any, nyla_fn: Any, qvecs: list[Any], keys: Any, scopes: Any, rounds: int
) -> tuple[Timed, Timed, list[list[int]], list[list[int]]]:
    """Every query by both, alternating which goes first, ``rounds`` times."""
    await _nyla_backends()
    t_raw, t_nyla = Timed(BACKENDS["raw"]), Timed(BACKENDS["nyla"])
    started = {pid: backend_ns(pid) for t in (t_raw, t_nyla) for pid in t.backends}
    f_raw: list[list[int]] = []
    f_nyla: list[list[int]] = []
    for r in range(rounds):
        for i, q in enumerate(qvecs):
            if (i + r) % 2:
                a = await t_raw.run(raw_fn, q, keys)
                b = await t_nyla.run(nyla_fn, q, scopes)
            else:
                b = await t_nyla.run(nyla_fn, q, scopes)
                a = await t_raw.run(raw_fn, q, keys)
            if r == 0:
                f_raw.append(a)
                f_nyla.append(b)
    for t in (t_raw, t_nyla):
        # a backend gone meanwhile (a connection closed) counts for nothing
        alive = [pid for pid in t.backends if Path(f"/proc/{pid}").exists()]
        t.server_ns = sum(backend_ns(pid) - started[pid] for pid in alive)
    return t_raw, t_nyla, f_raw, f_nyla


if __name__ == "__main__":
    # retrieval_scoped imports this module by name: the same one, with its BACKENDS
    sys.modules.setdefault("retrieval_latency", sys.modules[__name__])
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--efs", default=",".join(map(str, EFS)))
    parser.add_argument("--reuse", action="store_true", help="query the kept database again")
    args = parser.parse_args()
    if os.environ.get("NYLA_LOCAL_EMBEDDINGS"):
        raise SystemExit("run with env -u NYLA_LOCAL_EMBEDDINGS (tests set the hash embedder)")
    efs = tuple(int(x) for x in args.efs.split(","))
    asyncio.run(main(args.n, args.queries, args.rounds, efs, args.reuse))
