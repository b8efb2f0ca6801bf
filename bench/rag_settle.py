"""The settle step of bench/rag.py, the same for every contender: ``VACUUM (ANALYZE)`` of
the contender's own database right after its timed ingest, before its first query.

A freshly loaded table crosses autovacuum's and autoanalyze's thresholds at once, and the
launcher picked it up within seconds to a minute of each ingest, i.e. inside whichever timed
search pass it landed on. Vacuuming and analyzing up front (outside the timed ingest: it is
upkeep the server would do anyway, not work a contender needs to be searchable) resets those
counters, so no autovacuum of the contender's tables runs while its queries are timed. Each
contender has a fresh database of its own, so a database-wide VACUUM covers exactly its
tables (and the catalog rows its DDL wrote).

Imported by bench/rag.py (main venv, psycopg) and bench/rag_contenders.py (the libraries'
venvs: psycopg for langchain-postgres, psycopg2 for llama-index).
"""

from __future__ import annotations

import time

STATEMENT = "VACUUM (ANALYZE)"


def settle(uri: str) -> float:
    """``VACUUM (ANALYZE)`` of the database at libpq ``uri``; the seconds it took."""
    try:
        import psycopg as driver
    except ImportError:  # llama-index's venv has psycopg2 only
        import psycopg2 as driver  # type: ignore[no-redef]

    conn = driver.connect(uri)
    try:
        conn.autocommit = True  # VACUUM cannot run inside a transaction block
        started = time.perf_counter()
        cur = conn.cursor()
        cur.execute(STATEMENT)
        cur.close()
        return time.perf_counter() - started
    finally:
        conn.close()
