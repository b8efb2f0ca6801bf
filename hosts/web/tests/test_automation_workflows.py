"""``/api/automation2/workflows``: the caller's stored workflow graphs (camelCase), saved
whole with each node and connection checked (422 naming the node, nothing stored), 404 for
another user's workflow."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.db

BASE = "/api/automation2/workflows"


async def test_create_put_get_and_list(client, token_for):
    alice = await token_for("alice")
    assert (await client.get(BASE)).status_code == 401
    created = await client.post(BASE, json={"name": "Digest"}, headers=alice)
    assert created.status_code == 201, created.text
    wf_id = created.json()["id"]
    graph = {
        "name": "Digest v2",
        "nodes": [
            {"id": "a", "method": "context", "action": "neutralizeData",
             "parameters": {"text": "Ana called"}, "position": {"x": 10, "y": 20}},
            {"id": "b", "method": "ai", "action": "process", "parameters": {}},
        ],
        "connections": [{"fromNode": "a", "toNode": "b", "toParameter": "prompt"}],
    }  # fmt: skip
    saved = await client.put(f"{BASE}/{wf_id}", json=graph, headers=alice)
    assert saved.status_code == 200, saved.text
    assert saved.json()["problems"] == [] and saved.json()["userId"] == "alice"
    got = (await client.get(f"{BASE}/{wf_id}", headers=alice)).json()
    assert got["name"] == "Digest v2" and got["connections"] == graph["connections"]
    assert got["nodes"][0]["position"] == {"x": 10.0, "y": 20.0}
    listed = (await client.get(BASE, headers=alice)).json()["workflows"]
    assert [w["id"] for w in listed] == [wf_id]


async def test_problems_are_reported_and_bad_saves_refused(client, token_for):
    alice = await token_for("alice")
    wf_id = (await client.post(BASE, json={"name": "W"}, headers=alice)).json()["id"]
    incomplete = {"name": "W", "nodes": [{"id": "b", "method": "ai", "action": "process"}]}
    saved = await client.put(f"{BASE}/{wf_id}", json=incomplete, headers=alice)
    assert saved.status_code == 200
    assert [(p["node"], p["code"]) for p in saved.json()["problems"]] == [
        ("b", "MISSING_PARAMETER")
    ]
    mismatch = {
        "name": "W",
        "nodes": [
            {"id": "a", "method": "ai", "action": "process", "parameters": {"prompt": "x"}},
            {"id": "b", "method": "ai", "action": "summarizeDocument"},
        ],
        "connections": [{"fromNode": "a", "toNode": "b", "toParameter": "maxWords"}],
    }
    refused = await client.put(f"{BASE}/{wf_id}", json=mismatch, headers=alice)
    assert refused.status_code == 422 and "node 'b'" in refused.json()["detail"]
    bad_param = {"name": "W", "nodes": [{"id": "a", "method": "ai", "action": "process",
                                         "parameters": {"prompt": "x", "temperature": 2}}]}  # fmt: skip
    refused = await client.put(f"{BASE}/{wf_id}", json=bad_param, headers=alice)
    assert refused.status_code == 422 and "temperature" in refused.json()["detail"]
    kept = (await client.get(f"{BASE}/{wf_id}", headers=alice)).json()
    assert [n["id"] for n in kept["nodes"]] == ["b"]  # nothing of the refused saves stored


async def test_another_users_workflow_is_404(client, token_for):
    alice, bob = await token_for("alice"), await token_for("bob")
    wf_id = (await client.post(BASE, json={"name": "Private"}, headers=alice)).json()["id"]
    assert (await client.get(f"{BASE}/{wf_id}", headers=bob)).status_code == 404
    put = await client.put(f"{BASE}/{wf_id}", json={"name": "Mine now"}, headers=bob)
    assert put.status_code == 404 and "not found" in put.json()["detail"]
    assert (await client.get(BASE, headers=bob)).json()["workflows"] == []
    assert (await client.get(f"{BASE}/{wf_id}", headers=alice)).json()["name"] == "Private"
