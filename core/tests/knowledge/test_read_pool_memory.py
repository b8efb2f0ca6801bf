"""A read connection's backend keeps the memory a statement freed (``nyla.read_pool``
``KEEP_FREED_MEMORY``): a statement allocating a large block again takes no page faults,
where the server's allocator would otherwise have returned the block to the system (an
HNSW scan at a large ef_search allocates such blocks every search)."""

from __future__ import annotations

from pathlib import Path

import pytest

#: a sort of 20,000 rows in memory (a few MiB in blocks of up to 1 MiB)
SORT = "SELECT count(*) FROM (SELECT g, md5(g::text) FROM generate_series(1, 20000) g ORDER BY 2) s"


async def test_a_read_connection_allocates_a_large_block_again_without_page_faults(kernel):
    async def faults(conn) -> int:
        pid = (await conn.rows("SELECT pg_backend_pid()"))[0][0]
        stat = Path(f"/proc/{pid}/stat")
        if not stat.exists():
            pytest.skip("the database server runs on another machine")

        def minor_faults() -> int:
            return int(stat.read_text().rsplit(")", 1)[1].split()[7])

        await conn.rows(SORT)
        before = minor_faults()
        for _ in range(3):
            await conn.rows(SORT)
        return minor_faults() - before

    # returned to the system and faulted in again each time: ~1,600 faults (measured)
    assert await kernel.db.read_driver(faults) < 200
