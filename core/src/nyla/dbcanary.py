"""The database self-check: the pgvector paths nyla uses, run once after a server starts.

A pgvector built for CPU features the machine lacks does not fail at ``CREATE EXTENSION``;
its backends die with SIGILL on the first distance, cast or index cost estimate. The canary
runs each of those paths in order so such a binary fails here, in one clear line, instead of
as a crashed backend in the middle of a user's command.
"""

from __future__ import annotations

import platform
from collections.abc import Callable
from pathlib import Path
from typing import Any

from nyla.errors import DatabaseUnavailableError

URL_HINT = "set NYLA_DATABASE_URL to any PostgreSQL with pgvector"


def _literal(dims: int, shift: int) -> str:
    return "[" + ",".join(f"{((i * 7 + shift) % 11) / 10:.1f}" for i in range(dims)) + "]"


def _distances(cur: Any) -> None:
    for dims in (16, 64, 384):
        a, b = _literal(dims, 1), _literal(dims, 4)
        cur.execute(
            f"SELECT '{a}'::vector <=> '{b}'::vector, '{a}'::vector <-> '{b}'::vector, "
            f"'{a}'::vector <#> '{b}'::vector, l1_distance('{a}'::vector, '{b}'::vector), "
            f"'{a}'::halfvec <=> '{b}'::halfvec, '{a}'::halfvec <-> '{b}'::halfvec"
        )
        cur.fetchone()


def _casts(cur: Any) -> None:
    cur.execute(
        "SELECT ARRAY[1,2,3]::real[]::vector, l2_normalize('[3,4]'::vector), "
        "'[1,2,3]'::vector::halfvec(3)::vector, vector_dims('[1,2]'::vector)"
    )
    cur.fetchone()


def _index(cur: Any) -> None:
    cur.execute("CREATE TEMP TABLE nyla_canary (id int, tag int, e vector(16))")
    cur.execute(
        "INSERT INTO nyla_canary SELECT g, g % 10, "
        "(SELECT array_agg(sin(g * 0.37 + d)::real) FROM generate_series(1, 16) d)::vector "
        "FROM generate_series(1, 300) g"
    )
    cur.execute(
        "CREATE INDEX ON nyla_canary USING hnsw ((e::halfvec(16)) halfvec_cosine_ops) "
        "WITH (m = 8, ef_construction = 32)"
    )
    cur.execute("SET LOCAL enable_seqscan = off")
    probe = _literal(16, 2)
    cur.execute(
        f"SELECT id FROM nyla_canary ORDER BY e::halfvec(16) <=> '{probe}'::halfvec(16) LIMIT 5"
    )
    if len(cur.fetchall()) != 5:
        raise DatabaseUnavailableError("the HNSW index scan returned fewer rows than it holds")


def _explain(cur: Any) -> None:
    probe = _literal(16, 3)
    cur.execute(
        "EXPLAIN SELECT id FROM nyla_canary WHERE tag = 3 "
        f"ORDER BY e::halfvec(16) <=> '{probe}'::halfvec(16) LIMIT 5"
    )
    cur.fetchall()


# (what the step exercises, the step): run in this order in one transaction.
CANARY_STEPS: list[tuple[str, Callable[[Any], None]]] = [
    ("vector and halfvec distances", _distances),
    ("vector casts and functions", _casts),
    ("an HNSW index build and index scan", _index),
    ("EXPLAIN of a filtered vector search", _explain),
]


def cpu_hint() -> str:
    """The platform and the SIMD features that decide which binaries run here."""
    flags: set[str] = set()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text(errors="replace").splitlines():
            if line.startswith(("flags", "Features")):
                flags = set(line.split(":", 1)[1].split())
                break
    known = [f for f in ("avx2", "fma", "f16c", "avx512f", "asimd", "sve") if f in flags]
    missing = [f for f in ("avx512f",) if flags and f not in flags]
    text = f"{platform.system()} {platform.machine()}"
    if known:
        text += f" with {'/'.join(known)}"
    if missing and platform.machine().lower() in ("x86_64", "amd64"):
        text += f", without {'/'.join(missing)}"
    return text


def run_canary(uri: str, steps: list[tuple[str, Callable[[Any], None]]] | None = None) -> None:
    """Run the self-check against ``uri`` (libpq form); raise one clear
    :class:`DatabaseUnavailableError` on the first failing step."""
    import psycopg

    try:
        conn = psycopg.connect(uri, connect_timeout=10, options="-c statement_timeout=30000")
    except psycopg.Error as exc:
        raise DatabaseUnavailableError(
            f"the database self-check could not connect ({_first_line(exc)}): {URL_HINT}"
        ) from exc
    # One transaction, never committed: everything the canary makes is temporary.
    try:
        with conn.cursor() as cur:
            cur.execute("CREATE EXTENSION IF NOT EXISTS vector SCHEMA public")
            conn.commit()
            for label, step in steps if steps is not None else CANARY_STEPS:
                _run_step(conn, cur, label, step)
    except psycopg.Error as exc:
        message = _first_line(exc)
        if "vector" in message and ("extension" in message or "control file" in message):
            raise DatabaseUnavailableError(
                f"pgvector is not available in the embedded PostgreSQL ({message}): {URL_HINT}"
            ) from exc
        raise DatabaseUnavailableError(
            f"the database self-check failed ({message}): {URL_HINT}"
        ) from exc
    finally:
        conn.close()


def _run_step(conn: Any, cur: Any, label: str, step: Callable[[Any], None]) -> None:
    import psycopg

    try:
        step(cur)
    except psycopg.OperationalError as exc:
        if conn.broken or conn.closed:
            raise DatabaseUnavailableError(
                f"a PostgreSQL backend crashed during the self-check ({label}): pgvector's "
                f"binary does not run on this machine ({cpu_hint()}); {URL_HINT}"
            ) from exc
        raise


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
