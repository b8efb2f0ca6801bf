"""The local-folder connector and the whole sync path on the embedded PostgreSQL: search,
browse, download, upload inside the folder only; sync, resume after SIGKILL, recovery."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from localfs_helpers import local_source, make_kernel, make_tree
from sqlalchemy import func, select, update

from nyla.sdk import RunContext, SearchQuery
from nyla.sdk.connectors import UnsafePathError
from nyla.testing.tables import (
    ContentChunk,
    FileContentIndex,
    Job,
    JobStore,
    SyncState,
    this_worker,
)


async def test_search_browse_download_upload_stay_inside_the_folder(db, tmp_path: Path) -> None:
    kernel = make_kernel(db)
    make_tree(tmp_path, 6, per_folder=3)
    (tmp_path / "secret.txt").write_text("outside")
    root = tmp_path / "folder-000"
    conn = await kernel.connections.add("localfs", user_id="u1", settings={"root": str(root)})
    async with kernel.connections.open(conn.id, user_id="u1") as s:
        page = await s.adapter.search(s, "subject1 weekly")
        assert [i.title for i in page.items] == ["note-00001.txt"]
        listing = await s.adapter.browse(s, "")
        assert [i.id for i in listing.items] == [
            "note-00000.txt",
            "note-00001.txt",
            "note-00002.txt",
        ]
        got = await s.adapter.download(s, "note-00002.txt")
        assert got.content.startswith(b"Note 2 about")
        with pytest.raises(UnsafePathError):
            await s.adapter.download(s, "../secret.txt")
        made = await s.adapter.upload(s, "drafts", "a.txt", b"hello", "text/plain")
        assert (root / "drafts" / "a.txt").read_bytes() == b"hello" and made.id == "drafts/a.txt"
    result = await kernel.connections.test(conn.id, user_id="u1")
    assert result.ok and "item" in result.message


async def test_sync_then_find_then_delete(db, tmp_path: Path) -> None:
    kernel = make_kernel(db)
    make_tree(tmp_path, 30, per_folder=10)
    ds = await local_source(kernel, tmp_path)
    _, first = await kernel.sync.run(ds, user_id="u1")
    assert first.items_indexed == 30 and first.sweep.startswith("complete")
    hits = await kernel.knowledge.search(
        SearchQuery(text="subject17", context=RunContext(user_id="u1"), k=1)
    )
    assert "subject17" in hits.hits[0].text
    (tmp_path / "folder-001" / "note-00017.txt").unlink()
    _, second = await kernel.sync.run(ds, user_id="u1")
    assert second.items_unchanged == 29 and second.items_deleted == 1
    shutil_tree = tmp_path / "folder-002"
    for f in shutil_tree.iterdir():  # a third of the tree vanishes: still under the threshold
        f.unlink()
    _, third = await kernel.sync.run(ds, user_id="u1")
    assert third.items_deleted == 10, third.sweep


async def _count(db, model, **where) -> int:
    async with db.session() as s:
        query = select(func.count()).select_from(model)
        for key, value in where.items():
            query = query.where(getattr(model, key) == value)
        return int((await s.execute(query)).scalar())


async def test_a_killed_sync_is_recovered_and_resumes_at_its_page(db, tmp_path: Path) -> None:
    kernel = make_kernel(db)
    make_tree(tmp_path, 600)
    ds = await local_source(kernel, tmp_path)
    alive = await JobStore(db).start("sync", user_id="u1", worker=this_worker())
    async with db.session() as s:  # slow: no progress for an hour, but it beats
        await s.execute(
            update(Job)
            .where(Job.id == alive)
            .values(updated_at=datetime.now(UTC) - timedelta(hours=1))
        )
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
    async with db.session() as s:
        state = await s.get(SyncState, ds)
        killed = (await s.execute(select(Job).where(Job.data_source_id == ds))).scalar_one()
    checkpoint, pages_done = state.checkpoint, state.pages
    assert killed.status == "running" and checkpoint and checkpoint.get("after")
    assert await kernel.jobs.store.kill_zombies(1800) == 0, "a beating job is not a zombie"
    assert await kernel.jobs.start() == 1  # boot recovery: only the dead worker's job
    await kernel.jobs.aclose()
    async with db.session() as s:
        assert (await s.get(Job, killed.id)).status == "error"
        assert (await s.get(Job, alive)).status == "running"
    indexed_before = await _count(db, FileContentIndex, status="indexed")
    _, resumed = await kernel.sync.run(ds, user_id="u1")
    assert resumed.items_seen <= 600 - pages_done * 100 + 100, "the resume started over"
    assert await _count(db, FileContentIndex, status="indexed") == 600
    assert indexed_before + resumed.items_indexed == 600, "an item was indexed twice or lost"
    async with db.session() as s:
        chunks = (await s.execute(select(func.sum(FileContentIndex.chunk_count)))).scalar()
    assert await _count(db, ContentChunk) == chunks, "duplicate or lost chunks"


async def test_a_name_that_is_not_utf8_syncs_downloads_and_resumes(
    db, tmp_path: Path, monkeypatch
) -> None:
    """POSIX names may hold any bytes (a zip from Windows, an old Samba share): such a file
    is indexed under a readable title and fetched again by its id, and a page that ends on
    it leaves a checkpoint that can be stored."""
    from nyla_connector_localfs import local

    monkeypatch.setattr(local, "PAGE_SIZE", 1)  # the first page ends on that file
    kernel = make_kernel(db)
    raw = os.fsencode(tmp_path) + b"/Rechnung M\xfcller.txt"  # Latin-1, not UTF-8
    with open(raw, "wb") as f:
        f.write(b"invoice about zeppelins")
    (tmp_path / "plain.txt").write_text("a plain note about budgets")
    ds = await local_source(kernel, tmp_path)
    _, first = await kernel.sync.run(ds, user_id="u1")
    assert first.items_indexed == 2 and first.pages == 3 and not first.errors, first
    hits = await kernel.knowledge.search(
        SearchQuery(text="zeppelins", context=RunContext(user_id="u1"), k=1)
    )
    assert hits.hits[0].file_name == "Rechnung M\ufffdller.txt"
    conn = (await kernel.connections.list(user_id="u1"))[0]
    async with kernel.connections.open(conn.id, user_id="u1") as s:
        listing = await s.adapter.browse(s, "")
        bad = next(i for i in listing.items if "\ufffd" in i.title)
        assert bad.id.startswith(local.BYTES_ID) and bad.id.isascii()
        assert (await s.adapter.download(s, bad.id)).content == b"invoice about zeppelins"
        with pytest.raises(UnsafePathError):
            await s.adapter.download(
                s, local.BYTES_ID + "Li4vLi4vZXRjL3Bhc3N3ZA=="
            )  # ../../etc/passwd
        first_page = await anext(aiter(s.adapter.sync(s, "", None)))
        assert [i.id for i in first_page.items] == [bad.id]
        assert first_page.checkpoint["after"] == bad.id
        rest = [p async for p in s.adapter.sync(s, "", first_page.checkpoint)]
        assert [i.title for p in rest for i in p.items] == ["plain.txt"]
    _, again = await kernel.sync.run(ds, user_id="u1")
    assert again.items_unchanged == 2 and not again.errors
