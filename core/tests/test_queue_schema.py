"""The procrastinate queue's tables are made once when servers and workers open the queue
together on a fresh database (``nyla serve`` and ``nyla worker`` started at once)."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from sqlalchemy import text

from nyla.testing import open_database, plugin_kernel

pytestmark = pytest.mark.db


async def test_four_processes_opening_the_queue_together_make_its_tables_once(embedded_pg):
    schema = f"q_{uuid.uuid4().hex[:10]}"
    first = open_database(embedded_pg, schema)
    await first.ensure_ready()
    kernels = [
        plugin_kernel(db=open_database(embedded_pg, schema), settings={"jobs": "procrastinate"})
        for _ in range(4)
    ]
    try:
        await asyncio.gather(*(k.jobs._open() for k in kernels))
        async with first.session() as s:
            found = await s.scalar(text("SELECT to_regclass('procrastinate_jobs') IS NOT NULL"))
        assert found is True
    finally:
        for kernel in kernels:
            await kernel.aclose()
        await first.drop_schema()
        await first.dispose()
