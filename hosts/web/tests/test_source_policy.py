"""Scope and neutralization of a tree element, editable and revertible as 🧠 is: a change
purges what was indexed under the old value and re-indexes it under the new one; clearing
it inherits again; only the owner may change it."""

from __future__ import annotations

import asyncio
import contextlib

import pytest
from sqlalchemy import text

from nyla.host import JobStore

pytestmark = pytest.mark.db


async def _indexed_source(state, client, headers) -> tuple[str, str]:
    conn = await client.post(
        "/api/connections", json={"service": "memfs", "label": "Mem"}, headers=headers
    )
    assert conn.status_code == 201, conn.text
    ds = await client.post(
        "/api/datasources",
        json={"connectionId": conn.json()["id"], "path": "/docs", "label": "Docs"},
        headers=headers,
    )
    assert ds.status_code == 201, ds.text
    on = await client.patch(
        f"/api/datasources/{ds.json()['id']}/rag-index", json={"enabled": True}, headers=headers
    )
    assert on.status_code == 200, on.text
    await _settle(state)
    return conn.json()["id"], ds.json()["id"]


async def _settle(state) -> None:
    for job in await JobStore(state.kernel.db).running():
        with contextlib.suppress(KeyError):
            await asyncio.wait_for(state.kernel.jobs.wait(job.id), 30)


async def _files(state) -> list[tuple[str, bool]]:
    async with state.kernel.db.session() as s:
        rows = await s.execute(
            text("SELECT scope, is_neutralized FROM knowledge_file_index ORDER BY source_path")
        )
        return [(scope, bool(neutral)) for scope, neutral in rows.all()]


async def _hits(client, headers, query="travel policy train") -> list[str]:
    found = await client.get("/api/knowledge/search", params={"q": query}, headers=headers)
    assert found.status_code == 200, found.text
    return [hit["fileName"] for hit in found.json()["hits"]]


async def test_sharing_with_the_mandate_and_reverting_moves_the_index(state, client, token_for):
    alice, bob = await token_for("alice"), await token_for("bob")
    conn_id, ds_id = await _indexed_source(state, client, alice)
    assert await _files(state) == [("personal", False), ("personal", False)]
    assert await _hits(client, bob) == []

    shared = await client.patch(
        f"/api/datasources/{ds_id}/policy", json={"scope": "mandate"}, headers=alice
    )
    assert shared.status_code == 200, shared.text
    body = shared.json()
    assert body["purge"]["files"] == 2 and body["jobId"]
    assert body["dataSource"]["scope"] == "mandate"
    assert body["dataSource"]["scopeEffective"] == "mandate"
    await _settle(state)
    assert await _files(state) == [("mandate", False), ("mandate", False)]
    assert "handbook.txt" in await _hits(client, bob)

    reverted = await client.patch(
        f"/api/datasources/{ds_id}/policy", json={"scope": None}, headers=alice
    )
    assert reverted.json()["dataSource"]["scope"] is None
    assert reverted.json()["dataSource"]["scopeEffective"] == "personal"
    await _settle(state)
    assert await _files(state) == [("personal", False), ("personal", False)]
    assert await _hits(client, bob) == []
    tree = (await client.get(f"/api/connections/{conn_id}/tree", headers=alice)).json()
    assert tree["dataSources"][0]["scopeEffective"] == "personal"


async def test_neutralize_on_reindexes_and_an_unchanged_value_purges_nothing(
    state, client, token_for
):
    alice = await token_for("alice")
    _, ds_id = await _indexed_source(state, client, alice)
    on = await client.patch(
        f"/api/datasources/{ds_id}/policy", json={"neutralize": True}, headers=alice
    )
    assert on.json()["purge"]["files"] == 2 and on.json()["jobId"]
    assert on.json()["dataSource"]["neutralizeEffective"] is True
    await _settle(state)
    assert await _files(state) == [("personal", True), ("personal", True)]
    again = await client.patch(
        f"/api/datasources/{ds_id}/policy", json={"neutralize": True}, headers=alice
    )
    assert again.json()["purge"]["files"] == 0 and again.json()["jobId"] is None


async def test_only_the_owner_changes_it_and_bad_values_are_refused(state, client, token_for):
    alice, bob = await token_for("alice"), await token_for("bob")
    _, ds_id = await _indexed_source(state, client, alice)
    url = f"/api/datasources/{ds_id}/policy"
    assert (await client.patch(url, json={"scope": "mandate"}, headers=bob)).status_code == 404
    assert (await client.patch(url, json={}, headers=alice)).status_code == 400
    assert (await client.patch(url, json={"scope": "global"}, headers=alice)).status_code == 422
    loner = await token_for("carol", mandate=None)
    _, own = await _indexed_source(state, client, loner)
    refused = await client.patch(
        f"/api/datasources/{own}/policy", json={"scope": "mandate"}, headers=loner
    )
    assert refused.status_code == 403 and "mandate" in refused.json()["detail"]
    assert await _files(state) == [("personal", False)] * 4  # nothing was purged
