"""Index all of it and keep it fresh (issue 29), through the API: switching 🧠 on indexes a
whole local folder (a first slice, then the rest), a changed limit takes effect on the next
"sync now", the schedule re-syncs what is due (and only that), stop cancels, and the cost
estimate is priced by the free local embedding model and sized by the folder."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from nyla.host import JobStore
from nyla.testing.tables import Job

pytestmark = pytest.mark.db

LOCAL_MODEL = "local:hash-384"


@pytest.fixture
def kernel(db, make_kernel, provider, memory_plugin, tmp_path):
    """The host's kernel with the real local-folder connector and the free local embedder."""
    localfs = pytest.importorskip("nyla_connector_localfs.plugin")
    local_provider = pytest.importorskip("nyla_provider_local")
    return make_kernel(
        provider,
        memory_plugin,
        localfs,
        local_provider,
        db=db,
        settings={"knowledge": {"embedding_model": LOCAL_MODEL}, "data_dir": tmp_path},
    )


def _folder(root: Path, count: int, start: int = 0) -> Path:
    for i in range(start, start + count):
        sub = root / f"part-{i // 40}"
        sub.mkdir(parents=True, exist_ok=True)
        (sub / f"note-{i:03d}.txt").write_text(f"Note {i} on topic{i}.\n")
    return root


async def _local_source(client, admin, root: Path) -> tuple[str, str]:
    """A localfs connection on ``root`` (a sysadmin's: the folder is a server setting) and
    its data source at ``/``."""
    conn = await client.post(
        "/api/connections",
        json={"service": "localfs", "label": root.name, "settings": {"root": str(root)}},
        headers=admin,
    )
    assert conn.status_code == 201, conn.text
    body = {"connectionId": conn.json()["id"], "path": "/", "label": root.name}
    ds = await client.post("/api/datasources", json=body, headers=admin)
    assert ds.status_code == 201, ds.text
    return conn.json()["id"], ds.json()["id"]


async def _settled(client, headers, ds_id: str, seconds: float = 90) -> dict:
    """The data source once no sync of it is queued or running (polled)."""
    deadline = time.monotonic() + seconds
    while True:
        source = await client.get(f"/api/datasources/{ds_id}", headers=headers)
        assert source.status_code == 200, source.text
        if source.json()["sync"]["running"] is None:
            return source.json()
        assert time.monotonic() < deadline, source.json()["sync"]
        await asyncio.sleep(0.05)


async def _switch_on(client, headers, ds_id: str) -> str:
    on = await client.patch(
        f"/api/datasources/{ds_id}/rag-index", json={"enabled": True}, headers=headers
    )
    assert on.status_code == 200 and on.json()["jobId"], on.text
    return on.json()["jobId"]


@pytest.fixture
async def admin(token_for):
    return await token_for("root-user", role="sysadmin", mandate=None)


async def test_switching_on_indexes_the_whole_folder_not_only_a_first_slice(
    state, client, admin, tmp_path
):
    _, ds_id = await _local_source(client, admin, _folder(tmp_path / "hundred-twenty", 120))
    job_id = await _switch_on(client, admin, ds_id)
    done = await _settled(client, admin, ds_id)
    sync = done["sync"]
    assert sync["indexedItems"] == 120, sync
    assert sync["lastResult"]["stoppedAtLimit"] is False, sync["lastResult"]
    assert sync["lastResult"]["itemsUnchanged"] == 50  # the first slice's, not fetched again
    job = await JobStore(state.kernel.db).get(job_id)
    assert job.status == "done", job.error
    assert job.details["firstSlice"]["itemsIndexed"] == 50
    assert job.details["result"]["itemsIndexed"] == 70
    last = datetime.fromisoformat(sync["lastSyncAt"])
    assert datetime.fromisoformat(sync["nextSyncAt"]) - last == timedelta(seconds=3600)
    found = await client.get("/api/knowledge/search", params={"q": "topic117"}, headers=admin)
    assert found.status_code == 200 and found.json()["hits"], found.text
    assert found.json()["hits"][0]["fileName"] == "note-117.txt"


async def test_a_changed_limit_takes_effect_on_the_next_sync_now(client, admin, tmp_path):
    _, ds_id = await _local_source(client, admin, _folder(tmp_path / "limited", 120))
    limited = await client.patch(
        f"/api/datasources/{ds_id}/settings", json={"ragLimits": {"maxItems": 30}}, headers=admin
    )
    assert limited.status_code == 200, limited.text
    await _switch_on(client, admin, ds_id)
    first = (await _settled(client, admin, ds_id))["sync"]
    assert first["indexedItems"] == 30 and first["lastResult"]["stoppedAtLimit"] is True
    raised = await client.patch(
        f"/api/datasources/{ds_id}/settings", json={"ragLimits": {"maxItems": 45}}, headers=admin
    )
    assert raised.status_code == 200, raised.text
    now = await client.post(f"/api/datasources/{ds_id}/sync", headers=admin)
    assert now.status_code == 202 and now.json()["jobId"], now.text
    second = (await _settled(client, admin, ds_id))["sync"]
    assert second["indexedItems"] == 45, second
    assert second["lastResult"]["itemsIndexed"] == 15
    assert second["lastResult"]["itemsUnchanged"] == 30


async def test_the_schedule_resyncs_due_sources_only(state, client, admin, tmp_path):
    scheduler = state.kernel.sync.scheduler
    _, fresh = await _local_source(client, admin, _folder(tmp_path / "fresh", 5))
    _, busy = await _local_source(client, admin, _folder(tmp_path / "busy", 5))
    withdrawn_conn, withdrawn = await _local_source(client, admin, _folder(tmp_path / "gone", 5))
    for ds_id in (fresh, busy, withdrawn):
        await _switch_on(client, admin, ds_id)
        assert (await _settled(client, admin, ds_id))["sync"]["indexedItems"] == 5
    assert await scheduler.tick() == {}, "nothing is due right after a sync"
    consent = await client.patch(
        f"/api/connections/{withdrawn_conn}/knowledge-consent",
        json={"enabled": False},
        headers=admin,
    )
    assert consent.status_code == 200, consent.text
    listed = (await client.get("/api/datasources", headers=admin)).json()["connections"]
    effective = {s["id"]: s["ragIndexEffective"] for c in listed for s in c["dataSources"]}
    assert effective == {fresh: True, busy: True, withdrawn: False}
    tree = (await client.get(f"/api/connections/{withdrawn_conn}/tree", headers=admin)).json()
    assert [s["ragIndexEffective"] for s in tree["dataSources"]] == [False]
    gone = (await client.get(f"/api/datasources/{withdrawn}", headers=admin)).json()["sync"]
    assert gone["nextSyncAt"] is None and gone["indexedItems"] == 0
    # another process's sync of `busy` is running (its job row, beating)
    store = JobStore(state.kernel.db)
    other = await store.start(
        "sync", user_id="root-user", data_source_id=busy, worker="elsewhere:1"
    )
    _folder(tmp_path / "fresh", 1, start=5)  # a file added on disk
    later = datetime.now(UTC) + timedelta(seconds=3601)
    started = await scheduler.tick(now=later)
    assert set(started) == {fresh}, started
    resynced = (await _settled(client, admin, fresh))["sync"]
    assert resynced["indexedItems"] == 6 and resynced["lastResult"]["itemsIndexed"] == 1
    busy_now = (await client.get(f"/api/datasources/{busy}", headers=admin)).json()["sync"]
    assert busy_now["running"]["jobId"] == other and busy_now["nextSyncAt"] is None
    await store.finish(other)


async def test_sync_now_joins_the_running_job_and_stop_cancels_it(
    state, client, token_for, memory_plugin
):
    alice = await token_for("alice")
    conn = await client.post(
        "/api/connections", json={"service": "memfs", "label": "Mem"}, headers=alice
    )
    body = {"connectionId": conn.json()["id"], "path": "/docs", "label": "Docs"}
    ds_id = (await client.post("/api/datasources", json=body, headers=alice)).json()["id"]
    off = await client.post(f"/api/datasources/{ds_id}/sync", headers=alice)
    assert off.status_code == 409 and "🧠" in off.json()["detail"]
    memory_plugin.connector.gate = asyncio.Event()  # the sync waits before its first page
    job_id = await _switch_on(client, alice, ds_id)
    again = await client.post(f"/api/datasources/{ds_id}/sync", headers=alice)
    assert again.status_code == 202 and again.json() == {"jobId": job_id}
    running = (await client.get(f"/api/datasources/{ds_id}", headers=alice)).json()["sync"]
    assert running["running"]["jobId"] == job_id and running["nextSyncAt"] is None
    bob = await token_for("bob")
    assert (await client.post(f"/api/datasources/{ds_id}/stop", headers=bob)).status_code == 404
    assert (await client.post(f"/api/datasources/{ds_id}/sync", headers=bob)).status_code == 404
    stop = await client.post(f"/api/datasources/{ds_id}/stop", headers=alice)
    assert stop.status_code == 200 and stop.json() == {"cancelledJobs": 1}
    memory_plugin.connector.gate.set()
    settled = (await _settled(client, alice, ds_id))["sync"]
    assert settled["indexedItems"] == 0 and settled["running"] is None
    async with state.kernel.db.session() as s:
        job = await s.get(Job, job_id)
    assert job.status == "cancelled"
    nothing = await client.post(f"/api/datasources/{ds_id}/stop", headers=alice)
    assert nothing.json() == {"cancelledJobs": 0}


async def test_the_estimate_of_a_small_folder_with_the_local_model_is_free_and_its_size(
    client, admin, tmp_path
):
    root = tmp_path / "small"
    root.mkdir()
    texts = {"a.txt": "Alpha meeting notes.\n", "b.txt": "Beta plan for March.\n" * 20}
    for name, text in texts.items():
        (root / name).write_text(text)
    size = sum(len(t.encode()) for t in texts.values())
    _, ds_id = await _local_source(client, admin, root)
    before = (await client.get(f"/api/datasources/{ds_id}/cost-estimate", headers=admin)).json()
    assert before["estimatedChf"] == 0.0
    assert before["basis"]["assumptions"]["model"] == LOCAL_MODEL
    assert before["basis"]["assumptions"]["sizedBy"] == "listed"  # not synced yet: listed
    assert before["basis"]["assumptions"]["sourceBytes"] == size
    assert 0 < before["estimatedTokens"] < size, before
    assert any("free" in note for note in before["basis"]["notes"]), before["basis"]["notes"]
    await _switch_on(client, admin, ds_id)
    await _settled(client, admin, ds_id)
    after = (await client.get(f"/api/datasources/{ds_id}/cost-estimate", headers=admin)).json()
    assumptions = after["basis"]["assumptions"]
    assert after["estimatedChf"] == 0.0
    assert assumptions["sizedBy"] == "indexed" and assumptions["sourceBytes"] == size
    assert assumptions["sourceItems"] == 2
    assert 0 < after["estimatedTokens"] < size, after
    assert any(f"{size} bytes" in note for note in after["basis"]["notes"]), after["basis"]


async def test_a_stale_job_does_not_hold_the_schedule_and_two_ticks_start_one_sync(
    state, client, token_for
):
    alice = await token_for("alice")
    conn = await client.post(
        "/api/connections", json={"service": "memfs", "label": "Mem"}, headers=alice
    )
    body = {"connectionId": conn.json()["id"], "path": "/docs", "label": "Docs"}
    ds_id = (await client.post("/api/datasources", json=body, headers=alice)).json()["id"]
    await _switch_on(client, alice, ds_id)
    assert (await _settled(client, alice, ds_id))["sync"]["indexedItems"] == 2
    store = JobStore(state.kernel.db)
    dead = await store.start("sync", user_id="alice", data_source_id=ds_id, worker="gone:1")
    async with state.kernel.db.session() as s:  # its process stopped beating an hour ago
        job = await s.get(Job, dead)
        job.heartbeat_at = datetime.now(UTC) - timedelta(hours=1)
    later = datetime.now(UTC) + timedelta(seconds=3601)
    scheduler = state.kernel.sync.scheduler
    first, second = await asyncio.gather(scheduler.tick(now=later), scheduler.tick(now=later))
    started = [*first.values(), *second.values()]
    assert len(started) == 1 and dead not in started, (first, second)
    settled = (await _settled(client, alice, ds_id))["sync"]
    assert settled["lastResult"]["itemsUnchanged"] == 2
    await store.finish(dead)
