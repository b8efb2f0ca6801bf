"""Stored checkpoints of the local and the WebDAV listing: the shape today's nyla writes
resumes where the listing stopped; a checkpoint of the wrong shape (or another scope's)
starts the listing from the beginning instead of failing the sync."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from localfs_helpers import make_kernel
from localfs_webdav_wire import WebDavWire

import nyla_connector_localfs.plugin as plugin_module
from nyla.testing.fake_vendor import FakeCorpus, FakeVendor
from nyla_connector_localfs import local


async def local_sync(db: Any, root: Path, checkpoint: Any) -> list[Any]:
    kernel = make_kernel(db)
    conn = await kernel.connections.add("localfs", user_id="u1", settings={"root": str(root)})
    async with kernel.connections.open(conn.id, user_id="u1") as s:
        return [p async for p in s.adapter.sync(s, "", checkpoint)]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    for name in ("a.txt", "b.txt", "c.txt"):
        (tmp_path / name).write_text(f"note {name}")
    return tmp_path


async def test_todays_local_checkpoint_resumes(db, tree, monkeypatch):
    monkeypatch.setattr(local, "PAGE_SIZE", 1)
    pages = await local_sync(db, tree, {"after": "a.txt"})  # as nyla stored it before
    assert [i.title for p in pages for i in p.items] == ["b.txt", "c.txt"]
    assert pages[0].checkpoint["after"] == "b.txt" and pages[-1].checkpoint["after"] is None


@pytest.mark.parametrize(
    "stored",
    [{"after": 5}, {"after": local.BYTES_ID + "!!not base64"}, {"after": "b.txt", "scope": "x"}],
)
async def test_a_local_checkpoint_of_the_wrong_shape_starts_over(db, tree, stored):
    pages = await local_sync(db, tree, stored)
    assert [i.title for p in pages for i in p.items] == ["a.txt", "b.txt", "c.txt"]
    assert all(p.full_listing for p in pages)


async def webdav_sync(vendor_kernel: Any, checkpoint: Any) -> tuple[list[Any], FakeCorpus]:
    wire = WebDavWire()
    corpus = FakeCorpus(page_size=3)
    for i in range(5):
        corpus.add(f"report-{i}.txt", f"Quarterly report {i}.", "/docs")
    vendor = FakeVendor(wire, corpus, None, "Basic")
    service = vendor_kernel(vendor, plugin_module).connections
    conn = await service.add(
        "webdav",
        user_id="u1",
        account="ada",
        grant=wire.grant(),
        settings=wire.settings(),
        connection_id=f"dav-{uuid.uuid4().hex[:8]}",
    )
    async with service.open(conn.id, user_id="u1") as s:
        return [p async for p in s.adapter.sync(s, "/docs", checkpoint)], corpus


async def test_todays_webdav_checkpoint_resumes(vendor_kernel):
    pages, _ = await webdav_sync(vendor_kernel, {"queue": ["docs"], "offset": 3})
    assert [i.title for p in pages for i in p.items] == ["report-3.txt", "report-4.txt"]


@pytest.mark.parametrize(
    "stored",
    [{"queue": "docs", "offset": 3}, {"queue": ["docs"], "offset": -3}, {"offset": "three"}],
)
async def test_a_webdav_checkpoint_of_the_wrong_shape_starts_over(vendor_kernel, stored):
    pages, corpus = await webdav_sync(vendor_kernel, stored)
    assert {i.title for p in pages for i in p.items} == {d.name for d in corpus.live()}
