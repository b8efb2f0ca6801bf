"""A sync whose process was killed shows as ``stale`` once its heartbeat is late, in every
status reader, without another job having to start (issue 27, fault 9)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from localfs_helpers import local_source, make_kernel, make_tree
from sqlalchemy import update

from nyla.testing import invoke_cli
from nyla.testing.tables import STALE_AFTER_S, Job, JobStore, SyncState, shown_status


async def _killed_sync(db, tmp_path: Path) -> str:
    """A sync in a child process, SIGKILLed after two pages; its data source id."""
    kernel = make_kernel(db)
    make_tree(tmp_path, 400)
    ds = await local_source(kernel, tmp_path)
    child = Path(__file__).with_name("sync_child.py")
    proc = subprocess.Popen(
        [sys.executable, str(child), db.url, db.schema, ds], env=os.environ.copy()
    )
    try:
        for _ in range(1200):
            async with db.session() as s:
                state = await s.get(SyncState, ds)
            if state is not None and state.pages >= 2:
                break
            await asyncio.sleep(0.1)
        else:
            raise AssertionError("the child never committed two pages")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    return ds


async def _statuses(kernel, db, ds: str) -> tuple[str, str, str]:
    [row] = [r for r in await kernel.sync.status(user_id="u1") if r["dataSourceId"] == ds]
    [job] = await JobStore(db).running(user_id="u1")
    [shown] = (await kernel.knowledge.inventory("user", "u1")).jobs
    return row["running"]["status"], shown_status(job), shown.status


async def test_a_killed_sync_shows_stale_once_its_heartbeat_is_late(
    db, tmp_path: Path, monkeypatch
) -> None:
    ds = await _killed_sync(db, tmp_path)
    kernel = make_kernel(db)
    assert await _statuses(kernel, db, ds) == ("running",) * 3, "a fresh heartbeat is live"
    late = datetime.now(UTC) - timedelta(seconds=STALE_AFTER_S + 60)
    async with db.session() as s:  # what the clock does when no beat comes
        await s.execute(update(Job).values(heartbeat_at=late, updated_at=late))
    assert await _statuses(kernel, db, ds) == ("stale",) * 3
    monkeypatch.setenv("NYLA_DATABASE_URL", db.url)
    monkeypatch.setenv("NYLA_DATABASE_SCHEMA", db.schema)
    cli = await asyncio.to_thread(invoke_cli, ["sync", "status", "--user", "u1", "--json"])
    assert cli.exit_code == 0, cli.output
    [row] = [r for r in json.loads(cli.stdout) if r["dataSourceId"] == ds]
    assert row["running"]["status"] == "stale", row
    table = await asyncio.to_thread(invoke_cli, ["sync", "status", "--user", "u1"])
    assert "stale" in table.stdout, table.stdout
